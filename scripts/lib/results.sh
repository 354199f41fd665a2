# shellcheck shell=bash disable=SC2034  # COLLBENCH_* state is shared with results-json.sh
# The experiments and their results folders, shared by the Slurm scripts
# (through scripts/lib/slurm-job.sh) and scripts/run-local.sh: knobs and
# their defaults, the collbench command line of each experiment, the folder
# name results/<YYYY-MM-DD>-<cluster>-<N>n<G>g-<jobid>/, run.json, and the
# analysis of perf_model. Needs bash 4.4+; sets no shell options of its own.
#
# Knobs, each from the environment or a script argument (flag in brackets),
# defaults for --backend nccl / --backend mpi:
#   COLLBENCH_BACKEND        [--backend]      nccl
#   COLLBENCH_MIN_BYTES      [-b]             8 (chunked: 64K)
#   COLLBENCH_MAX_BYTES      [-e]             1G / 16M (chunked: the total; perf_model:
#                                             also at least the profile's gradients, see
#                                             results_perf_model_range)
#   COLLBENCH_STEP_FACTOR    [-f]             2 (chunked: 4)
#   COLLBENCH_TOTAL_BYTES    [--total-bytes]  1G / 64M (chunked only)
#   COLLBENCH_ITERS          [-n]             20
#   COLLBENCH_WARMUP_ITERS   [-w]             5
#   COLLBENCH_CHECK_ITERS    [-c]             1
#   COLLBENCH_SIZE_TIMEOUT   [-T]             600 (seconds one size may take)
#   COLLBENCH_EXTRA_ARGS     (other flags)    none: more collbench flags, split on spaces
#   COLLBENCH_PROFILE        [--profile]      perf_model only: see results_resolve_profile
#   COLLBENCH_COLLECTIVE     (first argument) sbatch/collective.sbatch only: which collective
#   COLLBENCH_DDP_ARGS                        none: more `collbench-analyze ddp` flags
#   COLLBENCH_RESULTS                         <checkout>/results: where run folders go
#   COLLBENCH_CLUSTER                         Slurm's cluster name / the short hostname
#   COLLBENCH_BIN, COLLBENCH_ANALYZE          <checkout>/target/release/collbench{,-analyze}
#   COLLBENCH_INFO                            1; 0 skips `collbench info --json` in run.json
# Launcher knobs: scripts/lib/slurm-job.sh (COLLBENCH_SRUN_MPI,
# COLLBENCH_SRUN_ARGS, COLLBENCH_LAUNCH) and scripts/run-local.sh
# (COLLBENCH_RANKS, COLLBENCH_MPIRUN_ARGS); all of them: sbatch/README.md.

# shellcheck source=scripts/lib/results-json.sh
. "$(dirname "${BASH_SOURCE[0]}")/results-json.sh"

COLLBENCH_ROOT=${COLLBENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

COLLBENCH_KNOBS=(COLLBENCH_BACKEND COLLBENCH_MIN_BYTES COLLBENCH_MAX_BYTES
    COLLBENCH_STEP_FACTOR COLLBENCH_TOTAL_BYTES COLLBENCH_ITERS
    COLLBENCH_WARMUP_ITERS COLLBENCH_CHECK_ITERS COLLBENCH_SIZE_TIMEOUT
    COLLBENCH_EXTRA_ARGS COLLBENCH_PROFILE COLLBENCH_PROFILE_SIZES
    COLLBENCH_PROFILE_TIMES COLLBENCH_DDP_ARGS COLLBENCH_RESULTS
    COLLBENCH_CLUSTER COLLBENCH_BIN COLLBENCH_ANALYZE COLLBENCH_SRUN_MPI
    COLLBENCH_SRUN_ARGS COLLBENCH_LAUNCH COLLBENCH_MPIRUN_ARGS COLLBENCH_RANKS
    COLLBENCH_INFO COLLBENCH_ROOT COLLBENCH_COLLECTIVE COLLBENCH_PROFILE_BYTES)

# The sweeps of one collective (one report, <experiment>.json), then the rest.
COLLBENCH_COLLECTIVES="all_reduce all_gather reduce_scatter broadcast reduce all_to_all gather scatter sendrecv hypercube alltoallv"
COLLBENCH_EXPERIMENTS="$COLLBENCH_COLLECTIVES chunked_all_reduce perf_model acceptance"
COLLBENCH_ANALYSIS_CMDS=()

results_die() {
    echo "collbench: $*" >&2
    exit "${COLLBENCH_DIE_CODE:-2}"
}

# all-reduce, all_reduce -> all_reduce; anything else is an error.
results_experiment_name() {
    local e=${1//-/_}
    [[ " $COLLBENCH_EXPERIMENTS " == *" $e "* ]] || results_die "unknown experiment '$1': expected one of ${COLLBENCH_EXPERIMENTS// /, }"
    echo "$e"
}

# Reads the script's arguments into the knobs (the flags in the table
# above, as `-b 8`, `-b8` or `--min-bytes=8`); every other argument is
# passed on to collbench in COLLBENCH_EXTRA.
results_parse_args() {
    COLLBENCH_EXTRA=()
    local flag value var
    while [ $# -gt 0 ]; do
        flag=$1 value="" var=""
        case $flag in
            -b | --min-bytes) var=COLLBENCH_MIN_BYTES ;;
            -e | --max-bytes) var=COLLBENCH_MAX_BYTES ;;
            -f | --step-factor) var=COLLBENCH_STEP_FACTOR ;;
            -n | --iters) var=COLLBENCH_ITERS ;;
            -w | --warmup-iters) var=COLLBENCH_WARMUP_ITERS ;;
            -c | --check) var=COLLBENCH_CHECK_ITERS ;;
            -T | --timeout) var=COLLBENCH_SIZE_TIMEOUT ;;
            --total-bytes) var=COLLBENCH_TOTAL_BYTES ;;
            --backend) var=COLLBENCH_BACKEND ;;
            --profile) var=COLLBENCH_PROFILE ;;
            --min-bytes=* | --max-bytes=* | --step-factor=* | --iters=* | --warmup-iters=* | --check=* | \
                --timeout=* | --total-bytes=* | --backend=* | --profile=*)
                set -- "${flag%%=*}" "${flag#*=}" "${@:2}"
                continue
                ;;
            -[befnwcT]?*)
                set -- "${flag:0:2}" "${flag:2}" "${@:2}"
                continue
                ;;
            --out | --out=* | --csv | --csv=* | --force)
                results_die "$flag is set by the script: reports go to the run folder under \$COLLBENCH_RESULTS"
                ;;
        esac
        if [ -n "$var" ]; then
            [ $# -ge 2 ] || results_die "$flag needs a value"
            value=$2
            printf -v "$var" '%s' "$value"
            shift 2
        else
            COLLBENCH_EXTRA+=("$flag")
            shift
        fi
    done
    local extra=()
    read -r -a extra <<<"${COLLBENCH_EXTRA_ARGS:-}"
    COLLBENCH_EXTRA=("${extra[@]}" "${COLLBENCH_EXTRA[@]}")
}

# $1 made absolute against the directory the user launched from (the submit
# directory on Slurm, whose jobs may run elsewhere with --chdir).
results_abs_path() {
    case $1 in
        /*) echo "$1" ;;
        *) echo "${SLURM_SUBMIT_DIR:-$PWD}/$1" ;;
    esac
}

# Fills in every knob that is still unset, for experiment $1.
results_default_knobs() {
    local experiment=$1
    COLLBENCH_BACKEND=${COLLBENCH_BACKEND:-nccl}
    case $COLLBENCH_BACKEND in
        nccl | mpi) ;;
        *) results_die "COLLBENCH_BACKEND/--backend is '$COLLBENCH_BACKEND': expected nccl or mpi" ;;
    esac
    local big=1G
    [ "$COLLBENCH_BACKEND" = mpi ] && big=16M
    if [ "$experiment" = chunked_all_reduce ]; then
        [ "$COLLBENCH_BACKEND" = mpi ] && big=64M
        COLLBENCH_TOTAL_BYTES=${COLLBENCH_TOTAL_BYTES:-$big}
        COLLBENCH_MIN_BYTES=${COLLBENCH_MIN_BYTES:-64K}
        COLLBENCH_MAX_BYTES=${COLLBENCH_MAX_BYTES:-$COLLBENCH_TOTAL_BYTES}
        COLLBENCH_STEP_FACTOR=${COLLBENCH_STEP_FACTOR:-4}
    elif [ "$experiment" = perf_model ]; then
        # -e comes from the profile too: results_perf_model_range.
        COLLBENCH_MIN_BYTES=${COLLBENCH_MIN_BYTES:-8}
        COLLBENCH_STEP_FACTOR=${COLLBENCH_STEP_FACTOR:-2}
    else
        COLLBENCH_MIN_BYTES=${COLLBENCH_MIN_BYTES:-8}
        COLLBENCH_MAX_BYTES=${COLLBENCH_MAX_BYTES:-$big}
        COLLBENCH_STEP_FACTOR=${COLLBENCH_STEP_FACTOR:-2}
    fi
    COLLBENCH_ITERS=${COLLBENCH_ITERS:-20}
    COLLBENCH_WARMUP_ITERS=${COLLBENCH_WARMUP_ITERS:-5}
    COLLBENCH_CHECK_ITERS=${COLLBENCH_CHECK_ITERS:-1}
    COLLBENCH_SIZE_TIMEOUT=${COLLBENCH_SIZE_TIMEOUT:-600}
    COLLBENCH_RESULTS=$(results_abs_path "${COLLBENCH_RESULTS:-$COLLBENCH_ROOT/results}")
    COLLBENCH_BIN=$(results_abs_path "${COLLBENCH_BIN:-$COLLBENCH_ROOT/target/release/collbench}")
    COLLBENCH_ANALYZE=$(results_abs_path "${COLLBENCH_ANALYZE:-$COLLBENCH_ROOT/target/release/collbench-analyze}")
}

# The knobs of experiment $1 from the environment and the arguments after it,
# checked before anything is launched: binaries, profile, results folder.
results_setup() {
    COLLBENCH_EXPERIMENT=$(results_experiment_name "$1") || exit
    shift
    results_parse_args "$@"
    results_default_knobs "$COLLBENCH_EXPERIMENT"
    [ -x "$COLLBENCH_BIN" ] || COLLBENCH_DIE_CODE=3 results_die "no collbench binary at $COLLBENCH_BIN: build it with 'cargo build --release' in the checkout, or set COLLBENCH_BIN"
    if [ "$COLLBENCH_EXPERIMENT" = perf_model ]; then
        [ -x "$COLLBENCH_ANALYZE" ] || COLLBENCH_DIE_CODE=3 results_die "no collbench-analyze binary at $COLLBENCH_ANALYZE: build it with 'cargo build --release -p analysis', or set COLLBENCH_ANALYZE"
        results_resolve_profile
        results_perf_model_range
    fi
    mkdir -p "$COLLBENCH_RESULTS" || COLLBENCH_DIE_CODE=3 results_die "cannot create the results folder $COLLBENCH_RESULTS (COLLBENCH_RESULTS)"
}

# perf_model's layer profile: COLLBENCH_PROFILE (our CSV
# name,params,grad_time_s[,dtype_bytes]), or the course's pair
# COLLBENCH_PROFILE_SIZES + COLLBENCH_PROFILE_TIMES, or else the one CSV in
# $COLLBENCH_RESULTS/profiles/. Sets COLLBENCH_PROFILE_ARGS for ddp.
results_resolve_profile() {
    local dir=$COLLBENCH_RESULTS/profiles found=() f
    if [ -n "${COLLBENCH_PROFILE_SIZES:-}${COLLBENCH_PROFILE_TIMES:-}" ]; then
        for f in "${COLLBENCH_PROFILE_SIZES:-}" "${COLLBENCH_PROFILE_TIMES:-}"; do
            [ -n "$f" ] || results_die "COLLBENCH_PROFILE_SIZES and COLLBENCH_PROFILE_TIMES go together (the course's sizes and times CSVs)"
            [ -r "$(results_abs_path "$f")" ] || results_die "profile file $f is not readable"
        done
        COLLBENCH_PROFILE_SIZES=$(results_abs_path "$COLLBENCH_PROFILE_SIZES")
        COLLBENCH_PROFILE_TIMES=$(results_abs_path "$COLLBENCH_PROFILE_TIMES")
        COLLBENCH_PROFILE_FILES=("$COLLBENCH_PROFILE_SIZES" "$COLLBENCH_PROFILE_TIMES")
        COLLBENCH_PROFILE_ARGS=(--sizes profile-sizes.csv --times profile-times.csv)
        return 0
    fi
    if [ -z "${COLLBENCH_PROFILE:-}" ]; then
        for f in "$dir"/*.csv; do [ -f "$f" ] && found+=("$f"); done
        case ${#found[@]} in
            1) COLLBENCH_PROFILE=${found[0]} ;;
            0) results_die "perf_model needs a layer profile: set COLLBENCH_PROFILE=FILE.csv (columns name,params,grad_time_s; scripts/profile_layers.py writes one) or put one CSV in $dir/" ;;
            *) results_die "perf_model: $dir/ holds ${#found[@]} CSVs (${found[*]##*/}): choose one with COLLBENCH_PROFILE" ;;
        esac
    fi
    COLLBENCH_PROFILE=$(results_abs_path "$COLLBENCH_PROFILE")
    if [ ! -f "$COLLBENCH_PROFILE" ] || [ ! -r "$COLLBENCH_PROFILE" ]; then
        results_die "COLLBENCH_PROFILE=$COLLBENCH_PROFILE is not a readable file"
    fi
    COLLBENCH_PROFILE_FILES=("$COLLBENCH_PROFILE")
    COLLBENCH_PROFILE_ARGS=(--profile profile.csv)
}

# The total gradient bytes of perf_model's profile (params x dtype bytes,
# summed over its rows; the course's sizes file: its "No. Params" column),
# or nothing when no row can be read. A row's dtype_bytes, else
# `--dtype-bytes N` of COLLBENCH_DDP_ARGS, else 4 (fp32), as ddp does.
_results_profile_bytes() {
    local dtype=4 args=() i
    read -r -a args <<<"${COLLBENCH_DDP_ARGS:-}"
    for ((i = 0; i < ${#args[@]}; i++)); do
        case ${args[i]} in
            --dtype-bytes) dtype=${args[i + 1]:-4} ;;
            --dtype-bytes=*) dtype=${args[i]#*=} ;;
        esac
    done
    [[ $dtype =~ ^[0-9]+$ ]] || dtype=4
    # A quoted first field (a name with commas) is cut off before splitting.
    awk -v dtype="$dtype" -v course="${COLLBENCH_PROFILE_SIZES:+1}" '
        /^[ \t]*(#|$)/ { next }
        {
            line = $0; sub(/\r$/, "", line)
            if (substr(line, 1, 1) == "\"") { sub(/^"([^"]|"")*"/, "", line) } else { sub(/^[^,]*/, "", line) }
            n = split(line, f, ",")
            p = course ? f[3] : f[2]; b = (!course && n >= 4 && f[4] ~ /^ *[0-9]+ *$/) ? f[4] + 0 : dtype
            if (p !~ /^ *[0-9]+ *$/) next
            total += p * b; rows++
        }
        END { if (rows) printf "%.0f\n", total }' "${COLLBENCH_PROFILE_FILES[0]}"
}

# $1 bytes in collbench's binary suffixes when exact (1073741824 -> 1G).
_results_bytes_str() {
    local b=$1 s u
    for s in G M K; do
        case $s in G) u=1073741824 ;; M) u=1048576 ;; K) u=1024 ;; esac
        if [ $((b % u)) = 0 ]; then echo "$((b / u))$s"; return; fi
    done
    echo "$b"
}

# $1 with K/M/G suffixes (binary, as collbench reads them) in bytes; empty
# when it is not such a number.
_results_bytes() {
    local v=${1^^} m=1
    case $v in *K) m=1024 ;; *M) m=1048576 ;; *G) m=1073741824 ;; esac
    v=${v%[KMG]}
    [[ $v =~ ^[0-9]+$ ]] && echo $((v * m))
}

# perf_model's largest size: DDP's bucket sweep goes up to one bucket holding
# every gradient, so the sweep must reach the profile's total gradient bytes
# (rounded up to a power of two, so that -f 2 from 8 B measures it), and at
# least the backend's default (1G / 16M). A smaller -e is kept, with a
# warning: ddp then predicts the larger buckets from the fit's last segment.
results_perf_model_range() {
    local total need default=1073741824 given
    [ "$COLLBENCH_BACKEND" = mpi ] && default=16777216
    total=$(_results_profile_bytes) || total=""
    COLLBENCH_PROFILE_BYTES=${total:-unknown}
    if [ -n "${COLLBENCH_MAX_BYTES:-}" ]; then
        given=$(_results_bytes "$COLLBENCH_MAX_BYTES")
        if [ -n "$total" ] && [ -n "$given" ] && [ "$given" -lt "$total" ]; then
            echo "collbench: perf_model: warning: -e $COLLBENCH_MAX_BYTES is below the profile's $total gradient bytes; buckets above it are extrapolated" >&2
        fi
        return 0
    fi
    need=$default
    if [ -n "$total" ]; then
        while [ "$need" -lt "$total" ]; do need=$((need * 2)); done
    else
        echo "collbench: perf_model: warning: no gradient sizes read from the profile; measuring up to the default $(_results_bytes_str $default)" >&2
    fi
    COLLBENCH_MAX_BYTES=$(_results_bytes_str "$need")
}

# Keeps only letters, digits, '.', '_' and '-' (folder names stay portable).
results_sanitize() {
    local s=$1
    echo "${s//[^A-Za-z0-9._-]/_}"
}

# Creates the run folder and sets COLLBENCH_RUN_DIR:
# $COLLBENCH_RESULTS/<YYYY-MM-DD>-<cluster>-<N>n<G>g-<jobid>, the date in UTC,
# G the GPUs per node the run uses (ranks per node with NCCL, 0 with MPI on
# host memory). Refuses a folder that exists.
results_make_run_dir() {
    local cluster nodes ranks_per_node jobid gpus name
    cluster=$(results_sanitize "$1") nodes=$2 ranks_per_node=$3 jobid=$(results_sanitize "$4")
    gpus=$ranks_per_node
    [ "$COLLBENCH_BACKEND" = mpi ] && gpus=0
    name=$(date -u +%F)-$cluster-${nodes}n${gpus}g-$jobid
    COLLBENCH_RUN_DIR=$COLLBENCH_RESULTS/$name
    mkdir "$COLLBENCH_RUN_DIR" 2>/dev/null || COLLBENCH_DIE_CODE=3 results_die "cannot create the run folder $COLLBENCH_RUN_DIR (it exists, or $COLLBENCH_RESULTS is not writable)"
    COLLBENCH_STARTED_AT=$(date -u +%FT%TZ)
}

# The collbench arguments of the experiment (after the launcher and the
# binary), into COLLBENCH_BENCH_ARGS. Reports: <benchmark>.json and .csv.
results_bench_args() {
    local sub report
    case $COLLBENCH_EXPERIMENT in
        perf_model | acceptance) sub=all-reduce report=all_reduce ;;
        *) sub=${COLLBENCH_EXPERIMENT//_/-} report=$COLLBENCH_EXPERIMENT ;;
    esac
    COLLBENCH_REPORT=$COLLBENCH_RUN_DIR/$report.json
    COLLBENCH_BENCH_ARGS=("$sub" --backend "$COLLBENCH_BACKEND"
        -b "$COLLBENCH_MIN_BYTES" -e "$COLLBENCH_MAX_BYTES" -f "$COLLBENCH_STEP_FACTOR")
    if [ "$COLLBENCH_EXPERIMENT" = chunked_all_reduce ]; then
        COLLBENCH_BENCH_ARGS+=(--total-bytes "$COLLBENCH_TOTAL_BYTES")
    fi
    COLLBENCH_BENCH_ARGS+=(-n "$COLLBENCH_ITERS" -w "$COLLBENCH_WARMUP_ITERS"
        -c "$COLLBENCH_CHECK_ITERS" -T "$COLLBENCH_SIZE_TIMEOUT"
        --out "$COLLBENCH_REPORT" --csv "$COLLBENCH_RUN_DIR/$report.csv"
        "${COLLBENCH_EXTRA[@]}")
}

# Runs the launch command "$@" once, with run.json written before and after.
# Returns its exit status.
results_launch() {
    COLLBENCH_CMD=("$@")
    results_collect_provenance
    results_write_run_json
    echo "collbench: results in $COLLBENCH_RUN_DIR"
    echo "+ ${COLLBENCH_CMD[*]}"
    local rc=0
    "$@" || rc=$?
    COLLBENCH_RC=$rc
    COLLBENCH_FINISHED_AT=$(date -u +%FT%TZ)
    results_write_run_json
    [ $rc = 0 ] || echo "collbench: the benchmark exited with status $rc" >&2
    return $rc
}

# Runs one analysis command with its stdout into file $1 (and onto stdout
# too for text); recorded in run.json's analysis_commands.
_results_analysis() {
    local out=$1 rc=0
    shift
    echo "+ $*"
    "$@" >"$out" || rc=$?
    if [[ $out == *.txt ]]; then cat "$out"; fi
    COLLBENCH_ANALYSIS_CMDS+=("{\"argv\": $(results_json_array "$@"), \"exit_code\": $rc}")
    results_write_run_json
    [ $rc = 0 ] || echo "collbench: $1 $2 exited with status $rc" >&2
    return $rc
}

# perf_model after its all-reduce sweep: the α–β fit of the report and the
# DDP bucket-size prediction for the profile (copied into the run folder),
# as text, JSON and SVG. Runs in the run folder so paths in argv stay short.
results_perf_model() {
    local report=${COLLBENCH_REPORT##*/} a=$COLLBENCH_ANALYZE ddp_extra=() rc=0
    read -r -a ddp_extra <<<"${COLLBENCH_DDP_ARGS:-}"
    if [ ${#COLLBENCH_PROFILE_FILES[@]} = 1 ]; then
        cp "${COLLBENCH_PROFILE_FILES[0]}" "$COLLBENCH_RUN_DIR/profile.csv"
    else
        cp "${COLLBENCH_PROFILE_FILES[0]}" "$COLLBENCH_RUN_DIR/profile-sizes.csv"
        cp "${COLLBENCH_PROFILE_FILES[1]}" "$COLLBENCH_RUN_DIR/profile-times.csv"
    fi
    cd "$COLLBENCH_RUN_DIR" || return 3
    _results_analysis fit.txt "$a" fit --plot fit.svg "$report" &&
        _results_analysis fit.json "$a" fit --json "$report" &&
        _results_analysis ddp.txt "$a" ddp "${COLLBENCH_PROFILE_ARGS[@]}" --comm "$report" --plot ddp.svg "${ddp_extra[@]}" &&
        _results_analysis ddp.json "$a" ddp "${COLLBENCH_PROFILE_ARGS[@]}" --comm "$report" --json "${ddp_extra[@]}" ||
        rc=$?
    cd - >/dev/null || true
    return $rc
}

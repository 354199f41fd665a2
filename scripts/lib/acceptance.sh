# shellcheck shell=bash disable=SC2034  # COLLBENCH_* state is shared with results.sh
# The acceptance run of sbatch/acceptance.sbatch: the all-reduce sweep with
# busbw thresholds over every node of the job; when it falls short (collbench
# exit 8), the nodes are narrowed down by runs over part of them (halves,
# then single nodes, alone when a node has 2 ranks or more, else paired with
# a node that passed) to the node or the link at fault. Each run's report is
# kept in the run folder's narrow/, each launch in run.json's
# analysis_commands, and the verdict in acceptance.txt and acceptance.json.
# Sourced after scripts/lib/slurm-job.sh; pure bash, as run.json's writer.

ACCEPTANCE_STEPS=()     # acceptance.json's steps, as JSON objects
ACCEPTANCE_RESULT=""    # what the last group run gave: pass, below, error, untestable
ACCEPTANCE_VERDICT=""   # pass, node, link, nodes, error
ACCEPTANCE_NODES=()     # the nodes the verdict names
ACCEPTANCE_SUMMARY=""   # the verdict in one line

# The thresholds are what an acceptance run is for: refuse to run without
# (before anything is made), looking at the script's arguments and
# COLLBENCH_EXTRA_ARGS.
acceptance_check_thresholds() {
    local a extra=()
    read -r -a extra <<<"${COLLBENCH_EXTRA_ARGS:-}"
    for a in "$@" "${extra[@]}"; do
        case $a in
            --min-busbw | --min-busbw=* | --min-busbw-file | --min-busbw-file=* | --expect-ceiling | --expect-ceiling=*) return 0 ;;
        esac
    done
    results_die "acceptance needs a threshold: --min-busbw GBPS (or SIZE=GBPS,…), --min-busbw-file FILE or --expect-ceiling F (see sbatch/README.md)"
}

# Appends one line to acceptance.txt and says it.
_acceptance_say() {
    echo "acceptance: $*" | tee -a "$COLLBENCH_RUN_DIR/acceptance.txt"
}

# Records the step NAME on NODES (space-separated) that exited RC with RESULT.
_acceptance_step() {
    local name=$1 nodes=$2 rc=$3 result=$4 report=$5 list=()
    read -r -a list <<<"$nodes"
    ACCEPTANCE_STEPS+=("{\"name\": $(results_json_str "$name"), \"nodes\": $(results_json_array "${list[@]}"), \"exit_code\": $rc, \"result\": \"$result\", \"report\": $(results_json_str "$report")}")
    _acceptance_say "$name on ${nodes// /,}: $result (exit $rc${report:+, $report})"
}

# The result of collbench's exit code: 0 pass, 8 below a threshold, else error.
_acceptance_result_of() {
    case $1 in 0) echo pass ;; 8) echo below ;; *) echo error ;; esac
}

# Runs the sweep on NODES (space-separated) as step NAME, the report in
# narrow/NAME.json; sets ACCEPTANCE_RESULT.
_acceptance_run() {
    local name=$1 nodes=$2 list=() per_node count args=() i rc=0 extra=() report
    read -r -a list <<<"$nodes"
    per_node=$(_slurm_ranks_per_node)
    count=${#list[@]}
    report=narrow/$name.json
    mkdir -p "$COLLBENCH_RUN_DIR/narrow"
    args=("${COLLBENCH_BENCH_ARGS[@]}")
    for ((i = 0; i < ${#args[@]}; i++)); do
        case ${args[i]} in
            --out) args[i + 1]=$COLLBENCH_RUN_DIR/$report ;;
            --csv) args[i + 1]=$COLLBENCH_RUN_DIR/narrow/$name.csv ;;
        esac
    done
    local launch=()
    if [ "$COLLBENCH_LAUNCH" = mpirun ]; then
        read -r -a extra <<<"${COLLBENCH_MPIRUN_ARGS:-}"
        local hosts=() node
        for node in "${list[@]}"; do hosts+=("$node:$per_node"); done
        launch=(mpirun -n $((count * per_node)) --host "$(IFS=,; echo "${hosts[*]}")" --map-by "ppr:$per_node:node" "${extra[@]}")
    else
        launch=(srun "${COLLBENCH_SRUN_FLAGS[@]}" -N "$count" -n $((count * per_node)) --ntasks-per-node="$per_node" -w "$(IFS=,; echo "${list[*]}")")
    fi
    echo "+ ${launch[*]} $COLLBENCH_BIN ${args[*]}"
    "${launch[@]}" "$COLLBENCH_BIN" "${args[@]}" || rc=$?
    COLLBENCH_ANALYSIS_CMDS+=("{\"argv\": $(results_json_array "${launch[@]}" "$COLLBENCH_BIN" "${args[@]}"), \"exit_code\": $rc}")
    results_write_run_json
    ACCEPTANCE_RESULT=$(_acceptance_result_of $rc)
    _acceptance_step "$name" "$nodes" "$rc" "$ACCEPTANCE_RESULT" "$report"
}

# Tests one group of NODES as step NAME: alone when it can be measured alone
# (two ranks or more), a single node of one rank paired with GOOD (a node
# that passed) when there is one, else untestable.
_acceptance_group() {
    local name=$1 nodes=$2 good=$3 list=()
    read -r -a list <<<"$nodes"
    if [ ${#list[@]} = 1 ] && [ "$(_slurm_ranks_per_node)" = 1 ]; then
        if [ -z "$good" ]; then
            ACCEPTANCE_RESULT=untestable
            _acceptance_step "$name" "$nodes" 0 untestable ""
            return 0
        fi
        _acceptance_run "$name-with-$good" "$nodes $good"
        return 0
    fi
    _acceptance_run "$name" "$nodes"
}

# Sets the verdict: KIND, the one-line SUMMARY, then the nodes named.
_acceptance_verdict() {
    ACCEPTANCE_VERDICT=$1 ACCEPTANCE_SUMMARY=$2
    shift 2
    ACCEPTANCE_NODES=("$@")
}

# Narrows a full run that fell short down to the node or link at fault.
_acceptance_narrow() {
    local suspects=() good="" half a b ra rb level=0
    mapfile -t suspects < <(scontrol show hostnames "${SLURM_JOB_NODELIST:-$(hostname -s)}")
    if [ ${#suspects[@]} = 1 ]; then
        _acceptance_verdict node "the job's one node ${suspects[0]} falls short on its own" "${suspects[0]}"
        return 0
    fi
    while [ ${#suspects[@]} -gt 1 ]; do
        level=$((level + 1))
        half=$(((${#suspects[@]} + 1) / 2))
        a="${suspects[*]:0:half}" b="${suspects[*]:half}"
        _acceptance_group "half$level-a" "$a" "$good"
        ra=$ACCEPTANCE_RESULT
        _acceptance_group "half$level-b" "$b" "$good"
        rb=$ACCEPTANCE_RESULT
        # A half that was untestable alone can be paired once the other passed.
        if [ "$ra" = untestable ] && [ "$rb" = pass ]; then
            good=${b%% *}
            _acceptance_group "half$level-a" "$a" "$good"
            ra=$ACCEPTANCE_RESULT
        elif [ "$rb" = untestable ] && [ "$ra" = pass ]; then
            good=${a%% *}
            _acceptance_group "half$level-b" "$b" "$good"
            rb=$ACCEPTANCE_RESULT
        fi
        case $ra/$rb in
            pass/pass)
                _acceptance_verdict link "each half reaches the thresholds alone (${a// /,} and ${b// /,}), together they fall short: the links between them" $a $b
                return 0
                ;;
            pass/*)
                good=${a%% *}
                read -r -a suspects <<<"$b"
                ;;
            */pass)
                good=${b%% *}
                read -r -a suspects <<<"$a"
                ;;
            untestable/untestable)
                _acceptance_verdict nodes "${a// /,} and ${b// /,} fall short together; with one rank per node and no node known good, neither can be run alone" $a $b
                return 0
                ;;
            */untestable) read -r -a suspects <<<"$a" ;;
            untestable/*) read -r -a suspects <<<"$b" ;;
            *)
                _acceptance_verdict nodes "both halves fall short (${a// /,}: $ra; ${b// /,}: $rb): more than one node, or something they share" $a $b
                return 0
                ;;
        esac
    done
    local node=${suspects[0]} how="alone"
    [ "$(_slurm_ranks_per_node)" != 1 ] || how="paired with ${good:-no node known good}"
    _acceptance_verdict node "$node falls short ($how), the other nodes reach the thresholds" "$node"
}

# Writes acceptance.json from the verdict and the steps.
_acceptance_write_json() {
    local tmp=$COLLBENCH_RUN_DIR/.acceptance.json.tmp first=1 s
    {
        printf '{\n  "verdict": %s,' "$(results_json_str "$ACCEPTANCE_VERDICT")"
        printf '\n  "nodes": %s,' "$(results_json_array "${ACCEPTANCE_NODES[@]}")"
        printf '\n  "summary": %s,' "$(results_json_str "$ACCEPTANCE_SUMMARY")"
        printf '\n  "steps": ['
        for s in "${ACCEPTANCE_STEPS[@]}"; do
            [ $first = 1 ] || printf ','
            first=0
            printf '\n    %s' "$s"
        done
        [ $first = 1 ] || printf '\n  '
        printf ']\n}\n'
    } >"$tmp"
    mv -f "$tmp" "$COLLBENCH_RUN_DIR/acceptance.json"
}

# collbench_acceptance RC: after the full run (exit RC, its report
# all_reduce.json), the verdict; narrows when the run fell short or failed.
# Returns 0 when every size passed, 8 when something fell short, RC otherwise.
collbench_acceptance() {
    local rc=$1 all=()
    mapfile -t all < <(scontrol show hostnames "${SLURM_JOB_NODELIST:-$(hostname -s)}")
    : >"$COLLBENCH_RUN_DIR/acceptance.txt"
    _acceptance_step all "${all[*]}" "$rc" "$(_acceptance_result_of "$rc")" "${COLLBENCH_REPORT##*/}"
    case $rc in
        0) _acceptance_verdict pass "every node reaches the thresholds together (${#all[@]} nodes)" ;;
        2) _acceptance_verdict error "collbench refused its arguments (exit 2): nothing measured" ;;
        *) _acceptance_narrow ;;
    esac
    _acceptance_say "verdict: $ACCEPTANCE_VERDICT: $ACCEPTANCE_SUMMARY"
    _acceptance_write_json
    results_write_run_json
    case $ACCEPTANCE_VERDICT in
        pass) return 0 ;;
        error) return "$rc" ;;
        *) return 8 ;;
    esac
}

# shellcheck shell=bash disable=SC2034  # COLLBENCH_* state is shared with results.sh
# What every sbatch/*.sbatch script sources, so that the scripts themselves
# only request resources and launch one srun: the job's results folder named
# from Slurm's variables, the job's output file moved into it, run.json,
# and the srun flags. Knobs: scripts/lib/results.sh, plus
#   COLLBENCH_SRUN_MPI   srun's --mpi plugin, default pmix (what Debian's and
#                        most Open MPI 4/5 builds speak); empty = the
#                        cluster's MpiDefault
#   COLLBENCH_SRUN_ARGS  more srun flags, split on spaces (e.g. --cpu-bind=cores)
#   COLLBENCH_LAUNCH     srun (default), or mpirun: the script's srun and its
#                        flags become `mpirun -n $SLURM_NTASKS --map-by
#                        ppr:<ranks per node>:node $COLLBENCH_MPIRUN_ARGS`,
#                        for a Slurm with no PMI plugin that the MPI speaks

# shellcheck source=scripts/lib/results.sh
. "$(dirname "${BASH_SOURCE[0]}")/results.sh"

COLLBENCH_LAUNCHER=slurm
COLLBENCH_OUTPUT_TO_COPY=()

# The job's id as Slurm shows it: <array job>_<task> for array tasks.
_slurm_job_id() {
    if [ -n "${SLURM_ARRAY_JOB_ID:-}" ] && [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
        echo "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    else
        echo "$SLURM_JOB_ID"
    fi
}

_slurm_cluster_name() {
    local name=${COLLBENCH_CLUSTER:-${SLURM_CLUSTER_NAME:-}}
    [ -n "$name" ] || name=$(scontrol show config 2>/dev/null | sed -n 's/^ClusterName *= *//p')
    [ -n "$name" ] || name=$(hostname -s)
    echo "$name"
}

# Ranks on the first node: SLURM_TASKS_PER_NODE reads like "8(x2)" or "8,4".
_slurm_ranks_per_node() {
    local t=${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-1}}
    t=${t%%[(,]*}
    echo "$t"
}

# Moves the job's output file(s) into the run folder: a hard link, then the
# submit-side name is removed, so Slurm keeps writing to the same file. Where
# a link cannot be made (another file system), the file is copied at exit.
_slurm_take_output() {
    local info out err
    info=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null || true)
    out=$(sed -n 's/^ *StdOut=//p' <<<"$info")
    err=$(sed -n 's/^ *StdErr=//p' <<<"$info")
    # Old Slurms show the --output pattern unexpanded: guess the scripts' own.
    [[ -n $out && $out != *%* ]] || out=$PWD/slurm-${SLURM_JOB_NAME:-}-$SLURM_JOB_ID.out
    [[ $err != *%* ]] || err=""
    _slurm_take_file "$out" slurm.out
    if [ -n "$err" ] && [ "$err" != "$out" ]; then
        _slurm_take_file "$err" slurm.err
    fi
}

_slurm_take_file() {
    local src=$1 dst=$COLLBENCH_RUN_DIR/$2
    [ -f "$src" ] || return 0
    if ln -- "$src" "$dst" 2>/dev/null; then
        rm -f -- "$src"
    else
        COLLBENCH_OUTPUT_TO_COPY+=("$src" "$dst")
    fi
}

_slurm_on_exit() {
    local rc=$1 i
    COLLBENCH_SCRIPT_RC=$rc
    COLLBENCH_FINISHED_AT=${COLLBENCH_FINISHED_AT:-$(date -u +%FT%TZ)}
    if [ -n "${COLLBENCH_RUN_DIR:-}" ] && [ -d "$COLLBENCH_RUN_DIR" ]; then
        if [ -n "${COLLBENCH_VERSIONS_JSON:-}" ]; then
            results_write_run_json || true
        fi
        echo "collbench: job $(_slurm_job_id) ended with status $rc; results in $COLLBENCH_RUN_DIR"
        for ((i = 0; i < ${#COLLBENCH_OUTPUT_TO_COPY[@]}; i += 2)); do
            cp -- "${COLLBENCH_OUTPUT_TO_COPY[i]}" "${COLLBENCH_OUTPUT_TO_COPY[i + 1]}" || true
        done
    fi
}

# One rank per GPU: with NCCL, ranks per node must match the GPUs Slurm gave
# each node (SLURM_GPUS_ON_NODE; clusters that hand out whole nodes without
# GPU accounting do not set it, and are trusted).
_slurm_check_gpus() {
    local gpus=${SLURM_GPUS_ON_NODE:-} ranks
    ranks=$(_slurm_ranks_per_node)
    [ "$COLLBENCH_BACKEND" = nccl ] && [ -n "$gpus" ] || return 0
    if [ "$gpus" = 0 ]; then
        results_die "--backend nccl but the job has no GPUs: submit with --gpus-per-node=G (or use --backend mpi)"
    fi
    if [ "$gpus" != "$ranks" ]; then
        results_die "$ranks ranks per node but $gpus GPUs per node: submit with --ntasks-per-node=G --gpus-per-node=G (one rank per GPU)"
    fi
}

# collbench_slurm_begin EXPERIMENT [ARGS...]: knobs, checks, the run folder,
# the job's output moved into it, and COLLBENCH_SRUN_FLAGS and
# COLLBENCH_BENCH_ARGS for the script's srun line.
collbench_slurm_begin() {
    [ -n "${SLURM_JOB_ID:-}" ] || COLLBENCH_DIE_CODE=2 results_die "not inside a Slurm job: submit this script with sbatch (scripts/run-local.sh runs the same experiments with mpirun)"
    results_setup "$@"
    case ${COLLBENCH_LAUNCH:=srun} in
        srun | mpirun) ;;
        *) results_die "COLLBENCH_LAUNCH is '$COLLBENCH_LAUNCH': expected srun or mpirun" ;;
    esac
    _slurm_check_gpus
    results_make_run_dir "$(_slurm_cluster_name)" "${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}" \
        "$(_slurm_ranks_per_node)" "$(_slurm_job_id)"
    # On Slurm's SIGTERM (time limit, scancel) the EXIT trap still writes run.json.
    trap 'exit 143' TERM
    trap '_slurm_on_exit $?' EXIT
    _slurm_take_output
    results_bench_args
    COLLBENCH_SRUN_MPI=${COLLBENCH_SRUN_MPI-pmix}
    local extra=()
    read -r -a extra <<<"${COLLBENCH_SRUN_ARGS:-}"
    COLLBENCH_SRUN_FLAGS=(--kill-on-bad-exit=1)
    [ -z "$COLLBENCH_SRUN_MPI" ] || COLLBENCH_SRUN_FLAGS+=("--mpi=$COLLBENCH_SRUN_MPI")
    COLLBENCH_SRUN_FLAGS+=("${extra[@]}")
    _slurm_info_launch
    echo "collbench: $COLLBENCH_EXPERIMENT, job $(_slurm_job_id) on ${SLURM_JOB_NUM_NODES:-1} node(s) ($SLURM_JOB_NODELIST), ${SLURM_NTASKS:-?} ranks, backend $COLLBENCH_BACKEND"
}

# COLLBENCH_INFO_LAUNCH: run.json's `collbench info` as one rank on every
# node of the job, launched as the benchmark is (srun, or mpirun).
_slurm_info_launch() {
    local nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}} extra=()
    if [ "$COLLBENCH_LAUNCH" = mpirun ]; then
        read -r -a extra <<<"${COLLBENCH_MPIRUN_ARGS:-}"
        COLLBENCH_INFO_LAUNCH=(mpirun -n "$nodes" --map-by ppr:1:node "${extra[@]}")
    else
        COLLBENCH_INFO_LAUNCH=(srun "${COLLBENCH_SRUN_FLAGS[@]}" -N "$nodes" -n "$nodes" --ntasks-per-node=1)
    fi
}

# collbench_slurm_launch srun ...: the job's one launch, recorded in run.json;
# with COLLBENCH_LAUNCH=mpirun, what precedes the binary is replaced.
collbench_slurm_launch() {
    if [ "$COLLBENCH_LAUNCH" = mpirun ]; then
        local extra=()
        read -r -a extra <<<"${COLLBENCH_MPIRUN_ARGS:-}"
        while [ $# -gt 0 ] && [ "$1" != "$COLLBENCH_BIN" ]; do shift; done
        [ $# -gt 0 ] || results_die "COLLBENCH_LAUNCH=mpirun: the launch line does not run \$COLLBENCH_BIN"
        set -- mpirun -n "${SLURM_NTASKS:-1}" --map-by "ppr:$(_slurm_ranks_per_node):node" "${extra[@]}" "$@"
    fi
    results_launch "$@"
}

# perf_model's analysis of the all-reduce report (on the batch host).
collbench_perf_model() {
    results_perf_model
}

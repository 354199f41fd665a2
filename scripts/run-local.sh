#!/usr/bin/env bash
# Runs one of the sbatch/ experiments on this machine alone: builds the
# release binaries if needed (unless COLLBENCH_BIN is set), launches
# `mpirun -n N ... target/release/collbench <benchmark> <flags> --out --csv`
# and, for perf-model, then runs collbench-analyze fit and ddp on the
# report. Everything lands in a new folder of the sbatch layout,
# results/<YYYY-MM-DD>-<host>-1n<G>g-local-<HHMMSS>/ (UTC; G = ranks with
# NCCL, 0 with MPI on host memory): the report and its CSV, mpirun.out (all
# that was printed) and run.json (the command, knobs and versions).
#
#   scripts/run-local.sh EXPERIMENT [--ranks N] [--dry-run] [FLAGS...]
#
# EXPERIMENT: a collective (all-reduce, all-gather, reduce-scatter,
# broadcast, reduce, all-to-all, gather, scatter, sendrecv),
# chunked-all-reduce, or perf-model (an all-reduce sweep up to the layer
# profile's size, its fit and the DDP bucket model); underscores work too.
# One rank per local GPU (nvidia-smi -L) with NCCL; without GPUs, or with
# --backend mpi, MPI on host memory over --ranks ranks (default 4).
# --dry-run prints the mpirun command and runs nothing. FLAGS and the
# COLLBENCH_* variables are the knobs of the sbatch scripts
# (sbatch/README.md), e.g. -b 8 -e 256M -n 50, --profile F.csv.
# Binding: ranks beyond the cores are not bound (--bind-to none); NCCL ranks
# are packed per socket (rank r near GPU r on usual numbering), MPI ranks
# one per core. COLLBENCH_MPIRUN_ARGS replaces that choice.
# shellcheck disable=SC2034  # COLLBENCH_* state is read by scripts/lib/results.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/setup.sh
. "$root/scripts/lib/setup.sh"
# shellcheck source=scripts/lib/results.sh
. "$root/scripts/lib/results.sh"

# The header above, to stdout (asked for) or stderr (no experiment given).
usage() {
    sed -n '2,/^set -euo/{/^# /p;/^#$/p}' "$0" | grep -v shellcheck | sed 's/^# \{0,1\}//'
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
experiment=$1
shift
if [ "${experiment//-/_}" = acceptance ]; then
    results_die "acceptance narrows a failing sweep down over a job's nodes: submit sbatch/acceptance.sbatch; on one machine, give thresholds to the sweep itself (collbench all-reduce --min-busbw …, exit 8 when a size falls short)"
fi
ranks=${COLLBENCH_RANKS:-}
dry_run=0
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --ranks) [ $# -ge 2 ] || results_die "--ranks needs a value"; ranks=$2; shift 2 ;;
        --ranks=*) ranks=${1#*=}; shift ;;
        --dry-run) dry_run=1; shift ;;
        *) args+=("$1"); shift ;;
    esac
done

# Build unless told which binaries to use (cargo is a no-op when up to date).
if [ -z "${COLLBENCH_BIN:-}" ] && command -v cargo >/dev/null 2>&1; then
    (cd "$root" && cargo build --release --quiet -p collbench -p analysis --bin collbench --bin collbench-analyze)
fi

gpus=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
fi
# The backend decides the default rank count, so find it before the knobs.
[ -n "${COLLBENCH_BACKEND:-}" ] || { [ "$gpus" -gt 0 ] && COLLBENCH_BACKEND=nccl || COLLBENCH_BACKEND=mpi; }
results_setup "$experiment" "${args[@]}"

if [ "$COLLBENCH_BACKEND" = nccl ]; then
    [ "$gpus" -gt 0 ] || COLLBENCH_DIE_CODE=3 results_die "--backend nccl needs GPUs and nvidia-smi -L lists none: use --backend mpi"
    ranks=${ranks:-$gpus}
else
    ranks=${ranks:-4}
fi
[[ $ranks =~ ^[1-9][0-9]*$ ]] || results_die "--ranks is '$ranks': expected a positive integer"
COLLBENCH_RANKS=$ranks

# Process binding, from the physical cores and sockets lscpu reports.
cores=$(nproc)
sockets=1
if command -v lscpu >/dev/null 2>&1; then
    cores=$(lscpu -p=core,socket | grep -v '^#' | sort -u | wc -l)
    sockets=$(lscpu -p=socket | grep -v '^#' | sort -u | wc -l)
fi
if [ -n "${COLLBENCH_MPIRUN_ARGS:-}" ]; then
    read -r -a binding <<<"$COLLBENCH_MPIRUN_ARGS"
elif [ "$ranks" -gt "$cores" ]; then
    binding=(--oversubscribe --bind-to none)
elif [ "$COLLBENCH_BACKEND" = nccl ] && [ $((ranks % sockets)) = 0 ]; then
    binding=(--map-by "ppr:$((ranks / sockets)):socket" --bind-to socket)
else
    binding=(--map-by core --bind-to core)
fi

COLLBENCH_LAUNCHER=mpirun
jobid=local-$(date -u +%H%M%S)
# Two runs started in the same second: the second one adds its pid.
if compgen -G "$COLLBENCH_RESULTS/*-$jobid" >/dev/null; then jobid=$jobid-$$; fi
results_make_run_dir "${COLLBENCH_CLUSTER:-$(hostname -s)}" 1 "$ranks" "$jobid"
results_bench_args
launch=(mpirun -n "$ranks" "${binding[@]}" "$COLLBENCH_BIN" "${COLLBENCH_BENCH_ARGS[@]}")
if [ $dry_run = 1 ]; then
    printf '%q ' "${launch[@]}"
    echo
    rmdir "$COLLBENCH_RUN_DIR"
    exit 0
fi

# Everything printed from here on is kept as mpirun.out in the run folder.
exec > >(tee -a "$COLLBENCH_RUN_DIR/mpirun.out") 2>&1
tee_pid=$!
finish() {
    local rc=$?
    COLLBENCH_SCRIPT_RC=$rc
    COLLBENCH_FINISHED_AT=${COLLBENCH_FINISHED_AT:-$(date -u +%FT%TZ)}
    [ -z "${COLLBENCH_VERSIONS_JSON:-}" ] || results_write_run_json || true
    echo "collbench: ended with status $rc; results in $COLLBENCH_RUN_DIR"
    exec >&- 2>&-
    wait "$tee_pid" 2>/dev/null || true
}
trap finish EXIT
trap 'exit 143' TERM INT
echo "collbench: $COLLBENCH_EXPERIMENT on $(hostname -s), $ranks ranks, backend $COLLBENCH_BACKEND, $gpus GPU(s), $cores core(s) on $sockets socket(s)"
results_launch "${launch[@]}"
if [ "$COLLBENCH_EXPERIMENT" = perf_model ]; then
    results_perf_model
fi

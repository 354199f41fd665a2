#!/usr/bin/env bash
# `collbench-analyze predict`'s scale model held out on collbench's own
# multi-node runs: starts the local Slurm test cluster (scripts/lib/
# slurm-cluster.sh: munged, slurmctld and one slurmd per node, each node in
# its own UTS and mount namespaces on this one machine), runs `collbench
# all-reduce` and `broadcast --backend mpi` through sbatch/ at 1, 2, 4 and 8
# nodes x 1 and 2 ranks per node, one job at a time, copies each report
# into the output folder, stops the cluster, then scores the predictions
# with scripts/predict_accuracy.py --reports: fitted on at most two node
# counts, each run at 2x, 4x and 8x the largest fitted count predicted and
# compared with its measurement.
#
#   scripts/predict-validate-slurm.sh [OUT_DIR]
#
# OUT_DIR (default results/<date>-ci-<N>n0g-predict-validation, N the
# largest node count) receives
# <collective>-<N>n<R>r.json per run (the report, this machine's paths in it
# written <checkout> and <scratch>), accuracy-<collective>-<R>r.json (every
# predicted size with its measurement) and accuracy.txt (the tables).
# COLLBENCH_VALIDATE_NODES ("1 2 4 8"), COLLBENCH_VALIDATE_PER_NODE ("1 2")
# and COLLBENCH_VALIDATE_ARGS (the sweep, "-b 1K -e 32M -f 2 -n 5 -w 1")
# change what runs. Needs root (as scripts/slurm-test.sh).
#
# What it validates: the calibration path end to end on collbench's own
# reports (hosts and node counts as collbench records them under Slurm,
# node counts told apart, latency steps measured between them). What it
# does not: real NICs or NCCL. The nodes share one machine's loopback and
# CPUs, and Open MPI's collectives are not NCCL's ring and tree, so its
# numbers say nothing of a GPU cluster's accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/setup.sh
. scripts/lib/setup.sh
# shellcheck source=scripts/lib/slurm-cluster.sh
. scripts/lib/slurm-cluster.sh

fail() {
    echo "predict-validate-slurm: FAIL: $*" >&2
    exit 1
}

read -r -a node_counts <<<"${COLLBENCH_VALIDATE_NODES:-1 2 4 8}"
read -r -a per_node_counts <<<"${COLLBENCH_VALIDATE_PER_NODE:-1 2}"
read -r -a sweep <<<"${COLLBENCH_VALIDATE_ARGS:--b 1K -e 32M -f 2 -n 5 -w 1}"
job_timeout=${COLLBENCH_SLURM_JOB_TIMEOUT:-600}

[ "$(id -u)" = 0 ] || fail "needs root to start munged, slurmctld and slurmd"
most=0
for n in "${node_counts[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || fail "COLLBENCH_VALIDATE_NODES: '$n' is not a node count (e.g. 1 2 4 8)"
    [ "$n" -le "$most" ] || most=$n
done
for r in "${per_node_counts[@]}"; do
    [[ $r =~ ^[1-9][0-9]*$ ]] || fail "COLLBENCH_VALIDATE_PER_NODE: '$r' is not a rank count (e.g. 1 2)"
done
# Named as results/README.md names runs: the test cluster is `ci`, MPI on
# host memory is 0 GPUs per node, the largest node count is N.
out=${1:-results/$(date -u +%F)-ci-${most}n0g-predict-validation}
[ ! -e "$out" ] || fail "$out exists: give another OUT_DIR, or remove it"

collbench_install_packages
slurm_cluster_install || fail "Slurm's packages are missing or incomplete"
collbench_require_cargo
echo "== predict-validate-slurm: cargo build --release (collbench, collbench-analyze)"
cargo build --release --quiet -p collbench -p analysis --bin collbench --bin collbench-analyze

scratch=$(mktemp -d "${TMPDIR:-/tmp}/collbench-predict-validate.XXXXXX")
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -z "$SLURM_CLUSTER_DIR" ] || { slurm_cluster_down; slurm_cluster_leftovers; }
    if [ $rc = 0 ]; then rm -rf "$scratch"; else echo "predict-validate-slurm: kept $scratch" >&2; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== predict-validate-slurm: start the cluster ($most nodes, config and logs in $scratch/slurm)"
slurm_cluster_up "$scratch/slurm" "$most" "$scratch" "$PWD" || fail "the Slurm cluster did not come up"
mkdir -p "$scratch/jobs" "$scratch/results" "$out"

# Submits one run and waits for it; prints "JOBID STATE EXITCODE".
run_job() {
    local collective=$1 n=$2 r=$3 jobid result
    jobid=$(env COLLBENCH_BACKEND=mpi COLLBENCH_RESULTS="$scratch/results" OMPI_MCA_mpi_yield_when_idle=1 \
        timeout 30 sbatch --parsable --chdir="$scratch/jobs" -p multi -N "$n" \
        --ntasks-per-node="$r" --gpus-per-node=0 --time=10 \
        "sbatch/$collective.sbatch" "${sweep[@]}") || fail "$collective on $n x $r: sbatch did not submit"
    jobid=${jobid%%;*}
    result=$(slurm_job_wait "$jobid" "$job_timeout") || fail "$collective on $n x $r: job $jobid is still $result after $job_timeout s"
    echo "$jobid $result"
}

# One job at a time, so that no run shares the CPUs with another. A rank
# can segfault inside Open MPI 4.1.4's MPI_Init on this cluster before
# collbench runs (scripts/slurm-test.sh says where); such a job is run
# again once, loudly.
for collective in all_reduce broadcast; do
    for r in "${per_node_counts[@]}"; do
        for n in "${node_counts[@]}"; do
            read -r jobid state code <<<"$(run_job "$collective" "$n" "$r")"
            folder=$(compgen -G "$scratch/results/*-$jobid" || true)
            if [ "$state $code" != "COMPLETED 0:0" ] && [ -n "$folder" ] &&
                grep -q 'Segmentation fault' "$folder/slurm.out" 2>/dev/null; then
                echo "RETRY $collective on $n x $r: job $jobid had a rank segfault at start-up; running it once more"
                read -r jobid state code <<<"$(run_job "$collective" "$n" "$r")"
            fi
            report=$(compgen -G "$scratch/results/*-$jobid/$collective.json" || true)
            [ "$state $code" = "COMPLETED 0:0" ] && [ -n "$report" ] ||
                fail "$collective on $n x $r: job $jobid: $state $code, report ${report:-missing} (output: $(compgen -G "$scratch/results/*-$jobid/slurm.out" || echo none))"
            # The report as written, but for this machine's paths (the
            # binary's, the submit folder, Slurm's scratch files).
            sed -e "s#$scratch#<scratch>#g" -e "s#$PWD#<checkout>#g" "$report" >"$out/$collective-${n}n${r}r.json"
            echo "ok   $collective on $n nodes x $r ranks: job $jobid -> $out/$collective-${n}n${r}r.json"
        done
    done
done
slurm_cluster_down
SLURM_CLUSTER_DIR=""

echo "== predict-validate-slurm: held-out accuracy (scripts/predict_accuracy.py --reports)"
{
    echo "# scripts/predict-validate-slurm.sh: collbench --backend mpi on the local Slurm test cluster"
    echo "# sweep: ${sweep[*]}; nodes: ${node_counts[*]}; ranks per node: ${per_node_counts[*]}"
} >"$out/accuracy.txt"
for collective in all_reduce broadcast; do
    for r in "${per_node_counts[@]}"; do
        reports=("$out/$collective"-*n"${r}"r.json)
        saved=$out/accuracy-$collective-${r}r.json
        python3 scripts/predict_accuracy.py --reports --collective "$collective" --json "${reports[@]}" >"$saved"
        {
            echo
            echo "## $collective, $r rank(s) per node: python3 scripts/predict_accuracy.py --from $saved"
            python3 scripts/predict_accuracy.py --from "$saved"
        } >>"$out/accuracy.txt"
    done
done
cat "$out/accuracy.txt"

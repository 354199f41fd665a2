#!/usr/bin/env bash
# The Slurm test: every sbatch/ script, submitted with `sbatch --wait` on
# the MPI backend to a real single-node Slurm cluster that this script
# starts (Debian's slurm-wlm and munge, installed with apt if missing; a
# slurm.conf generated for this machine in a scratch directory; munged,
# slurmctld and slurmd as plain processes, no systemd) and stops at its end
# whatever happens. Checks each job's exit state and the results folder it
# wrote, two jobs that must fail, and scripts/run-local.sh's folder.
# Needs root. COLLBENCH_SKIP_SLURM_TEST=1 skips it (and says so);
# COLLBENCH_SLURM_TEST_KEEP=1 keeps the scratch directory (kept on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/setup.sh
. scripts/lib/setup.sh
# shellcheck source=scripts/lib/slurm-cluster.sh
. scripts/lib/slurm-cluster.sh
# shellcheck source=scripts/lib/results-check.sh
. scripts/lib/results-check.sh

# How long one `sbatch --wait` may take. The jobs take seconds, but sbatch
# --wait polls ever more slowly: it returns 2 s, 10 s or 42 s after submitting.
job_timeout=${COLLBENCH_SLURM_JOB_TIMEOUT:-300}
t0=$SECONDS

fail() {
    echo "slurm-test: FAIL: $*"
    exit 1
}

if [ "${COLLBENCH_SKIP_SLURM_TEST:-0}" = 1 ]; then
    echo "slurm-test: SKIPPED (COLLBENCH_SKIP_SLURM_TEST=1)"
    exit 0
fi
[ "$(id -u)" = 0 ] || fail "needs root to install slurm-wlm and munge and to start munged, slurmctld and slurmd (COLLBENCH_SKIP_SLURM_TEST=1 skips it)"

echo "== slurm-test: packages"
collbench_install_packages
slurm_cluster_install || fail "Slurm's packages are missing or incomplete"
collbench_require_cargo
command -v python3 >/dev/null || fail "python3 is needed to check the JSON reports"
echo "== slurm-test: cargo build --release (collbench, collbench-analyze)"
cargo build --release --quiet -p collbench -p analysis --bin collbench --bin collbench-analyze
t_ready=$SECONDS

scratch=$(mktemp -d "${TMPDIR:-/tmp}/collbench-slurm.XXXXXX")
status=1
declare -A pid=()
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ $rc = 0 ] || status=1
    # The sbatch --wait still running (after a failure or a signal).
    local p
    for p in "${pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    if [ -n "$SLURM_CLUSTER_DIR" ]; then
        if [ $status != 0 ]; then
            echo "-- last lines of the Slurm logs ($scratch/slurm/log):"
            tail -n 15 "$scratch"/slurm/log/slurm*.log 2>/dev/null || true
        fi
        slurm_cluster_down
        echo "slurm-test: Slurm daemons stopped"
    fi
    if [ $status = 0 ] && [ "${COLLBENCH_SLURM_TEST_KEEP:-0}" != 1 ]; then
        rm -rf "$scratch"
    else
        echo "slurm-test: kept $scratch for inspection"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'echo "slurm-test: FAIL: interrupted (SIGINT)"; exit 130' INT
trap 'echo "slurm-test: FAIL: interrupted (SIGTERM)"; exit 143' TERM

echo "== slurm-test: start munged, slurmctld, slurmd (config and logs in $scratch/slurm)"
slurm_cluster_up "$scratch/slurm" || fail "the Slurm cluster did not come up"
t_up=$SECONDS
echo "node $(sinfo -h -N -o '%N: %T, %c CPUs advertised') ($(nproc) real), partition $(sinfo -h -o %P)"
srun --mpi=list 2>&1 | grep -qw pmix || fail "srun --mpi=list has no pmix plugin (libpmix-dev, pulled in by libopenmpi-dev, provides it)"
echo "ok   srun --mpi=list offers pmix; MpiDefault=none, so the scripts must ask for it"

# The jobs: NAME SCRIPT RANKS EXPECTED-EXIT [VAR=VALUE ...] -- [script arguments].
# All are submitted at once and run at once on the 16 advertised CPUs;
# OMPI_MCA_mpi_yield_when_idle=1 keeps oversubscribed ranks from spinning.
mkdir -p "$scratch/jobs" "$scratch/submit" "$scratch/results"
declare -A ranks_of expect_of script_of
submit() {
    local name=$1 script=$2 ranks=$3 expect=$4 vars=()
    shift 4
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    script_of[$name]=$script ranks_of[$name]=$ranks expect_of[$name]=$expect
    env COLLBENCH_BACKEND=mpi COLLBENCH_RESULTS="$scratch/results" OMPI_MCA_mpi_yield_when_idle=1 "${vars[@]}" \
        timeout "$job_timeout" sbatch --wait --parsable --chdir="$scratch/jobs" \
        --ntasks-per-node="$ranks" --gpus-per-node=0 --time=5 \
        "sbatch/$script.sbatch" "$@" >"$scratch/submit/$name.out" 2>"$scratch/submit/$name.err" &
    pid[$name]=$!
}
profile=crates/ddp/tests/data/synthetic-profile.csv
echo "== slurm-test: sbatch --wait every script (backend mpi, --gpus-per-node=0, 2 or 4 ranks)"
submit all_reduce all_reduce 4 0 -- -e 64K -n 5 -w 1
submit broadcast broadcast 2 0 -- -e 64K -n 5 -w 1
submit chunked_all_reduce chunked_all_reduce 2 0 -- --total-bytes 1M -b 64K -n 3 -w 1
submit perf_model perf_model 2 0 COLLBENCH_PROFILE="$profile" -- -e 4M -n 5 -w 1
submit mpirun_launch all_reduce 2 0 COLLBENCH_LAUNCH=mpirun -- -e 64K -n 5 -w 1
submit bad_size all_reduce 2 2 -- -b 12Q
submit no_profile perf_model 2 2 -- -e 64K

declare -A jobid_of
checks=0
for name in all_reduce broadcast chunked_all_reduce perf_model mpirun_launch bad_size no_profile; do
    rc=0
    wait "${pid[$name]}" || rc=$?
    jobid=$(head -n 1 "$scratch/submit/$name.out" | cut -d';' -f1)
    [ $rc != 124 ] || fail "$name: sbatch --wait did not return within $job_timeout s (job ${jobid:-not submitted})"
    [ -n "$jobid" ] || fail "$name: sbatch did not submit: $(tail -n 1 "$scratch/submit/$name.err")"
    jobid_of[$name]=$jobid
    read -r state code <<<"$(slurm_job_state "$jobid")"
    want_state=COMPLETED
    [ "${expect_of[$name]}" = 0 ] || want_state=FAILED
    if [ $rc != "${expect_of[$name]}" ] || [ "$state" != $want_state ] || [ "$code" != "${expect_of[$name]}:0" ]; then
        fail "$name: job $jobid: sbatch --wait exit $rc, $state $code; expected exit ${expect_of[$name]}, $want_state ${expect_of[$name]}:0 (output: $(find "$scratch" -name "*-$jobid.out" -o -path "*-$jobid/slurm.out" | head -n 1))"
    fi
    echo "ok   $name: job $jobid (${script_of[$name]}.sbatch, ${ranks_of[$name]} ranks): sbatch --wait exit $rc, $state $code"
    checks=$((checks + 1))
done
t_jobs=$SECONDS

echo "== slurm-test: results folders"
# Sets dir to the one results folder of job $1.
folder_of() {
    local found=()
    mapfile -t found < <(compgen -G "$scratch/results/*-$1" || true)
    [ ${#found[@]} = 1 ] || fail "job $1: expected one folder $scratch/results/<date>-ci-1n0g-$1, found ${#found[@]}: ${found[*]##*/}"
    dir=${found[0]}
}
for name in all_reduce broadcast chunked_all_reduce perf_model; do
    folder_of "${jobid_of[$name]}"
    echo "     ${dir##*/}"
    results_check_run "$dir" "$name" "${ranks_of[$name]}" slurm "${jobid_of[$name]}" || fail "$name: results folder ${dir##*/} (above)"
    checks=$((checks + 1))
done
# The fallback for a Slurm without a usable PMI plugin: mpirun in the allocation.
folder_of "${jobid_of[mpirun_launch]}"
echo "     ${dir##*/} (COLLBENCH_LAUNCH=mpirun)"
results_check_run "$dir" all_reduce 2 slurm "${jobid_of[mpirun_launch]}" mpirun || fail "mpirun_launch: results folder ${dir##*/} (above)"
checks=$((checks + 1))

# A benchmark that fails inside srun fails the job, and run.json says so.
folder_of "${jobid_of[bad_size]}"
python3 - "$dir/run.json" <<'PY' || fail "bad_size: run.json of ${dir##*/} does not record exit code 2"
import json, sys
run = json.load(open(sys.argv[1]))
sys.exit(0 if run["exit_code"] == 2 and run["script_exit_code"] == 2 else 1)
PY
grep -q 'error' "$dir/slurm.out" || fail "bad_size: slurm.out of ${dir##*/} has no error line"
echo "ok   bad_size: ${dir##*/}: run.json exit_code 2, the error in slurm.out"
checks=$((checks + 1))
# perf_model without a profile stops before srun, with the reason in its output.
out=$scratch/jobs/slurm-collbench-perf-model-${jobid_of[no_profile]}.out
grep -q 'needs a layer profile' "$out" 2>/dev/null || fail "no_profile: $out does not say that a profile is needed"
! compgen -G "$scratch/results/*-${jobid_of[no_profile]}" >/dev/null || fail "no_profile: a results folder was created for a job that never ran"
echo "ok   no_profile: stopped before srun, no results folder; its output says: $(head -n 1 "$out")"
checks=$((checks + 1))

echo "== slurm-test: scripts/run-local.sh all-reduce (mpirun, same layout)"
mkdir -p "$scratch/local"
COLLBENCH_RESULTS=$scratch/local timeout "$job_timeout" scripts/run-local.sh all-reduce \
    --backend mpi --ranks 2 -e 64K -n 5 -w 1 >"$scratch/local.out" 2>&1 ||
    fail "scripts/run-local.sh exited with $? (output: $scratch/local.out)"
local_dirs=("$scratch/local/"*)
[ ${#local_dirs[@]} = 1 ] || fail "scripts/run-local.sh made ${#local_dirs[@]} folders"
dir=${local_dirs[0]}
echo "     ${dir##*/}"
results_check_run "$dir" all_reduce 2 mpirun local || fail "run-local: results folder ${dir##*/} (above)"
checks=$((checks + 1))

status=0
echo "slurm-test: $checks checks passed in $((SECONDS - t0)) s" \
    "(packages and build $((t_ready - t0)) s, cluster up $((t_up - t_ready)) s, jobs $((t_jobs - t_up)) s)"

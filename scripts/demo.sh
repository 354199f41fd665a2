#!/usr/bin/env bash
# The main job on this machine: builds collbench in release mode and runs the
# all-reduce, broadcast and chunked all-reduce sweeps, with NCCL over every
# local GPU, or with MPI on host memory where there is no GPU, over one rank
# per core (2 to 4 ranks).
# Reports go to results/demo/ (JSON and CSV); the tables go to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
collbench_install_packages
collbench_require_cargo

cargo build --release --quiet -p collbench -p analysis
bin=${CARGO_TARGET_DIR:-target}/release/collbench
analyze=${CARGO_TARGET_DIR:-target}/release/collbench-analyze
out=results/demo
mkdir -p "$out"

gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    gpus=$(nvidia-smi -L | grep -c '^GPU')
fi
if [ "$gpus" -gt 0 ]; then
    ranks=$gpus backend=nccl max=1G total=1G
    echo "== $gpus GPU(s): NCCL over one rank per GPU"
else
    # No more ranks than cores (at most 4, at least 2): a rank that waits
    # for a core shows the scheduler's tick (4 ms with 4 ranks on 2 cores,
    # whatever the message size), not the library.
    cores=$(nproc 2>/dev/null || echo 1)
    ranks=$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))
    backend=mpi max=32M total=64M
    why="one per core"
    [ "$cores" -lt 2 ] && why="oversubscribed on $cores core: timings are a scheduler's, not MPI's"
    echo "== no GPU: MPI on host memory over $ranks ranks ($why)"
fi
launch=(mpirun --bind-to none -n "$ranks" "$bin")

"${launch[@]}" info
for bench in all-reduce broadcast; do
    echo
    "${launch[@]}" "$bench" --backend "$backend" -b 8 -e "$max" -f 4 -n 20 -w 5 -c 1 \
        --out "$out/$bench.json" --csv "$out/$bench.csv" --force
done
echo
"${launch[@]}" chunked-all-reduce --backend "$backend" --total-bytes "$total" -b 64K -e "$total" -f 4 -n 10 -w 2 -c 1 \
    --out "$out/chunked-all-reduce.json" --csv "$out/chunked-all-reduce.csv" --force

echo
echo "== collbench-analyze fit $out/all-reduce.json"
"$analyze" fit "$out/all-reduce.json"
# The DDP bucket model needs a measured layer profile (scripts/profile_layers.py):
# the committed per-parameter GPT-2 large one (results/profiles/; the per-block
# one under per-block/ forms the same buckets for every cap below 75 MiB).
# The --comm sweep above measures up to $max, so the larger buckets are
# extrapolated, and ddp says which.
profile=results/profiles/gpt2-large-b4-s1024-fp32-h100-params.csv
if [ -f "$profile" ]; then
    echo
    echo "== collbench-analyze ddp --profile $profile --comm $out/all-reduce.json"
    "$analyze" ddp --profile "$profile" --comm "$out/all-reduce.json" --plot "$out/ddp.svg" --force
else
    echo
    echo "(no layer profile at $profile: skipping the DDP bucket-size model)"
fi
echo
echo "reports: $out/"

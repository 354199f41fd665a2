#!/usr/bin/env bash
# The DDP bucket-model validation loop on CPU with gloo: profile, all-reduce sweep, DDP sweep, then the model against the measurements.
#
# Usage: scripts/ddp-validate-cpu.sh [OUTDIR]      (default results/ddp-validate-cpu)
# Needs PyTorch (python3 -m torch.distributed.run) and, for the last step,
# collbench-analyze (built here with `cargo build --release -p analysis`, or
# on PATH); without it the measurements are kept and the command to run
# later is printed. Knobs (environment, defaults in brackets):
#   PROCS [4] processes, THREADS [3] torch threads each, MODEL [gpt2-small],
#   BATCH [1], SEQ [256], CAPS [1,2,5,10,25,50,100,200,500] (MiB),
#   ROUNDS [3], WARMUP [2], ITERS [4], PYTHON [python3], and for the model
#   COMPUTE_SLOWDOWN [1] (--compute-slowdown; calibrate it on another run).
# The model gets DDP's gradient-pass speed (--grad-copy-gbps) from the
# `gradient copy:` line of the profile the sweep wrote.
# Leave a few cores free for gloo's own threads: PROCS x THREADS below the
# core count (4 x 3 on 16 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/ddp-validate-cpu}
PROCS=${PROCS:-4} THREADS=${THREADS:-3} MODEL=${MODEL:-gpt2-small}
BATCH=${BATCH:-1} SEQ=${SEQ:-256} CAPS=${CAPS:-1,2,5,10,25,50,100,200,500}
ROUNDS=${ROUNDS:-3} WARMUP=${WARMUP:-2} ITERS=${ITERS:-4} PYTHON=${PYTHON:-python3}
mkdir -p "$out"
export OMP_NUM_THREADS=$THREADS
run() { "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$PROCS" "$@"; }
stage() { # name, then the command; logs to OUTDIR/name.log and times it
    local name=$1; shift
    local start=$SECONDS
    echo "== $name" >&2
    "$@" > "$out/$name.log" 2>&1 || { echo "$name failed; see $out/$name.log" >&2; tail -n 20 "$out/$name.log" >&2; exit 1; }
    echo "$name: $((SECONDS - start)) s" | tee -a "$out/stages.txt" >&2
}
model=(--model "$MODEL" --batch-size "$BATCH" --seq-len "$SEQ" --threads "$THREADS" --warmup "$WARMUP")
: > "$out/stages.txt"
stage profile run scripts/profile_layers.py "${model[@]}" --device cpu --granularity param \
    --iters $((ITERS * 3)) -o "$out/profile.csv" --force
stage allreduce run scripts/allreduce_bench.py --backend gloo --threads "$THREADS" \
    -b 1K -e 512M -n 10 -w 3 -R 2 -o "$out/allreduce.csv" --force
stage sweep run scripts/ddp_bucket_sweep.py --backend gloo "${model[@]}" --iters "$ITERS" \
    --rounds "$ROUNDS" --bucket-cap-mb "$CAPS" --paired -o "$out/sweep.csv" \
    --profile-out "$out/profile-in-sweep.csv" --force

analyze=target/release/collbench-analyze
[ -x "$analyze" ] || analyze=$(command -v collbench-analyze || true)
gbps=$(sed -n 's/^# gradient copy:.*--grad-copy-gbps \([0-9.eE+-]*\).*/\1/p' "$out/profile-in-sweep.csv" | head -n 1)
[ -n "$gbps" ] || { echo "no gradient copy line in $out/profile-in-sweep.csv" >&2; exit 1; }
cmd=(ddp --profile "$out/profile-in-sweep.csv" --comm "$out/allreduce.csv" --world-size "$PROCS"
     --measured "$out/sweep.csv" --grad-copy-gbps "$gbps"
     --compute-slowdown "${COMPUTE_SLOWDOWN:-1}")
if [ -z "$analyze" ]; then
    echo "collbench-analyze not found; on a machine with it run: collbench-analyze ${cmd[*]}" >&2
    exit 0
fi
"$analyze" "${cmd[@]}" --plot "$out/ddp.svg" --force | tee "$out/ddp.txt"
"$analyze" "${cmd[@]}" --json > "$out/ddp.json"

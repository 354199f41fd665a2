#!/usr/bin/env bash
# The sharded-model validation loop on CPU with gloo: layer profile, gloo curves of the four collectives, real DDP / ZeRO-1 / FSDP training steps, then zero and fsdp against them.
#
# Usage: scripts/shard-validate-cpu.sh [OUTDIR]      (default results/shard-validate-cpu)
# Needs PyTorch (python3 -m torch.distributed.run) and collbench-analyze
# (target/release, or on PATH). Knobs (environment, defaults in brackets):
#   PROCS [2] processes, THREADS [1] torch threads each, MODEL [gpt2-mini],
#   BATCH [4], SEQ [128], WARMUP [3], ITERS [10], ROUNDS [3], PYTHON [python3],
#   CURVE_ITERS [40] timed calls per size and round of each collective curve
#   (gloo's small calls have heavy-tailed times on shared cores: their means,
#   which the model charges per call, need many samples).
# The layer profile the model uses is measured by the training processes,
# in each round right before the strategies (profile-in-train.csv), so it
# sees the machine as the steps do; profile_layers.py's own profile
# (profile.csv, taken first) is kept beside it.
# The optimizer step's time and one slowdown factor F = G (compute and
# communication slowing each other) are calibrated on the DDP run alone
# (scripts/shard_calibrate.py) and then used for every strategy; the MAPE
# over the strategies and their measured ranking are in OUTDIR/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/shard-validate-cpu}
PROCS=${PROCS:-2} THREADS=${THREADS:-1} MODEL=${MODEL:-gpt2-mini}
BATCH=${BATCH:-4} SEQ=${SEQ:-128} WARMUP=${WARMUP:-3} ITERS=${ITERS:-10} ROUNDS=${ROUNDS:-3}
CURVE_ITERS=${CURVE_ITERS:-40}
PYTHON=${PYTHON:-python3}
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
stage profile run scripts/profile_layers.py "${model[@]}" --device cpu --iters "$ITERS" \
    -o "$out/profile.csv" --force
for c in all_reduce all_gather reduce_scatter broadcast; do
    stage "$c" run scripts/allreduce_bench.py --backend gloo --threads "$THREADS" --collective "$c" \
        -b 1K -e 64M -n "$CURVE_ITERS" -w 3 -R 2 -o "$out/$c.csv" --force
done
stage train run scripts/shard_train.py --backend gloo "${model[@]}" --iters "$ITERS" \
    --rounds "$ROUNDS" --strategy ddp,zero1,fsdp --profile-out "$out/profile-in-train.csv" \
    -o "$out/steps.csv" --force

analyze=target/release/collbench-analyze
[ -x "$analyze" ] || analyze=$(command -v collbench-analyze)
"$PYTHON" scripts/shard_calibrate.py --analyze "$analyze" --dir "$out" --world-size "$PROCS" \
    | tee "$out/summary.txt"

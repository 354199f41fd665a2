#!/usr/bin/env bash
# The plan-model validation on CPU with gloo: per-degree layer profiles, gloo curves and real tensor × pipeline × data parallel training steps of a small GPT, then `collbench-analyze plan` against them.
#
# Usage: scripts/plan-validate-cpu.sh [OUTDIR]   (default results/plan-validate-cpu)
# Needs PyTorch with torch.distributed.pipelining (>= 2.6) and
# collbench-analyze (target/release, or on PATH). Knobs (environment,
# defaults in brackets): PROCS [2] ranks, MODEL [gpt2-mini], SEQ [128],
# GLOBAL [8] samples per step, RUNS [2x1x1/1,2x1x1/2,1x2x1/1,1x2x1/2,
# 1x2x1/4,1x2x1/2/1f1b,1x2x1/4/1f1b,1x1x2/1,1x1x2/2] configurations
# TPxPPxDP/M[/SCHEDULE] (tp_train.py --runs),
# SIZES [2,4,8] micro-batch sizes profiled (every samples-per-micro-batch
# of RUNS), TPS [1,2] degrees profiled, WARMUP [3], ITERS [10],
# CURVE_ITERS [40], OTHERS_MAX [0.05], RETRIES [2], PYTHON [python3].
# Every process runs one torch thread (OMP_NUM_THREADS=1). The profiles
# are taken twice: by PROCS processes at once (profile_layers.py under
# torchrun: each iteration the slowest rank's; profile-tpK.csv), as every
# rank computes in the tp and dp runs, and by one process alone
# (profile-alone-tpK.csv), as a pipeline stage computes while the other
# waits; one file per degree merges the sizes. Prints the comparison with
# the first in OUTDIR/summary.txt, and keeps the one with the second in
# OUTDIR/summary-alone.txt. The training job profiles the model too,
# right before its runs, both ways (tp_train.py --profile-sizes,
# profile-intrain-tpK.csv and profile-intrain-alone-tpK.csv), compared in
# OUTDIR/summary-intrain.txt and summary-intrain-alone.txt. On a machine shared with other work, run it
# under `nice -n -19` (as root) so that the others take less of its cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/plan-validate-cpu}
PROCS=${PROCS:-2} MODEL=${MODEL:-gpt2-mini} SEQ=${SEQ:-128} GLOBAL=${GLOBAL:-8}
RUNS=${RUNS:-2x1x1/1,2x1x1/2,1x2x1/1,1x2x1/2,1x2x1/4,1x2x1/2/1f1b,1x2x1/4/1f1b,1x1x2/1,1x1x2/2} SIZES=${SIZES:-2,4,8} TPS=${TPS:-1,2}
WARMUP=${WARMUP:-3} ITERS=${ITERS:-10} CURVE_ITERS=${CURVE_ITERS:-40}
OTHERS_MAX=${OTHERS_MAX:-0.05} RETRIES=${RETRIES:-2} PYTHON=${PYTHON:-python3}
mkdir -p "$out"
export OMP_NUM_THREADS=1
run() { "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$PROCS" "$@"; }
stage() { # name, then the command; logs to OUTDIR/name.log and times it
    local name=$1; shift
    local start=$SECONDS
    echo "== $name" >&2
    "$@" > "$out/$name.log" 2>&1 || { echo "$name failed; see $out/$name.log" >&2; tail -n 20 "$out/$name.log" >&2; exit 1; }
    echo "$name: $((SECONDS - start)) s" | tee -a "$out/stages.txt" >&2
}
: > "$out/stages.txt"
IFS=, read -ra tps <<< "$TPS"
IFS=, read -ra sizes <<< "$SIZES"
merge() { # prefix tp: one file per degree (plan reads one per degree), every
    # size's rows under the column line; each size's own file, with its
    # comments, stays.
    local prefix=$1 tp=$2 first=$out/$1$2-b${sizes[0]}.csv
    { echo "# profile_layers.py --tp $tp at micro-batch sizes $SIZES: the rows of" \
           "$(for b in "${sizes[@]}"; do printf '%s%s-b%s.csv ' "$prefix" "$tp" "$b"; done)(their comments there)"
      grep -v '^#' "$first" | head -n 1
      for b in "${sizes[@]}"; do grep -v '^#' "$out/$prefix$tp-b$b.csv" | tail -n +2; done
    } > "$out/$prefix$tp.csv"
}
profile=(scripts/profile_layers.py --model "$MODEL" --untied-head --seq-len "$SEQ" --device cpu
         --threads 1 --warmup "$WARMUP" --iters "$ITERS" --force)
for tp in "${tps[@]}"; do
    for b in "${sizes[@]}"; do
        # PROCS processes at once (each iteration the slowest rank's), as
        # the flat runs compute; and one process alone, as a pipeline
        # stage computes while the other waits.
        stage "profile-tp$tp-b$b" run "${profile[@]}" --batch-size "$b" --tp "$tp" \
            -o "$out/profile-tp$tp-b$b.csv"
        stage "profile-alone-tp$tp-b$b" "$PYTHON" "${profile[@]}" --batch-size "$b" --tp "$tp" \
            -o "$out/profile-alone-tp$tp-b$b.csv"
    done
    merge profile-tp "$tp"
    merge profile-alone-tp "$tp"
done
stage all_reduce run scripts/allreduce_bench.py --backend gloo --threads 1 --collective all_reduce \
    -b 1K -e 32M -n "$CURVE_ITERS" -w 3 -R 2 -o "$out/all_reduce.csv" --force
stage train run scripts/tp_train.py --model "$MODEL" --seq-len "$SEQ" --global-batch "$GLOBAL" \
    --runs "$RUNS" --sendrecv --profile-sizes "$SIZES" --profile-tps "$TPS" --warmup "$WARMUP" \
    --iters "$ITERS" --others-max "$OTHERS_MAX" --retries "$RETRIES" --out-dir "$out"
analyze=target/release/collbench-analyze
[ -x "$analyze" ] || analyze=$(command -v collbench-analyze)
"$PYTHON" scripts/plan_compare.py --analyze "$analyze" --dir "$out" --world-size "$PROCS" \
    | tee "$out/summary.txt"
for kind in alone intrain intrain-alone; do
    "$PYTHON" scripts/plan_compare.py --analyze "$analyze" --dir "$out" --world-size "$PROCS" \
        --profile-prefix "profile-$kind-tp" > "$out/summary-$kind.txt"
done
echo "(the same with the profiles taken by one process alone, and by the training job itself" \
     "at once and alone: $out/summary-{alone,intrain,intrain-alone}.txt)"

#!/usr/bin/env bash
# The pipeline-model validation on CPU with gloo: profile, send/receive curve and real torch.distributed.pipelining steps in one job, then `collbench-analyze pipeline` against them.
#
# Usage: scripts/pipeline-validate-cpu.sh [OUTDIR]    (default results/pipeline-validate-cpu)
# Needs PyTorch with torch.distributed.pipelining (>= 2.6: shapes inferred at
# run time) and collbench-analyze (target/release, or on PATH). Knobs
# (environment, defaults in brackets): PROCS [2] stages, one process each,
# GLOBAL [32] samples per step, MICRO [2,4,8,16,32] micro-batch counts,
# UNEVEN [6,2 for 2 stages, 5,1,1,1 for 4; one entry per stage] split timed at UNEVEN_M [8] micro-batches, ITERS [5],
# WARMUP [2], OTHERS_MAX [0.05] share of the cores other processes may use
# before a unit is timed again, RETRIES [2], PYTHON [python3]. Prints the
# comparison and keeps it in OUTDIR/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/pipeline-validate-cpu}
PROCS=${PROCS:-2} GLOBAL=${GLOBAL:-32} MICRO=${MICRO:-2,4,8,16,32}
[[ $PROCS =~ ^[1-9][0-9]*$ ]] || { echo "PROCS=$PROCS: not a number of stages (2, 4, ...)" >&2; exit 2; }
case $PROCS in 2) default_uneven=6,2 ;; 4) default_uneven=5,1,1,1 ;; *) default_uneven= ;; esac
UNEVEN=${UNEVEN:-$default_uneven}
[ -n "$UNEVEN" ] || { echo "PROCS=$PROCS: set UNEVEN to an uneven split of the 8 layers, one entry per stage" >&2; exit 2; }
IFS=, read -ra uneven_parts <<< "$UNEVEN"
[ "${#uneven_parts[@]}" = "$PROCS" ] \
    || { echo "UNEVEN=$UNEVEN: ${#uneven_parts[@]} stages, but PROCS=$PROCS (one entry per stage)" >&2; exit 2; }
UNEVEN_M=${UNEVEN_M:-8} ITERS=${ITERS:-5} WARMUP=${WARMUP:-2} PYTHON=${PYTHON:-python3}
OTHERS_MAX=${OTHERS_MAX:-0.05} RETRIES=${RETRIES:-2}
mkdir -p "$out"
export OMP_NUM_THREADS=1
"$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$PROCS" \
    scripts/pipeline_train.py --out-dir "$out" --global-batch "$GLOBAL" --microbatches "$MICRO" \
    --uneven "$UNEVEN" --uneven-microbatches "$UNEVEN_M" --iters "$ITERS" --warmup "$WARMUP" \
    --others-max "$OTHERS_MAX" --retries "$RETRIES" > "$out/train.log" 2>&1 || { tail -n 30 "$out/train.log" >&2; exit 1; }
analyze=target/release/collbench-analyze
[ -x "$analyze" ] || analyze=$(command -v collbench-analyze)
"$PYTHON" scripts/pipeline_compare.py --analyze "$analyze" --dir "$out" --global-batch "$GLOBAL" \
    | tee "$out/summary.txt"

#!/usr/bin/env python3
"""How well `collbench-analyze predict` extends small runs to larger ones.

Given nccl-tests logs of one cluster at several node counts, it fits on the
logs of at most --max-fit-gpus ranks, predicts every larger log's world size
and node count at the sizes that log measured, and reports per scale the
mean and largest relative error of the predicted time (out-of-place, mean
time) and how often the predicted interval covers the measurement.

    python3 scripts/predict_accuracy.py [--analyze BIN] [--max-fit-gpus 16] \
        [--collective all_reduce] [--min-bytes SIZE] [--json] LOG...

Lines before a log's first `#` line that start with `[` (launcher and UCX
warnings such as `[1623231099.72] [g0037:1915:0] ucp_context.c ... WARN`)
are dropped from a temporary copy first: collbench-analyze would take a
file starting with `[` for JSON. Nothing else is changed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LARGE_BYTES = 64 << 10


def run(command):
    """Runs a command and returns its stdout; a failure ends the script with its stderr."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


def clean_copy(path, folder):
    """A copy of `path` without the `[`-prefixed lines before its first `#` line."""
    with open(path, encoding="utf-8", errors="replace") as source:
        lines = source.readlines()
    first_hash = next((i for i, line in enumerate(lines) if line.startswith("#")), 0)
    kept = [l for i, l in enumerate(lines) if i >= first_hash or not l.startswith("[")]
    copy = os.path.join(folder, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as out:
        out.writelines(kept)
    return copy


def import_report(analyze, log, folder, collective):
    """Imports one log into a collbench report and returns (path, report)."""
    out = os.path.join(folder, os.path.basename(log) + ".json")
    text = run([analyze, "import", "-o", out, "--collective", collective, log])
    written = [l.split("wrote ", 1)[1].split(": ", 1)[0] for l in text.splitlines() if l.startswith("wrote ")]
    if len(written) != 1:
        sys.exit(f"{log}: expected one run, import wrote {len(written)}")
    with open(written[0], encoding="utf-8") as f:
        return written[0], json.load(f)


def measured_times(report, collective, min_bytes):
    """{bytes: mean µs} of the out-of-place rows of `collective`."""
    return {
        r["bytes"]: r["time_us"]["mean"]
        for r in report["results"]
        if r["collective"] == collective and r["placement"] == "out" and r["bytes"] >= max(min_bytes, 1)
    }


def score(predictions, measured):
    """Errors and coverage of `predictions` against `measured`."""
    rows = []
    for p in predictions:
        m = measured[p["bytes"]]
        rows.append(
            {
                "bytes": p["bytes"],
                "measured_us": m,
                "predicted_us": p["predicted_us"],
                "rel_error": (p["predicted_us"] - m) / m,
                "covered": p["low_us"] <= m <= p["high_us"],
            }
        )
    errors = [abs(r["rel_error"]) for r in rows]
    large = [abs(r["rel_error"]) for r in rows if r["bytes"] >= LARGE_BYTES]
    return {
        "sizes": len(rows),
        "mean_abs_error": statistics.mean(errors),
        "max_abs_error": max(errors),
        "mean_abs_error_from_64_kib": statistics.mean(large) if large else None,
        "coverage": sum(r["covered"] for r in rows) / len(rows),
        "points": rows,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", metavar="LOG")
    parser.add_argument("--analyze", default="target/release/collbench-analyze")
    parser.add_argument("--max-fit-gpus", type=int, default=16)
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--min-bytes", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.max_fit_gpus < 1:
        sys.exit(f"--max-fit-gpus {args.max_fit_gpus}: not a rank count (accepted: 1 or more)")
    with tempfile.TemporaryDirectory() as folder:
        runs = []
        for log in args.logs:
            path, report = import_report(args.analyze, clean_copy(log, folder), folder, args.collective)
            env = report["environment"]
            if not env.get("nodes"):
                sys.exit(f"{log}: no node count (the log has no # Rank lines with hosts)")
            runs.append((log, path, report, env["world_size"], env["nodes"]))
        fit = [r for r in runs if r[3] <= args.max_fit_gpus]
        targets = sorted((r for r in runs if r[3] > args.max_fit_gpus), key=lambda r: r[3])
        if not fit or not targets:
            sys.exit(f"need logs of at most and of more than {args.max_fit_gpus} ranks (given: {sorted(r[3] for r in runs)})")
        results = []
        for log, _, report, world, nodes in targets:
            measured = measured_times(report, args.collective, args.min_bytes)
            sizes = ",".join(str(b) for b in sorted(measured))
            command = [args.analyze, "predict", *[r[1] for r in fit], "--collective", args.collective]
            command += ["--world-size", str(world), "--nodes", str(nodes), "--sizes", sizes, "--json"]
            out = json.loads(run(command))
            result = score(out["predictions"], measured)
            result.update({"log": log, "world_size": world, "nodes": nodes, "basis": out["basis"]})
            results.append(result)
    fitted = [f"{os.path.basename(r[0])} ({r[3]} ranks, {r[4]} nodes)" for r in fit]
    if args.json:
        print(json.dumps({"fitted": fitted, "targets": results}, indent=2))
        return
    print("fitted on: " + ", ".join(fitted))
    print(f"{'target':<22} {'sizes':>5} {'mean |err|':>10} {'max |err|':>9} {'mean >=64K':>10} {'coverage':>8}")
    for r in results:
        large = r["mean_abs_error_from_64_kib"]
        print(
            f"{r['world_size']:>4} ranks, {r['nodes']:>2} nodes   {r['sizes']:>5} {r['mean_abs_error'] * 100:>9.1f}% "
            f"{r['max_abs_error'] * 100:>8.1f}% {'-' if large is None else f'{large * 100:.1f}%':>10} {r['coverage'] * 100:>7.0f}%"
        )


if __name__ == "__main__":
    main()

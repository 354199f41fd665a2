#!/usr/bin/env python3
"""How well `collbench-analyze predict` extends runs on few nodes to more nodes, held out.

Given nccl-tests logs of one cluster at several node counts (one collective),
it fits on at most two node counts at a time (one node and the smallest
multi-node count; then each pair of consecutive multi-node counts), predicts
the logs at 2x, 4x and 8x the largest fitted node count at the sizes they
measured, and prints per fit, target and size band (<= 8 MiB, larger) the
mean and worst relative error of the predicted time (out-of-place, mean
time) and how often the predicted interval holds the measurement; then the
same per extrapolation factor over every fit. Then, without the model, how
smooth the logs themselves are in node count: each node count measured
with half and twice as many nodes (same GPUs per node; both across nodes,
since one node is another tier) is "predicted" by
the geometric mean of those two at each size, and scored the same way. A
model that follows node count smoothly can hardly do better at 2x and
beyond than this interpolation between measured neighbours does; where it
misses by 10 %, so do the logs between themselves.

    python3 scripts/predict_accuracy.py [--analyze BIN] [--collective all_reduce] \
        [--json] LOG...
    python3 scripts/predict_accuracy.py --reports [--collective all_reduce] [--json] REPORT...
    python3 scripts/predict_accuracy.py --from SAVED.json [--from SAVED.json ...]

`--reports` reads collbench reports (each recording its node count, as
collbench does under Slurm or mpirun across hosts) instead of logs, as they
are (scripts/predict-validate-slurm.sh runs them on the local Slurm test
cluster). `--json` prints every predicted size with its measurement; `--from` prints
the table again from such a saved output (the committed ones are in
scripts/data/predict_accuracy/), without the logs or the binary; given
several times, each file's table and then every target pooled.

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

BAND_EDGE = 8 << 20
FACTORS = (2, 4, 8)
NEIGHBOURS_TITLE = "without the model: each node count from the geometric mean of its measured half and twice, per size:"


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
    copy = os.path.join(folder, os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path))
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


def read_report(path):
    """A collbench report as it is; one line naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"--reports {path}: not a readable JSON report ({e})")
    if "schema_version" not in report:
        sys.exit(f"--reports {path}: not a collbench report (no schema_version); give logs without --reports")
    return report


def measured_times(report, collective):
    """{bytes: mean µs} of the out-of-place rows of `collective`."""
    return {
        r["bytes"]: r["time_us"]["mean"]
        for r in report["results"]
        if r["collective"] == collective and r["placement"] == "out" and r["bytes"] > 0
    }


def band_score(rows):
    """Mean and worst |error| and coverage of `rows`, or None when empty."""
    if not rows:
        return None
    errors = [abs(r["rel_error"]) for r in rows]
    return {
        "sizes": len(rows),
        "mean_abs_error": statistics.mean(errors),
        "max_abs_error": max(errors),
        "coverage": sum(r["covered"] for r in rows) / len(rows),
        "median_width": statistics.median((r["high_us"] - r["low_us"]) / r["predicted_us"] for r in rows),
    }


def score(predictions, measured):
    """Per-size rows and per-band scores of `predictions` against `measured`."""
    rows = []
    for p in predictions:
        m = measured[p["bytes"]]
        rows.append(
            {
                "bytes": p["bytes"],
                "measured_us": m,
                "predicted_us": p["predicted_us"],
                "low_us": p["low_us"],
                "high_us": p["high_us"],
                "algorithm": p.get("algorithm"),
                "protocol": p.get("protocol"),
                "rel_error": (p["predicted_us"] - m) / m,
                "covered": p["low_us"] <= m <= p["high_us"],
            }
        )
    return {
        "small": band_score([r for r in rows if r["bytes"] <= BAND_EDGE]),
        "large": band_score([r for r in rows if r["bytes"] > BAND_EDGE]),
        "all": band_score(rows),
        "points": rows,
    }


def neighbour_scores(runs, collective):
    """Per node count with measured half and twice: the geometric mean of those two against it, per band.

    Where several logs share a node count and GPUs per node, the first given stands for it.
    """
    by_shape = {}
    for r in runs:
        by_shape.setdefault((r["nodes"], r["world_size"] // r["nodes"]), r)
    out = []
    for (nodes, per_node), run in sorted(by_shape.items()):
        below, above = by_shape.get((nodes // 2, per_node)), by_shape.get((nodes * 2, per_node))
        if nodes < 4 or nodes % 2 or below is None or above is None:
            continue
        measured = measured_times(run["report"], collective)
        low, high = measured_times(below["report"], collective), measured_times(above["report"], collective)
        rows = []
        for size, time in sorted(measured.items()):
            if size in low and size in high:
                guess = (low[size] * high[size]) ** 0.5
                rows.append({"bytes": size, "rel_error": (guess - time) / time})
        errors = lambda band: [abs(x["rel_error"]) for x in rows if (x["bytes"] <= BAND_EDGE) == (band == "small")]
        entry = {"target": f"{nodes}x{per_node}", "between": [f"{nodes // 2}x{per_node}", f"{nodes * 2}x{per_node}"]}
        for band in ("small", "large"):
            e = errors(band)
            entry[band] = {"sizes": len(e), "mean_abs_error": statistics.mean(e), "max_abs_error": max(e)} if e else None
        out.append(entry)
    return out


def print_neighbours(neighbours, rows=True):
    """The model-free interpolation table: a row per node count (unless `rows` is false), then pooled."""
    if not neighbours:
        return
    def band(b):
        if b is None:
            return f"{'-':>5} {'-':>9} {'-':>9}"
        return f"{b['sizes']:>5} {b['mean_abs_error'] * 100:>8.1f}% {b['max_abs_error'] * 100:>8.1f}%"
    def pooled(key):
        rows = [n[key] for n in neighbours if n[key]]
        sizes = sum(b["sizes"] for b in rows)
        if not sizes:
            return None
        mean = sum(b["mean_abs_error"] * b["sizes"] for b in rows) / sizes
        return {"sizes": sizes, "mean_abs_error": mean, "max_abs_error": max(b["max_abs_error"] for b in rows)}
    header = f"{'sizes':>5} {'mean|err|':>9} {'worst':>9}"
    print(NEIGHBOURS_TITLE)
    print(f"{'between':<22} {'target':<7}      <= 8 MiB: {header}   > 8 MiB: {header}")
    for n in neighbours if rows else []:
        print(f"{' and '.join(n['between']):<22} {n['target']:<7}             {band(n['small'])}            {band(n['large'])}")
    print(f"{'pooled':<22} {'':<7}             {band(pooled('small'))}            {band(pooled('large'))}")


def fit_sets(runs):
    """The node-count sets fitted: {1, smallest multi-node} and each consecutive multi-node pair."""
    multi = sorted({r["nodes"] for r in runs if r["nodes"] > 1})
    sets = []
    if any(r["nodes"] == 1 for r in runs) and multi:
        sets.append((1, multi[0]))
    sets.extend(zip(multi, multi[1:]))
    return sets


def fmt_band(b):
    if b is None:
        return f"{'-':>5} {'-':>9} {'-':>9} {'-':>8} {'-':>6}"
    return (
        f"{b['sizes']:>5} {b['mean_abs_error'] * 100:>8.1f}% {b['max_abs_error'] * 100:>8.1f}% "
        f"{b['coverage'] * 100:>7.0f}% {b['median_width'] * 100:>5.0f}%"
    )


def summary(results):
    """Per extrapolation factor and band: pooled mean and worst |error| and coverage."""
    out = {}
    for factor in FACTORS:
        for band in ("small", "large"):
            rows = [
                p
                for r in results
                if r["factor"] == factor
                for p in r["points"]
                if (p["bytes"] <= BAND_EDGE) == (band == "small")
            ]
            out[f"{factor}x {band}"] = band_score(rows)
    return out


def print_table(results, totals):
    """The table: a row per fit and target, then per extrapolation factor."""
    header = f"{'sizes':>5} {'mean|err|':>9} {'worst':>9} {'covered':>8} {'width':>6}"
    print(f"{'fitted (nodes x GPUs)':<22} {'target':<7} {'x':>2}   <= 8 MiB: {header}   > 8 MiB: {header}")
    for r in results:
        print(
            f"{', '.join(r['fitted']):<22} {r['target']:<7} {r['factor']:>2}   "
            f"          {fmt_band(r['small'])}            {fmt_band(r['large'])}"
        )
    print("over every fit, per extrapolation factor:")
    for factor in FACTORS:
        small, large = totals[f"{factor}x small"], totals[f"{factor}x large"]
        print(f"{'':<22} {'':<7} {factor:>2}   {'':>10}{fmt_band(small)}            {fmt_band(large)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", metavar="LOG")
    parser.add_argument(
        "--from",
        dest="saved",
        metavar="SAVED.json",
        action="append",
        help="print a saved output's table; repeated, each file's and then every file's targets pooled",
    )
    parser.add_argument("--analyze", default="target/release/collbench-analyze")
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reports", action="store_true", help="the inputs are collbench reports, not logs")
    args = parser.parse_args()
    if args.saved:
        if args.logs:
            sys.exit("--from: prints a saved output; give no LOG with it")
        pooled, pooled_neighbours = [], []
        for path in args.saved:
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
            targets = saved["targets"]
            if len(args.saved) > 1:
                print(f"== {path}")
            print_table(targets, summary(targets))
            print_neighbours(saved.get("neighbours", []))
            pooled.extend(targets)
            pooled_neighbours.extend(saved.get("neighbours", []))
        if len(args.saved) > 1:
            print(f"== every target of the {len(args.saved)} files, pooled per extrapolation factor:")
            print_table([], summary(pooled))
            print_neighbours(pooled_neighbours, rows=False)
        return
    if not args.logs:
        sys.exit("LOG: give nccl-tests logs of one cluster at two or more node counts (or --from SAVED.json)")
    with tempfile.TemporaryDirectory() as folder:
        runs = []
        for log in args.logs:
            if args.reports:
                path, report = log, read_report(log)
            else:
                path, report = import_report(args.analyze, clean_copy(log, folder), folder, args.collective)
            env = report["environment"]
            if not env.get("nodes"):
                sys.exit(f"{log}: no node count (a log without # Rank lines with hosts, a report without environment.nodes)")
            runs.append(
                {"log": log, "path": path, "report": report, "world_size": env["world_size"], "nodes": env["nodes"]}
            )
        sets = fit_sets(runs)
        if not sets:
            sys.exit("need logs of at least two node counts, one of them multi-node")
        results = []
        for fitted_nodes in sets:
            fit = [r for r in runs if r["nodes"] in fitted_nodes]
            largest = max(fitted_nodes)
            per_node = {r["world_size"] // r["nodes"] for r in fit if r["nodes"] == largest}
            for factor in FACTORS:
                for target in (r for r in runs if r["nodes"] == largest * factor):
                    if target["world_size"] // target["nodes"] not in per_node:
                        continue
                    measured = measured_times(target["report"], args.collective)
                    sizes = ",".join(str(b) for b in sorted(measured))
                    command = [args.analyze, "predict", *[r["path"] for r in fit], "--collective", args.collective]
                    command += ["--world-size", str(target["world_size"]), "--nodes", str(target["nodes"])]
                    command += ["--sizes", sizes, "--json"]
                    out = json.loads(run(command))
                    result = score(out["predictions"], measured)
                    result.update(
                        {
                            "fitted": [f"{r['nodes']}x{r['world_size'] // r['nodes']}" for r in fit],
                            "target": f"{target['nodes']}x{target['world_size'] // target['nodes']}",
                            "factor": factor,
                            "basis": out["basis"],
                        }
                    )
                    results.append(result)
    totals = summary(results)
    neighbours = neighbour_scores(runs, args.collective)
    if args.json:
        print(json.dumps({"targets": results, "summary": totals, "neighbours": neighbours}, indent=2))
        return
    print_table(results, totals)
    print_neighbours(neighbours)

if __name__ == "__main__":
    main()

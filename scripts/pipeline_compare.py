#!/usr/bin/env python3
"""Compare `collbench-analyze pipeline` with measured pipeline steps.

Reads DIR/profile.csv, DIR/sendrecv.csv and DIR/measured.csv (written by
scripts/pipeline_train.py), runs the analysis for the even split over every
measured schedule and micro-batch count and for the uneven split, and
prints: predicted against measured throughput per run, the MAPE, the best
micro-batch count of each schedule (measured and predicted, and whether
they are within one step of the sweep), and the uneven split's slowdown
(measured and predicted, both against the even split that was measured).
Where measured.csv has an `others_cpu` column, each run shows the share
of the cores other processes used while it was timed, and a warning names
the runs where that share exceeds --others-max.
"""
import argparse
import csv
import json
import os
import sys

from profile_layers import positive_int
from shard_calibrate import run_analyze


def analyze(exe, d, stages, global_batch, schedules, microbatches, split=None, overhead=0.0):
    chunks = max(2, len(split.split("-")) // stages) if split else 2
    argv = [exe, "pipeline", "--profile", d + "/profile.csv", "--sendrecv", d + "/sendrecv.csv",
            "--stages", str(stages), "--global-batch", str(global_batch), "--chunks", str(chunks),
            "--schedule", ",".join(schedules), "--microbatches",
            ",".join(str(m) for m in microbatches), "--json",
            "--microbatch-overhead-s", repr(overhead)]
    if split:
        argv += ["--split", split.replace("-", ",")]
    return json.loads(run_analyze(argv, "pipeline_compare.py"))["runs"]


def others_text(row):
    """The run's others_cpu share as a percentage, or "-" where not measured."""
    value = (row.get("others_cpu") or "").strip()
    return "%.1f %%" % (100 * float(value)) if value else "-"


def disturbed_runs(rows, limit):
    """Labels of the runs whose others_cpu share exceeds `limit`."""
    return ["%s m=%s split %s (%s)" % (r["schedule"], r["microbatches"], r["split"],
                                       others_text(r))
            for r in rows if (r.get("others_cpu") or "").strip()
            and float(r["others_cpu"]) > limit]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--analyze", required=True, help="the collbench-analyze binary")
    p.add_argument("--dir", required=True, help="folder of pipeline_train.py's CSVs")
    p.add_argument("--global-batch", type=positive_int, default=32)
    p.add_argument("--overhead-grid", default="0,0.001,0.002,0.003,0.004,0.005,0.0075,0.01,0.015,0.02",
                   help="--microbatch-overhead-s values tried when calibrating on the first "
                        "schedule (seconds)")
    p.add_argument("--others-max", type=float, default=0.05,
                   help="share of the cores other processes may have used during a run "
                        "before it is flagged [0.05]")
    args = p.parse_args(argv)
    if not 0 <= args.others_max <= 1:
        p.error("--others-max %g is not a share of the cores between 0 and 1" % args.others_max)
    try:
        grid = [float(x) for x in args.overhead_grid.split(",")]
    except ValueError:
        grid = []
    if not grid or not all(0 <= x < 1e3 for x in grid):
        p.error("--overhead-grid %r is not a comma list of seconds of 0 or more, e.g. 0,0.001"
                % args.overhead_grid)
    for name in ("measured.csv", "profile.csv", "sendrecv.csv"):
        if not os.path.isfile(os.path.join(args.dir, name)):
            p.error("--dir %s: no %s there (pipeline_train.py writes it)" % (args.dir, name))
    with open(args.dir + "/measured.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    disturbed = disturbed_runs(rows, args.others_max)
    even = rows[0]["split"]
    stages = len(even.split("-"))
    # Splits of as many stages as the first, other than it: the uneven ones.
    uneven = []
    for r in rows:
        parts = r["split"].split("-")
        if r["split"] != even and len(parts) == stages and r["split"] not in uneven:
            uneven.append(r["split"])
    errors = []
    print("schedule     m  measured  predicted  error    others  (samples/s; split %s, "
          "interleaved in equal chunks; others: share of the cores other processes used)"
          % even)
    best = {}
    schedules = []
    for r in rows:
        if r["schedule"] not in schedules:
            schedules.append(r["schedule"])
    for schedule in schedules:
        # The schedule's first split is its even one (per chunk interleaved).
        split = [r["split"] for r in rows if r["schedule"] == schedule][0]
        mine = [r for r in rows if r["schedule"] == schedule and r["split"] == split]
        ms = [int(r["microbatches"]) for r in mine]
        runs = analyze(args.analyze, args.dir, stages, args.global_batch, [schedule], ms, split)
        predicted = {run["microbatches"]: run["throughput"] for run in runs}
        for r, m in zip(mine, ms):
            measured = float(r["throughput"])
            err = (predicted[m] - measured) / measured
            errors.append(abs(err))
            print("%-11s %3d %9.1f %10.1f %+6.1f %%  %6s" % (
                schedule, m, measured, predicted[m], 100 * err, others_text(r)))
        best_measured = max(mine, key=lambda r: float(r["throughput"]))
        best_predicted = max(predicted, key=predicted.get)
        i, j = ms.index(int(best_measured["microbatches"])), ms.index(best_predicted)
        best[schedule] = abs(i - j) <= 1
        print("%s: best m measured %s, predicted %d (%s)" % (
            schedule, best_measured["microbatches"], best_predicted,
            "within one step" if best[schedule] else "NOT within one step"))
    print("MAPE over %d runs: %.1f %%" % (len(errors), 100 * sum(errors) / len(errors)))
    if disturbed:
        print("WARNING: other processes used more than %.0f %% of the cores while %s ran: "
              "those times are not the pipeline's alone" % (
                  100 * args.others_max, ", ".join(disturbed)))
    # The framework's per-micro-batch work, calibrated on the first schedule
    # alone (the grid value with the smallest MAPE there), then used for
    # the others.
    def mape(schedule, overhead):
        split = [r["split"] for r in rows if r["schedule"] == schedule][0]
        mine = [r for r in rows if r["schedule"] == schedule and r["split"] == split]
        ms = [int(r["microbatches"]) for r in mine]
        runs = analyze(args.analyze, args.dir, stages, args.global_batch, [schedule], ms, split,
                       overhead)
        predicted = {run["microbatches"]: run["throughput"] for run in runs}
        errs = [abs(predicted[m] - float(r["throughput"])) / float(r["throughput"])
                for r, m in zip(mine, ms)]
        return sum(errs) / len(errs), len(errs)
    first = schedules[0]
    fitted = min(grid, key=lambda o: mape(first, o)[0])
    print("calibrated on %s alone: --microbatch-overhead-s %g (MAPE there %.1f %%)" % (
        first, fitted, 100 * mape(first, fitted)[0]))
    others = [mape(s, fitted) for s in schedules[1:]]
    if others:
        total = sum(e * n for e, n in others) / sum(n for _, n in others)
        print("with it, MAPE over the other schedules (%s): %.1f %% (without it: %.1f %%)" % (
            ", ".join(schedules[1:]), 100 * total,
            100 * sum(e * n for e, n in (mape(s, 0.0) for s in schedules[1:]))
            / sum(n for _, n in others)))
    # The pictures: the even split's measured points beside the predictions.
    with open(args.dir + "/measured-even.csv", "w", encoding="utf-8") as f:
        f.write("microbatches,throughput,schedule\n")
        f.writelines("%s,%s,%s\n" % (r["microbatches"], r["throughput"], r["schedule"])
                     for r in rows if r["split"] not in uneven)
    ms = sorted({int(r["microbatches"]) for r in rows if r["split"] == even})
    run_analyze([args.analyze, "pipeline", "--profile", args.dir + "/profile.csv",
                 "--sendrecv", args.dir + "/sendrecv.csv", "--stages", str(stages),
                 "--global-batch", str(args.global_batch), "--schedule", ",".join(schedules),
                 "--microbatches", ",".join(map(str, ms)),
                 "--measured", args.dir + "/measured-even.csv",
                 "--plot", args.dir + "/throughput.svg", "--diagram", args.dir + "/diagram.svg",
                 "--force"],  # redrawn over an earlier run's pictures
                "pipeline_compare.py")
    for split in uneven:
        r = [r for r in rows if r["split"] == split][0]
        m, schedule = int(r["microbatches"]), r["schedule"]
        base = [x for x in rows if x["split"] == even and x["schedule"] == schedule
                and int(x["microbatches"]) == m][0]
        measured = float(base["throughput"]) / float(r["throughput"])
        pe = analyze(args.analyze, args.dir, stages, args.global_batch, [schedule], [m], even)[0]
        pu = analyze(args.analyze, args.dir, stages, args.global_batch, [schedule], [m], split)[0]
        predicted = pe["throughput"] / pu["throughput"]
        print("split %s against %s (%s, m=%d): slowdown measured %.3f, predicted %.3f (%+.1f %%)" % (
            split, even, schedule, m, measured, predicted, 100 * (predicted - measured) / measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())

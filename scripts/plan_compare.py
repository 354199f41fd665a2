#!/usr/bin/env python3
"""Compare `collbench-analyze plan` with measured tensor × pipeline × data
parallel steps (scripts/tp_train.py's measured.csv).

Reads, in --dir: measured.csv, the layer profiles profile-tpK.csv (one per
tensor-parallel degree K, profile_layers.py --tp; another name with
--profile-prefix), all_reduce.csv (the
all-reduce curve at the job's ranks) and sendrecv.csv. For every measured
configuration runs `collbench-analyze plan` with --tp, --pp, --dp,
--microbatch (samples) and --schedule fixed to the run's, and prints
predicted against measured step times and their errors, twice: with no
calibration, and with one `--microbatch-overhead-s` calibrated on the
tp = pp = 1 runs alone (bisection until plan's step equals the measured
one; with several such runs, on their mean) and then used for every
configuration. The MAPE is given over every configuration and over
those the calibration did not see.

Then, after those (which stay as they were), the ranks sharing the
machine's cores: `--shared-compute-slowdown K` calibrated on the same
tp = pp = 1 runs (data-parallel, so K scales all their compute) by the
same bisection on their mean, K from 1 to 1000, with
`--microbatch-overhead-s 0`, and every configuration predicted with it.
K is calibrated alone: one mean fixes one factor, and both K and the
overhead only lengthen those runs, so calibrating K first leaves the
overhead nothing (0) to take; where K = 1 already predicts them too
slow, the overhead calibrates to 0 as well.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

from profile_layers import positive_int
from shard_calibrate import mape, run_analyze


def label(row):
    """`TPxPPxDP/M[/SCHEDULE]`, as tp_train.py's --runs."""
    text = "%sx%sx%s/%s" % (row["tp"], row["pp"], row["dp"], row["microbatches"])
    return text if row["schedule"] == "-" else text + "/" + row["schedule"]


def plan_argv(exe, d, profiles, row, world, per_node, overhead, json_output=True, shared=None):
    """The `collbench-analyze plan` command for one measured row
    (`shared`: its --shared-compute-slowdown, none when None)."""
    global_batch = int(row["microbatch"]) * int(row["dp"]) * int(row["microbatches"])
    argv = [exe, "plan"]
    for p in profiles:
        argv += ["--profile", os.path.join(d, p)]
    argv += ["--comm", os.path.join(d, "all_reduce.csv"),
             "--sendrecv", os.path.join(d, "sendrecv.csv"),
             "--gpus", str(world), "--gpus-per-node", str(per_node),
             "--global-batch", str(global_batch),
             "--tp", row["tp"], "--pp", row["pp"], "--dp", row["dp"],
             "--microbatch", row["microbatch"],
             "--schedule", "1f1b" if row["schedule"] == "-" else row["schedule"],
             "--dtype-bytes", "4", "--microbatch-overhead-s", "%.6g" % overhead]
    if shared is not None:
        argv += ["--shared-compute-slowdown", "%.6g" % shared]
    return argv + (["--json"] if json_output else [])


def bisect(f, target, low, high, rounds=40):
    """x in [low, high] where the increasing f(x) meets `target`, by
    bisection; `low` when f(low) is already above it, `high` when f(high)
    is still below."""
    if f(low) >= target:
        return low
    if f(high) <= target:
        return high
    for _ in range(rounds):
        mid = (low + high) / 2
        if f(mid) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def is_flat(row):
    return row["tp"] == "1" and row["pp"] == "1"


def profile_files(d, prefix="profile-tp"):
    """PREFIX<K>.csv files in `d` (profile-tpK.csv), by degree K."""
    found = []
    for path in glob.glob(os.path.join(d, glob.escape(prefix) + "*.csv")):
        m = re.fullmatch(re.escape(prefix) + r"(\d+)\.csv", os.path.basename(path))
        if m:
            found.append((int(m.group(1)), os.path.basename(path)))
    return [name for _, name in sorted(found)]


def main(argv=None):
    p = argparse.ArgumentParser(prog="plan_compare.py", description=__doc__.splitlines()[0])
    p.add_argument("--analyze", required=True, help="the collbench-analyze binary")
    p.add_argument("--dir", required=True, help="folder of the measured files")
    p.add_argument("--world-size", type=positive_int, default=2, help="ranks of the job [2]")
    p.add_argument("--gpus-per-node", type=positive_int, default=None,
                   help="ranks per node [--world-size]")
    p.add_argument("--others-max", type=float, default=0.05,
                   help="the MAPE is also given over the runs during which other processes "
                        "used at most this share of the cores (others_cpu) [0.05]")
    p.add_argument("--profile-prefix", default="profile-tp",
                   help="the profiles are PREFIX<K>.csv, one per degree K [profile-tp]")
    args = p.parse_args(argv)
    if not 0 <= args.others_max <= 1:
        p.error("--others-max %g is not a share of the cores between 0 and 1" % args.others_max)
    d = args.dir
    for name in ("measured.csv", "all_reduce.csv", "sendrecv.csv"):
        if not os.path.isfile(os.path.join(d, name)):
            p.error("--dir %s: no %s there" % (d, name))
    profiles = profile_files(d, args.profile_prefix)
    if not profiles:
        p.error("--dir %s: no %sK.csv there (profile_layers.py --tp K writes one)"
                % (d, args.profile_prefix))
    with open(os.path.join(d, "measured.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        p.error("--dir %s: measured.csv has no runs" % d)
    flat = [r for r in rows if is_flat(r)]
    if not flat:
        p.error("--dir %s: measured.csv has no tp = pp = 1 run to calibrate on" % d)
    per_node = args.gpus_per_node or args.world_size

    def predict(row, overhead, shared=None):
        out = json.loads(run_analyze(plan_argv(args.analyze, d, profiles, row, args.world_size,
                                               per_node, overhead, shared=shared),
                                     "plan_compare.py"))
        if len(out["configs"]) != 1:
            raise SystemExit("plan_compare.py: plan predicted %d configurations for %s, not 1"
                             % (len(out["configs"]), label(row)))
        return out["configs"][0], out["warnings"]

    measured_flat = sum(float(r["step_s"]) for r in flat) / len(flat)
    overhead = bisect(lambda x: sum(predict(r, x)[0]["step_ms"] for r in flat) / len(flat) / 1e3,
                      measured_flat, 0.0, 1.0)
    print("plan against measured steps (%s); profiles %s" % (d, ", ".join(profiles)))
    print("calibrated on the tp = pp = 1 run%s alone (%s): --microbatch-overhead-s %.6g"
          % ("" if len(flat) == 1 else "s", ", ".join(label(r) for r in flat), overhead))
    print()
    head = ("%-16s %5s %10s %11s %7s %11s %7s %8s %8s %8s %5s %8s"
            % ("run", "b", "measured", "plan raw", "err", "calibrated", "err", "tp ms",
               "pp ms", "dp ms", "tpc", "others"))
    print(head)
    print("-" * len(head))
    raw_pairs, pairs, unseen, warnings, quiet = [], [], [], [], []
    for row in rows:
        measured = float(row["step_s"]) * 1e3
        raw, _ = predict(row, 0.0)
        cal, w = predict(row, overhead)
        warnings += [x for x in w if x not in warnings]
        raw_pairs.append((measured, raw["step_ms"]))
        pairs.append((measured, cal["step_ms"]))
        if not is_flat(row):
            unseen.append((measured, cal["step_ms"]))
        e = cal["exposed_comm_ms"]
        others = (row.get("others_cpu") or "").strip()
        if others and float(others) <= args.others_max:
            quiet.append((label(row), measured, raw["step_ms"], cal["step_ms"]))
        print("%-16s %5s %10.1f %11.1f %+6.1f%% %11.1f %+6.1f%% %8.1f %8.1f %8.1f %5d %8s"
              % (label(row), row["microbatch"], measured, raw["step_ms"],
                 100 * (raw["step_ms"] - measured) / measured, cal["step_ms"],
                 100 * (cal["step_ms"] - measured) / measured, e["tp"], e["pp"], e["dp"],
                 cal["tp_collectives"], "-" if not others else "%.1f%%" % (100 * float(others))))
    print()
    print("MAPE, no calibration: %.1f %% over %d configurations" % (mape(raw_pairs), len(raw_pairs)))
    print("MAPE, calibrated: %.1f %% over all %d configurations" % (mape(pairs), len(pairs)))
    if unseen:
        print("MAPE, calibrated: %.1f %% over the %d the calibration did not see"
              % (mape(unseen), len(unseen)))
    if quiet:
        print("MAPE over the %d runs during which other processes used at most %.0f %% of the "
              "cores (%s): %.1f %% raw, %.1f %% calibrated"
              % (len(quiet), 100 * args.others_max, ", ".join(q[0] for q in quiet),
                 mape([(m, r) for _, m, r, _ in quiet]), mape([(m, c) for _, m, _, c in quiet])))
    else:
        print("no run was timed while other processes used at most %.0f %% of the cores"
              % (100 * args.others_max))
    print("(err: predicted against measured; tp/pp/dp ms: plan's exposed communication per "
          "group; tpc: tensor-parallel collectives per step; others: share of the cores other "
          "processes used while the run was timed)")
    for w in warnings:
        print("plan warning: %s" % w)
    print()
    print("one command (the first run, calibrated):")
    print("  " + " ".join(plan_argv("collbench-analyze", d, profiles, rows[0], args.world_size,
                                    per_node, overhead, json_output=False)))
    shared_compute(args, d, profiles, rows, flat, measured_flat, per_node, predict)


def shared_compute(args, d, profiles, rows, flat, measured_flat, per_node, predict):
    """The section after the table: --shared-compute-slowdown K calibrated
    on the tp = pp = 1 runs (overhead 0), every run predicted with it."""
    shared = bisect(lambda k: sum(predict(r, 0.0, k)[0]["step_ms"] for r in flat)
                    / len(flat) / 1e3, measured_flat, 1.0, 1000.0)
    shared = float("%.6g" % shared)
    print()
    print("ranks sharing the cores: --shared-compute-slowdown %.6g calibrated on the tp = pp = 1 "
          "run%s alone (%s), --microbatch-overhead-s 0"
          % (shared, "" if len(flat) == 1 else "s", ", ".join(label(r) for r in flat)))
    head = "%-16s %5s %10s %11s %7s" % ("run", "b", "measured", "K calib.", "err")
    print(head)
    print("-" * len(head))
    pairs, unseen, quiet = [], [], []
    for row in rows:
        measured = float(row["step_s"]) * 1e3
        got = predict(row, 0.0, shared)[0]["step_ms"]
        pairs.append((measured, got))
        if not is_flat(row):
            unseen.append((measured, got))
        others = (row.get("others_cpu") or "").strip()
        if others and float(others) <= args.others_max:
            quiet.append((label(row), measured, got))
        print("%-16s %5s %10.1f %11.1f %+6.1f%%"
              % (label(row), row["microbatch"], measured, got, 100 * (got - measured) / measured))
    print("MAPE, K calibrated: %.1f %% over all %d configurations" % (mape(pairs), len(pairs)))
    if unseen:
        print("MAPE, K calibrated: %.1f %% over the %d the calibration did not see"
              % (mape(unseen), len(unseen)))
    if quiet:
        print("MAPE, K calibrated, over the %d runs during which other processes used at most "
              "%.0f %% of the cores: %.1f %%"
              % (len(quiet), 100 * args.others_max, mape([(m, g) for _, m, g in quiet])))
    print("one command (the first run, K calibrated):")
    print("  " + " ".join(plan_argv("collbench-analyze", d, profiles, rows[0], args.world_size,
                                    per_node, 0.0, json_output=False, shared=shared)))


if __name__ == "__main__":
    sys.exit(main())

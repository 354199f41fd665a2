#!/usr/bin/env python3
"""Predicted per-rank memory of DDP, ZeRO-1 and FSDP against PyTorch's.

Usage: shard_memory_compare.py --dir DIR --curves CURVES [--analyze BIN]
                               [--profile-suffix SUFFIX]

DIR holds, per configuration NAME, `NAME-profile.csv` (the layer profile
that scripts/shard_train.py --profile-out wrote; `--profile-suffix
-profile-transient.csv` reads `NAME-profile-transient.csv` instead, such
as one scripts/profile_layers.py wrote on the GPU with the
`bwd_transient_bytes` column) and
`NAME-steps-{ddp,zero1,fsdp}.csv` (its measured steps, with the GPU memory
columns). For each, `collbench-analyze zero --stage 0,1 --zero-grads
all-reduce --zero-params broadcast` (what ZeroRedundancyOptimizer over DDP
does) and `fsdp --strategy full --unit-layers 1` (FSDP2 on every block,
the other rows its root unit, resharded after forward: `--root-layers
... --reshard-root`)
predict the memory at world size 2, with PyTorch's defaults the runs used:
DDP's gradients copied into buckets as large as them (no
`--grad-as-bucket-view`) and foreach Adam (`--optimizer-impl foreach`);
CURVES holds the all_reduce,
all_gather, reduce_scatter and broadcast curves the commands need (memory
does not depend on them). Three moments are compared, each the largest
rank's:

- set-up: after the model and optimizer are built (measured `init_bytes`,
  predicted `after_init_bytes`);
- at the step: just before a steady-state optimizer step, with gradients
  and optimizer state alive (measured `before_step_bytes`, predicted
  `after_step_bytes`: the ZeRO paper's model states and DDP's buckets);
- peak over all steps (`peak_bytes`).

Prints one row per configuration, strategy and moment, and the mean
absolute percentage error of each moment over every row.
"""

import argparse
import csv
import glob
import json
import os
import subprocess
import sys

from shard_calibrate import root_layers

STRATEGIES = {"ddp": ("zero", "ddp"), "zero1": ("zero", "zero-1"), "fsdp": ("fsdp", "fsdp-full")}
MOMENTS = [("set-up", "init_bytes", "after_init_bytes"),
           ("at the step", "before_step_bytes", "after_step_bytes"),
           ("peak", "peak_bytes", "peak_bytes")]


def read_measured(path):
    """The one row of a shard_train.py CSV, as a dict."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if len(rows) != 1:
        raise SystemExit("%s: expected one strategy row, found %d" % (path, len(rows)))
    return rows[0]


def fsdp_root(profile):
    """The root unit of shard_train.py's FSDP2 (the rows outside the blocks,
    resharded after forward) as `fsdp` flags; none for a profile of blocks
    only."""
    root = root_layers(profile)
    return ["--root-layers", ",".join(root), "--reshard-root"] if root else []


def predict(analyze, profile, curves):
    """{strategy name: memory dict} from one zero and one fsdp run."""
    curve = lambda name: os.path.join(curves, name + ".csv")  # noqa: E731
    common = ["--profile", profile, "--world-size", "2", "--json", "--optimizer-impl", "foreach"]
    # Each command gets the curves its configurations use (an unused one is refused).
    runs = [[analyze, "zero", "--stage", "0,1", "--zero-grads", "all-reduce",
             "--zero-params", "broadcast", "--comm", curve("all_reduce"),
             "--broadcast", curve("broadcast")] + common,
            [analyze, "fsdp", "--strategy", "full", "--unit-layers", "1",
             "--all-gather", curve("all_gather"), "--reduce-scatter", curve("reduce_scatter")]
            + fsdp_root(profile) + common]
    memory = {}
    for argv in runs:
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit("%s failed: %s" % (" ".join(argv), done.stderr.strip()))
        for config in json.loads(done.stdout)["configs"]:
            memory[config["strategy"]] = config["memory"]
    return memory


def profile_files(folder, suffix):
    """(NAME, path) of every NAME + `suffix` in `folder`, sorted, NAME not
    empty."""
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "*" + suffix))):
        name = os.path.basename(path)[:-len(suffix)]
        if name:
            found.append((name, path))
    return found


def compare(rows):
    """(moment, mean absolute percentage error) over rows of
    (name, strategy, moment, measured, predicted)."""
    out = []
    for moment, _, _ in MOMENTS:
        errors = [abs(p - m) / m * 100 for _, _, mo, m, p in rows if mo == moment and m > 0]
        out.append((moment, sum(errors) / len(errors) if errors else float("nan")))
    return out


def main(argv):
    parser = argparse.ArgumentParser(prog="shard_memory_compare.py", description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--curves", required=True)
    parser.add_argument("--analyze", default="target/release/collbench-analyze")
    parser.add_argument("--profile-suffix", default="-profile.csv",
                        help="what ends each configuration's profile file name [-profile.csv]")
    # A suffix starts with "-", which argparse would take for a flag.
    argv = list(argv)
    for i in range(len(argv) - 1):
        if argv[i] == "--profile-suffix":
            argv[i:i + 2] = ["--profile-suffix=" + argv[i + 1]]
            break
    args = parser.parse_args(argv)
    suffix = args.profile_suffix
    if not suffix or any(c in suffix for c in "*?[/"):
        parser.error("--profile-suffix %r: give the end of a file name, such as "
                     "-profile-transient.csv (no wildcards or folders)" % suffix)
    profiles = profile_files(args.dir, suffix)
    if not profiles:
        raise SystemExit("--dir %s: no NAME%s there" % (args.dir, suffix))
    rows = []
    for name, profile in profiles:
        predicted = predict(args.analyze, profile, args.curves)
        for strategy, (_, model_name) in STRATEGIES.items():
            steps = os.path.join(args.dir, "%s-steps-%s.csv" % (name, strategy))
            if not os.path.exists(steps):
                continue
            measured = read_measured(steps)
            for moment, column, field in MOMENTS:
                if not measured.get(column):
                    raise SystemExit("%s: no %s (a CPU run?)" % (steps, column))
                rows.append((name, strategy, moment, int(measured[column]),
                             int(predicted[model_name][field])))
    print("%-22s %-6s %-12s %12s %12s %8s" % ("configuration", "strategy", "moment",
                                             "measured MB", "model MB", "error"))
    for name, strategy, moment, m, p in rows:
        print("%-22s %-6s %-12s %12.1f %12.1f %+7.1f%%" % (name, strategy, moment, m / 1e6, p / 1e6,
                                                        (p - m) / m * 100))
    for moment, mape in compare(rows):
        print("MAPE %-12s %.1f %% over %d rows" % (moment, mape, sum(1 for r in rows if r[2] == moment)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""The sharded models against measured training steps: calibrate on the DDP
run, predict the others, report the error and the ranking.

Reads what scripts/shard-validate-cpu.sh measured in DIR (profile-in-train.csv,
all_reduce.csv, all_gather.csv, reduce_scatter.csv, broadcast.csv,
steps.csv from scripts/shard_train.py) and runs `collbench-analyze zero`
and `fsdp` on it:

1. The optimizer step's time: the DDP run's measured optimizer_s (Adam on
   the whole model, plus zero_grad), given as --optimizer-step-s to every
   strategy (sharded ones step 1/n of it).
2. One slowdown factor F = G (compute and communication slowing each other
   while they overlap: on shared CPU cores they compete for the same
   cores), the value in 1.00, 1.05, ..., 3.00 whose DDP prediction is
   closest to the measured DDP step.
3. With both, ZeRO-1 as ZeroRedundancyOptimizer runs it (`--stage 1
   --zero-grads all-reduce --zero-params broadcast`: one broadcast per
   parameter tensor, from the profile's param_tensors) and FSDP2
   FULL_SHARD per block (`fsdp --strategy full --unit-layers 1
   --comm-streams blocking`: on the CPU FSDP2's all-gathers and
   reduce-scatters are blocking calls on the training thread), the rows
   outside the blocks in one root unit resharded after forward
   (`--root-layers ... --reshard-root`: shard_train.py's
   `fully_shard(model, reshard_after_forward=True)`).

Every strategy gets `--copy-gbps` from the profile header's measured
gradient copy speed (DDP's bucket passes, FSDP2's copy-in and copy-out),
when the header has one. FSDP gets `--sync-wait-s` from its `sync wait`
line (the ranks' drift each blocking call absorbs, measured on the plain
model; a negative measurement is given as 0).

Prints each strategy's measured and predicted step, the error, the MAPE
(over all three, and over the two not calibrated on), whether the predicted
order is the measured order, and every command. Pure Python: no torch.
"""

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys


def read_steps(path):
    """{strategy: row} from shard_train.py's CSV (`#` lines skipped)."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if not line.startswith("#")]
    return {row["strategy"]: row for row in csv.DictReader(lines)}


def header_number(profile, pattern, what):
    """The number `pattern`'s group matches in the profile's `#` header, or
    None; `what` names it in the error when it is not a number."""
    with open(profile, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            match = re.search(pattern, line)
            if match:
                try:
                    value = float(match.group(1))
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise SystemExit("shard_calibrate.py: %s: the %s %r is not a number"
                                     % (profile, what, match.group(1)))
                return value
    return None


def root_layers(profile):
    """The profile's rows that FSDP2's root unit holds in shard_train.py:
    every row that is not a transformer block (`block_N`, each wrapped in a
    unit of its own), in file order."""
    with open(profile, encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return [r["name"] for r in rows if not re.fullmatch(r"block_\d+", r["name"])]


def copy_gbps(profile):
    """The GB/s of the profile header's `gradient copy: ... GB/s` line, or
    None."""
    return header_number(profile, r"gradient copy: .*, (\S*) GB/s", "gradient copy speed")


def sync_wait_s(profile):
    """The seconds of the profile header's `sync wait: ... s per blocking
    call` line, or None."""
    return header_number(profile, r"sync wait: (\S*) s per blocking call", "sync wait")


def wait_said(wait):
    """How the summary states the header's sync wait (seconds, or None):
    a negative one is charged as 0, and says so."""
    if wait is None:
        return "nothing (no sync wait in the profile header)"
    if wait < 0:
        return ("nothing: the profile header measured %.3f ms, below the noise, charged as 0"
                % (wait * 1e3))
    return "%.3f ms each for the other ranks (profile header)" % (wait * 1e3)


def run_analyze(cmd, prog="shard_calibrate.py"):
    """collbench-analyze's stdout; its own error in one line, after `prog`,
    when it fails."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise SystemExit("%s: --analyze %s: %s" % (prog, cmd[0], e.strerror))
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no error message"])[-1]
        raise SystemExit("%s: %s exited with %d: %s" % (
            prog, " ".join(cmd[:2]), out.returncode, why))
    return out.stdout


def mape(pairs):
    """Mean absolute percentage error of (measured, predicted) pairs."""
    return sum(abs(p - m) / m for m, p in pairs) / len(pairs) * 100.0


def order(values):
    """Keys of `values` from smallest to largest value."""
    return [k for k, _ in sorted(values.items(), key=lambda kv: kv[1])]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shard_calibrate.py", description=__doc__.split("\n")[0])
    parser.add_argument("--analyze", required=True, help="the collbench-analyze binary")
    parser.add_argument("--dir", required=True, help="the folder shard-validate-cpu.sh filled")
    parser.add_argument("--world-size", type=int, required=True)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    d = args.dir
    for name in ("steps.csv", "profile-in-train.csv", "all_reduce.csv", "all_gather.csv",
                 "reduce_scatter.csv", "broadcast.csv"):
        if not os.path.isfile(os.path.join(d, name)):
            parser.error("--dir %s: no %s there (shard-validate-cpu.sh writes it)" % (d, name))
    steps = read_steps(os.path.join(d, "steps.csv"))
    missing = [s for s in ("ddp", "zero1", "fsdp") if s not in steps]
    if missing:
        parser.error("--dir %s: steps.csv has no row for %s" % (d, ", ".join(missing)))
    measured = {s: float(steps[s]["step_s"]) * 1e3 for s in ("ddp", "zero1", "fsdp")}
    opt_s = float(steps["ddp"]["optimizer_s"])
    profile = os.path.join(d, "profile-in-train.csv")
    gbps = copy_gbps(profile)
    common = ["--profile", profile, "--world-size", str(args.world_size),
              "--optimizer-step-s", "%.6g" % opt_s]
    # Each command gets the curves its configuration uses (an unused one is refused).
    curve = {flag: [flag, os.path.join(d, name + ".csv")] for flag, name in (
        ("--comm", "all_reduce"), ("--all-gather", "all_gather"),
        ("--reduce-scatter", "reduce_scatter"), ("--broadcast", "broadcast"))}
    if gbps is not None:
        common += ["--copy-gbps", "%g" % gbps]
    wait = sync_wait_s(profile)
    root = root_layers(profile)
    commands = {
        "ddp": ["zero", "--stage", "0"] + curve["--comm"],
        "zero1": ["zero", "--stage", "1", "--zero-grads", "all-reduce", "--zero-params", "broadcast"]
        + curve["--comm"] + curve["--broadcast"],
        "fsdp": ["fsdp", "--strategy", "full", "--unit-layers", "1", "--backward-prefetch", "pre",
                 "--comm-streams", "blocking"] + curve["--all-gather"] + curve["--reduce-scatter"]
        + (["--root-layers", ",".join(root), "--reshard-root"] if root else [])
        + ([] if wait is None else ["--sync-wait-s", "%.6g" % max(wait, 0.0)]),
    }

    def predict(strategy, factor, extra=()):
        cmd = ([args.analyze] + commands[strategy] + common
               + ["--compute-slowdown", "%.2f" % factor, "--comm-slowdown", "%.2f" % factor]
               + list(extra))
        return json.loads(run_analyze(cmd + ["--json"]))["configs"][0]["step_ms"], cmd

    factors = [1.0 + 0.05 * i for i in range(41)]
    best = min(factors, key=lambda f: abs(predict("ddp", f)[0] - measured["ddp"]))
    lines = ["measured in %s (%d ranks); optimizer step %.3f ms from the DDP run; "
             "F = G = %.2f calibrated on the DDP run; copies %s" % (
                 d, args.world_size, opt_s * 1e3, best,
                 "at %g GB/s (profile header)" % gbps if gbps else "not timed (no copy speed in the profile header)"),
             "FSDP's blocking calls wait %s" % wait_said(wait), ""]
    results = {}
    for label, factor in (("uncalibrated (F = G = 1)", 1.0), ("calibrated", best)):
        predicted = {s: predict(s, factor)[0] for s in measured}
        results[label] = predicted
        lines.append(label)
        lines.append("  %-6s %12s %12s %8s" % ("", "measured ms", "predicted ms", "error"))
        for s in measured:
            err = (predicted[s] - measured[s]) / measured[s] * 100.0
            lines.append("  %-6s %12.3f %12.3f %7.1f %%" % (s, measured[s], predicted[s], err))
        pairs = [(measured[s], predicted[s]) for s in measured]
        rest = [(measured[s], predicted[s]) for s in ("zero1", "fsdp")]
        lines.append("  MAPE %.1f %% over all three, %.1f %% over zero1 and fsdp" %
                     (mape(pairs), mape(rest)))
        lines.append("  order measured %s, predicted %s: %s" % (
            " < ".join(order(measured)), " < ".join(order(predicted)),
            "same" if order(measured) == order(predicted) else "DIFFERENT"))
        lines.append("")
    lines.append("commands (calibrated):")
    for s in measured:
        lines.append("  " + " ".join(predict(s, best)[1]))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

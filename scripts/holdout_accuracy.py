#!/usr/bin/env python3
"""`fit --holdout` over a folder of nccl-tests logs: the worse half of each series.

For each log (a cleaned copy, as predict_accuracy.py makes it), runs
`collbench-analyze fit LOG --holdout --json` and prints, per series, the
worse half's median and largest relative error over all held-out sizes and
from 64 KiB up, and which half that was.

    python3 scripts/holdout_accuracy.py [--analyze BIN] LOG...
"""
import argparse
import json
import os
import sys
import tempfile

from predict_accuracy import clean_copy, run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", metavar="LOG")
    parser.add_argument("--analyze", default="target/release/collbench-analyze")
    args = parser.parse_args()
    print(f"{'log':<46} {'ranks':>5} {'placement':<9} {'worse (all): median / max':>26} {'worse (>=64K): median / max':>28}")
    with tempfile.TemporaryDirectory() as folder:
        for log in args.logs:
            out = json.loads(run([args.analyze, "fit", clean_copy(log, folder), "--holdout", "--json"]))
            for h in out["holdouts"]:
                fit = h["folds"][0]["fit"]
                cells = []
                for key in ("all", "from_64_kib"):
                    w = h["worse"][key]
                    cells.append(
                        "-" if w is None else
                        f"{w['median_rel_error'] * 100:.1f} % / {w['max_rel_error'] * 100:.1f} % ({w['held_out_half']})"
                    )
                print(f"{os.path.basename(log):<46} {fit['world_size']:>5} {fit['placement']:<9} {cells[0]:>26} {cells[1]:>28}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

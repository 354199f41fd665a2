"""Pure parts of scripts/tp_train.py and scripts/plan_compare.py: the run
specs and their checks, the measured row, the plan command, the
calibration's bisection, import and --help without PyTorch."""

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest

from helpers import SCRIPTS, usage_error

import plan_compare as pcmp
import profile_layers as pl
import tp_train as tt


class RunSpecTest(unittest.TestCase):
    def test_degrees_microbatches_and_schedule(self):
        self.assertEqual(tt.parse_run("2x1x1/1"),
                         {"tp": 2, "pp": 1, "dp": 1, "microbatches": 1, "schedule": "-"})
        self.assertEqual(tt.parse_run("1x2x1/4/1f1b")["schedule"], "1f1b")
        self.assertEqual(tt.parse_run("1x2x1/4")["schedule"], "gpipe")

    def test_bad_specs_say_what_is_accepted(self):
        for text in ("2x1/1", "2x1x1", "axbxc/1", "2x1x1/0", "1x2x1/2/zb", "2x1x1/1/gpipe/x"):
            with self.assertRaises(ValueError) as cm:
                tt.parse_run(text)
            self.assertIn(repr(text), str(cm.exception))

    def test_checks_against_the_job(self):
        mini = pl.CONFIGS["gpt2-mini"]  # 4 heads, 4 blocks
        ok = tt.parse_run("1x2x1/2/1f1b")
        self.assertIsNone(tt.check_run(ok, 2, 8, mini))
        cases = [
            ("2x1x1/1", 4, 8, "the job has 4 ranks"),
            ("2x2x1/1", 4, 8, "more than one degree"),
            ("1x1x2/3", 2, 8, "does not divide --global-batch 8"),
            ("1x2x1/1/1f1b", 2, 8, "1f1b needs"),
        ]
        for text, world, batch, want in cases:
            self.assertIn(want, tt.check_run(tt.parse_run(text), world, batch, mini), text)
        three = tt.parse_run("3x1x1/1")
        self.assertIn("4 heads", tt.check_run(three, 3, 6, mini))
        self.assertIn("4 blocks", tt.check_run(tt.parse_run("1x3x1/3"), 3, 6, mini))

    def test_arguments(self):
        args = tt.parse_args(["--out-dir", "d"])
        self.assertEqual([r["tp"] * 100 + r["pp"] * 10 + r["dp"] for r in args.runs],
                         [211, 121, 121, 121, 112])
        for argv, want in ((["--runs", "2x1x1"], "--runs '2x1x1'"),
                           (["--runs", "1x1x2/3"], "--runs 1x1x2/3"),
                           (["--seq-len", "512"], "--seq-len 512"),
                           (["--model", "bert-base"], "bert-base"),
                           (["--others-max", "2"], "--others-max 2"),
                           (["--profile-sizes", "2,4"], "go together"),
                           (["--profile-sizes", "2", "--profile-tps", "3"], "--profile-tps 3"),
                           (["--profile-tps", "x"], "--profile-tps")):
            self.assertIn(want, usage_error(self, tt.parse_args, ["--out-dir", "d"] + argv))

    def test_measured_row_keeps_every_step_and_the_median(self):
        run = tt.parse_run("1x1x2/2")
        row = tt.measured_row(run, 8, [0.3, 0.1, 0.2], 0.01)
        self.assertEqual(row, "1,1,2,2,2,-,0.200000,0.300000;0.100000;0.200000,0.0100")
        self.assertEqual(len(row.split(",")), len(tt.MEASURED_HEADER.split(",")))
        self.assertTrue(tt.measured_row(run, 8, [0.1], None).endswith(",0.100000,"))


class PlanCompareTest(unittest.TestCase):
    ROW = {"tp": "1", "pp": "2", "dp": "1", "microbatches": "4", "microbatch": "2",
           "schedule": "1f1b"}

    def test_plan_command_fixes_the_run(self):
        argv = pcmp.plan_argv("ca", "d", ["profile-tp1.csv", "profile-tp2.csv"], self.ROW, 2, 2,
                              0.001)
        text = " ".join(argv)
        self.assertTrue(text.startswith("ca plan --profile d/profile-tp1.csv "
                                        "--profile d/profile-tp2.csv --comm d/all_reduce.csv "
                                        "--sendrecv d/sendrecv.csv"), text)
        for want in ("--global-batch 8", "--tp 1 --pp 2 --dp 1", "--microbatch 2",
                     "--schedule 1f1b", "--microbatch-overhead-s 0.001"):
            self.assertIn(want, text)
        flat = dict(self.ROW, pp="1", schedule="-")
        self.assertIn("--schedule 1f1b", " ".join(pcmp.plan_argv("ca", "d", ["p"], flat, 2, 2, 0)))
        self.assertEqual(pcmp.label(flat), "1x1x1/4")
        self.assertEqual(pcmp.label(self.ROW), "1x2x1/4/1f1b")

    def test_shared_compute_flag_only_when_given(self):
        plain = pcmp.plan_argv("ca", "d", ["p"], self.ROW, 2, 2, 0)
        self.assertNotIn("--shared-compute-slowdown", plain)
        shared = pcmp.plan_argv("ca", "d", ["p"], self.ROW, 2, 2, 0, shared=1.25)
        self.assertEqual(shared[:len(plain) - 1], plain[:-1])
        self.assertEqual(shared[-3:], ["--shared-compute-slowdown", "1.25", "--json"])

    def test_shared_compute_calibrates_k_on_the_flat_runs(self):
        flat = {"tp": "1", "pp": "1", "dp": "2", "microbatches": "1", "microbatch": "4",
                "schedule": "-", "step_s": "0.3", "others_cpu": "0.01"}
        piped = dict(self.ROW, step_s="0.25", others_cpu="0.5")
        calls = []

        def predict(row, overhead, shared=None):
            calls.append((overhead, shared))
            k = float("%.6g" % shared)
            # The flat run's compute is all slowed; the pipeline's half.
            ms = 100 * k if row is flat else 200 + 10 * k
            return {"step_ms": ms}, []

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            pcmp.shared_compute(argparse.Namespace(others_max=0.05, world_size=2), "d", ["p"], [flat, piped],
                                [flat], 0.3, 2, predict)
        text = out.getvalue()
        self.assertTrue(all(o == 0.0 for o, _ in calls))
        k = re.search(r"--shared-compute-slowdown (\S+) calibrated on the tp = pp = 1 run alone "
                      r"\(1x1x2/1\), --microbatch-overhead-s 0", text)
        self.assertIsNotNone(k, text)
        self.assertAlmostEqual(float(k.group(1)), 3.0, delta=1e-4)
        # 1x2x1/4: 200 + 30 = 230 ms against 250: -8 %.
        self.assertIn("MAPE, K calibrated: 4.0 % over all 2 configurations", text)
        self.assertIn("MAPE, K calibrated: 8.0 % over the 1 the calibration did not see", text)
        self.assertIn("over the 1 runs during which other processes used at most 5 % of the "
                      "cores: 0.0 %", text)
        self.assertTrue(text.endswith("--shared-compute-slowdown %s\n" % k.group(1)), text)
        # Already too slow at K = 1: K stays 1.
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            pcmp.shared_compute(argparse.Namespace(others_max=0.05, world_size=2), "d", ["p"], [flat], [flat],
                                0.05, 2, predict)
        self.assertIn("--shared-compute-slowdown 1 calibrated", out.getvalue())

    def test_bisection_meets_the_target_or_stops_at_an_end(self):
        f = lambda x: 0.5 + 3 * x  # noqa: E731
        self.assertAlmostEqual(pcmp.bisect(f, 0.8, 0.0, 1.0), 0.1, places=9)
        self.assertEqual(pcmp.bisect(f, 0.4, 0.0, 1.0), 0.0)
        self.assertEqual(pcmp.bisect(f, 9.0, 0.0, 1.0), 1.0)

    def test_profiles_by_degree_and_the_missing_files(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("profile-tp2.csv", "profile-tp1.csv", "profile-tp1-b2.csv",
                         "profile-tp10.csv", "profile-alone-tp1.csv"):
                open(os.path.join(d, name), "w").close()
            self.assertEqual(pcmp.profile_files(d),
                             ["profile-tp1.csv", "profile-tp2.csv", "profile-tp10.csv"])
            self.assertEqual(pcmp.profile_files(d, "profile-alone-tp"), ["profile-alone-tp1.csv"])
            err = usage_error(self, pcmp.main, ["--analyze", "x", "--dir", d])
            self.assertIn("no measured.csv", err)
            err = usage_error(self, pcmp.main, ["--analyze", "x", "--dir", d, "--others-max", "2"])
            self.assertIn("--others-max 2", err)


class WithoutTorchTest(unittest.TestCase):
    def test_import_and_help(self):
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import tp_train, plan_compare\n"
                "assert 'torch' not in sys.modules, 'torch imported at module level'\n" % SCRIPTS)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in ("tp_train.py", "plan_compare.py"):
            result = subprocess.run([sys.executable, os.path.join(SCRIPTS, name), "--help"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("usage:", result.stdout)


if __name__ == "__main__":
    unittest.main()

"""Pure parts of scripts/pipeline_train.py, scripts/pipeline_compare.py and
scripts/pipeline_trace.py: argument checks, the load guard's arithmetic,
the trace's summary, import and --help without PyTorch."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

from helpers import SCRIPTS, usage_error

import pipeline_compare as pc
import pipeline_trace as ptr
import pipeline_train as pt


class PipelineTrainArgsTest(unittest.TestCase):
    def test_defaults_and_lists(self):
        args = pt.parse_args(["--out-dir", "d", "--microbatches", "2,8", "--uneven", "5,3"])
        self.assertEqual(args.microbatches, [2, 8])
        self.assertEqual(args.uneven, [5, 3])
        self.assertEqual(args.global_batch, 32)

    def test_bad_counts_and_splits_are_refused(self):
        for argv in (["--microbatches", "3"], ["--microbatches", "0"], ["--uneven", "4,3"],
                     ["--others-max", "1.5"], ["--others-max", "-0.1"], ["--retries", "-1"]):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                pt.parse_args(["--out-dir", "d"] + argv)

    def test_garbage_numbers_are_usage_errors_naming_the_flag(self):
        for argv, flag in ((["--microbatches", "a"], "--microbatches"),
                           (["--microbatches", "1,,2"], "--microbatches"),
                           (["--uneven", "x"], "--uneven"),
                           (["--global-batch", "0"], "--global-batch"),
                           (["--iters", "0"], "--iters"),
                           (["--warmup", "-1"], "--warmup"),
                           (["--chunks", "-1"], "--chunks"),
                           (["--layers", "0", "--uneven", "0"], "--layers"),
                           (["--uneven-microbatches", "3"], "--uneven-microbatches"),
                           (["--width", "250", "--heads", "4"], "--width 250")):
            err = usage_error(self, pt.parse_args, ["--out-dir", "d"] + argv)
            self.assertIn(flag, err, argv)

    def test_an_uneven_split_needs_a_stage_per_rank(self):
        with unittest.mock.patch.dict(os.environ, {"WORLD_SIZE": "4"}):
            err = usage_error(self, pt.parse_args, ["--out-dir", "d"])
            self.assertIn("--uneven 6,2 has 2 stages; this job has 4 ranks", err)
            args = pt.parse_args(["--out-dir", "d", "--uneven", "5,1,1,1"])
            self.assertEqual(args.uneven, [5, 1, 1, 1])
            err = usage_error(self, pt.parse_args, ["--out-dir", "d", "--uneven", "5,1,1,1",
                                                    "--uneven-microbatches", "2"])
            self.assertIn("--uneven-microbatches 2: the uneven split runs 1F1B", err)

    def test_load_guard_defaults(self):
        args = pt.parse_args(["--out-dir", "d"])
        self.assertEqual((args.others_max, args.retries), (0.05, 2))


class OthersShareTest(unittest.TestCase):
    STAT = ("cpu  100 5 20 900 7 3 2 10 0 0\n"
            "cpu0 50 2 10 450 3 1 1 5 0 0\n"
            "cpu1 50 3 10 450 4 2 1 5 0 0\n"
            "intr 1 2 3\n")

    def test_machine_ticks_count_busy_and_steal_not_idle(self):
        # user + nice + system + irq + softirq + steal; idle and iowait left out.
        self.assertEqual(pt.machine_cpu_ticks(self.STAT), (100 + 5 + 20 + 3 + 2 + 10, 2))

    def test_process_ticks_survive_spaces_in_the_name(self):
        fields = " ".join(str(i) for i in range(3, 20))  # fields 3..19
        stat = "42 (py thon) ) %s" % fields
        # utime and stime are fields 14 and 15.
        self.assertEqual(pt.process_cpu_ticks(stat), 14 + 15)

    def test_share_of_the_cores_used_by_others(self):
        # 300 busy ticks, 100 of them the job's, at 100 Hz over 2 s on 2 cores.
        self.assertAlmostEqual(pt.others_share(300, 100, 2.0, 2, 100), 0.5)
        self.assertEqual(pt.others_share(100, 120, 2.0, 2, 100), 0.0)
        self.assertEqual(pt.others_share(100, 0, 0.0, 2, 100), 0.0)


class CompareOthersTest(unittest.TestCase):
    def test_disturbed_runs_are_named_and_unmeasured_ones_skipped(self):
        rows = [
            {"microbatches": "4", "schedule": "gpipe", "split": "4-4", "others_cpu": "0.0100"},
            {"microbatches": "8", "schedule": "1f1b", "split": "4-4", "others_cpu": "0.2500"},
            {"microbatches": "8", "schedule": "1f1b", "split": "6-2", "others_cpu": ""},
            {"microbatches": "2", "schedule": "gpipe", "split": "4-4"},
        ]
        self.assertEqual(pc.disturbed_runs(rows, 0.05), ["1f1b m=8 split 4-4 (25.0 %)"])
        self.assertEqual(pc.others_text(rows[0]), "1.0 %")
        self.assertEqual(pc.others_text(rows[3]), "-")


class CompareArgsTest(unittest.TestCase):
    def test_bad_values_and_a_missing_folder_are_usage_errors(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for argv, text in ((["--others-max", "nan"], "--others-max nan"),
                               (["--others-max", "-1"], "--others-max -1"),
                               (["--overhead-grid", "a,b"], "--overhead-grid 'a,b'"),
                               (["--overhead-grid", ""], "--overhead-grid ''"),
                               (["--global-batch", "0"], "--global-batch"),
                               ([], "--dir %s: no measured.csv there" % tmp)):
                err = usage_error(self, pc.main, ["--analyze", "a", "--dir", tmp] + argv)
                self.assertIn(text, err, argv)


class TraceTest(unittest.TestCase):
    def test_args(self):
        args = ptr.parse_args(["--schedule", "1f1b", "--microbatches", "8"])
        self.assertEqual((args.schedule, args.microbatches, args.global_batch), ("1f1b", 8, 32))
        for argv in (["--schedule", "zb", "--microbatches", "8"],
                     ["--schedule", "gpipe", "--microbatches", "3"],
                     ["--schedule", "gpipe", "--microbatches", "4", "--iters", "0"],
                     ["--schedule", "gpipe", "--microbatches", "x"],
                     ["--schedule", "gpipe", "--microbatches", "4", "--global-batch", "0"],
                     ["--schedule", "gpipe", "--microbatches", "4", "--warmup", "-1"],
                     ["--schedule", "gpipe", "--microbatches", "4", "--width", "250"]):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                ptr.parse_args(argv)

    def test_summary_per_step_and_post_spread(self):
        events = [("forward", 0.0, 0.010), ("forward", 1.0, 1.030),
                  ("post fwd_recv", 0.0, 0.001), ("post fwd_recv", 0.0, 0.002),
                  ("post fwd_recv", 0.0, 0.009), ("post fwd_recv", 0.0, 0.004)]
        totals, spread = ptr.summarize(events, 2)
        self.assertEqual(totals["forward"], [1, 20.0])
        self.assertEqual(totals["post fwd_recv"], [2, 8.0])
        # Sorted 1, 2, 4, 9 ms: median the third, 90th percentile the fourth.
        self.assertEqual(spread, {"post fwd_recv": [4.0, 9.0, 9.0]})

    def test_minor_faults_read_field_ten_and_zero_when_unreadable(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix="stat", delete=False) as f:
            f.write("42 (a b) c) S 1 2 3 4 5 6 777 8 9")
        try:
            self.assertEqual(ptr.minor_faults(f.name), 777)
        finally:
            os.unlink(f.name)
        self.assertEqual(ptr.minor_faults(f.name), 0)


class ValidateScriptTest(unittest.TestCase):
    def test_stage_counts_are_checked_before_anything_starts(self):
        script = os.path.join(SCRIPTS, "pipeline-validate-cpu.sh")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            for env, said in ((
                {"PROCS": "x"}, "PROCS=x: not a number of stages (2, 4, ...)"), (
                {"PROCS": "3"}, "PROCS=3: set UNEVEN to an uneven split of the 8 layers"), (
                {"PROCS": "4", "UNEVEN": "6,2"},
                    "UNEVEN=6,2: 2 stages, but PROCS=4 (one entry per stage)")):
                result = subprocess.run(["bash", script, out], capture_output=True, text=True,
                                        env=dict(os.environ, PYTHON="false", **env))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(said, result.stderr)
                self.assertFalse(os.path.exists(out), "nothing made before the checks")


class WithoutTorchTest(unittest.TestCase):
    def test_scripts_import_and_help_without_torch(self):
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import pipeline_train, pipeline_compare, pipeline_trace\n"
                "assert 'torch' not in sys.modules\n" % SCRIPTS)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in ("pipeline_train.py", "pipeline_compare.py", "pipeline_trace.py"):
            result = subprocess.run([sys.executable, os.path.join(SCRIPTS, name), "--help"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("usage:", result.stdout)


if __name__ == "__main__":
    unittest.main()

"""Pure parts of scripts/ddp_bucket_sweep.py: caps, DDP's byte conversion,
the bucket count from DDP's logging data, the CSV row, argument errors."""

import unittest

from helpers import usage_error
import ddp_bucket_sweep as sweep


class CapTest(unittest.TestCase):
    def test_parse_caps(self):
        self.assertEqual(sweep.parse_caps_mb("25,1,2.5"), [1.0, 2.5, 25.0])
        for bad in ["", "0", "-1", "x", "1,1", "inf", "nan"]:
            with self.assertRaises(Exception, msg=bad):
                sweep.parse_caps_mb(bad)

    def test_cap_bytes_is_ddps_conversion(self):
        self.assertEqual(sweep.cap_bytes(25), 26214400)
        self.assertEqual(sweep.cap_bytes(0.05), 52428)  # int() truncates, as DDP


class OutputTest(unittest.TestCase):
    def test_bucket_count(self):
        self.assertEqual(sweep.bucket_count({"rebuilt_bucket_sizes": "526336, 526336, 1024"}), 3)
        self.assertEqual(sweep.bucket_count({"bucket_sizes": "2105344"}), 1)
        self.assertIsNone(sweep.bucket_count({}))
        self.assertIsNone(sweep.bucket_count({"rebuilt_bucket_sizes": ""}))

    def test_row(self):
        self.assertEqual(sweep.CSV_HEADER,
                         "bucket_bytes,time_s,forward_s,step_s,buckets,time_sd_s,iterations")
        self.assertEqual(sweep.format_row(1, [0.5, 0.7], [0.25, 0.25], 12),
                         "1048576,0.6,0.25,0.85,12,0.1,2")
        self.assertEqual(sweep.format_row(2, [1.0], [0.5], None), "2097152,1,0.5,1.5,,0,1")
        # --paired appends the plain model's mean backward.
        self.assertEqual(sweep.PAIRED_COLUMN, "compute_s")
        self.assertEqual(sweep.format_row(1, [0.5, 0.7], [0.25, 0.25], 12, [0.375, 0.5]),
                         "1048576,0.6,0.25,0.85,12,0.1,2,0.4375")

    def test_rounds_alternate_the_order(self):
        self.assertEqual(sweep.visit_order([1.0, 2.0, 5.0], 1), [1.0, 2.0, 5.0])
        self.assertEqual(sweep.visit_order([1.0, 2.0, 5.0], 3),
                         [1.0, 2.0, 5.0, 5.0, 2.0, 1.0, 1.0, 2.0, 5.0])


class ArgumentTest(unittest.TestCase):
    def test_parses(self):
        args = sweep.parse_args(["--backend", "gloo", "--model", "gpt2-small",
                                 "--bucket-cap-mb", "1,25", "-o", "/nonexistent/s.csv"])
        self.assertEqual(args.bucket_cap_mb, [1.0, 25.0])
        self.assertEqual((args.warmup, args.rounds), (3, 1))
        self.assertFalse(args.paired or args.grad_as_bucket_view)
        args = sweep.parse_args(["--backend", "gloo", "--model", "gpt2-small",
                                 "--bucket-cap-mb", "1", "--paired", "--grad-as-bucket-view",
                                 "-o", "/nonexistent/s.csv"])
        self.assertTrue(args.paired and args.grad_as_bucket_view)

    def test_errors(self):
        base = ["--model", "gpt2-small", "-o", "/nonexistent/s.csv"]
        cases = [
            (base + ["--bucket-cap-mb", "1"], "--backend"),
            (base + ["--backend", "gloo"], "--bucket-cap-mb"),
            (base + ["--backend", "gloo", "--bucket-cap-mb", "1,x"], "'x'"),
            (base + ["--backend", "gloo", "--bucket-cap-mb", "1", "--warmup", "1"], "--warmup 1"),
            (base + ["--backend", "gloo", "--bucket-cap-mb", "1", "--dtype", "fp16"], "fp16"),
            (base + ["--backend", "gloo", "--bucket-cap-mb", "1", "--rounds", "0"], "'0'"),
        ]
        for argv, want in cases:
            self.assertIn(want, usage_error(self, sweep.parse_args, argv), argv)


if __name__ == "__main__":
    unittest.main()

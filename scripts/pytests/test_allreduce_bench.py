"""Pure parts of scripts/allreduce_bench.py: sizes, the sweep, statistics,
the course CSV row, and its argument errors."""

import unittest

from helpers import usage_error
import allreduce_bench as ab


class SizeTest(unittest.TestCase):
    def test_parse_size(self):
        self.assertEqual(ab.parse_size("8"), 8)
        self.assertEqual(ab.parse_size("64K"), 65536)
        self.assertEqual(ab.parse_size("1.5M"), 3 << 19)
        self.assertEqual(ab.parse_size("2g"), 2 << 30)
        self.assertEqual(ab.parse_size("1MiB"), 1 << 20)
        for bad in ["", "x", "1.3", "-8", "nan", "1Q"]:
            with self.assertRaises(Exception, msg=bad):
                ab.parse_size(bad)

    def test_sweep_by_factor_rounds_to_elements(self):
        self.assertEqual(ab.sweep_sizes(8, 64, 2, 0, 4), [8, 16, 32, 64])
        # 1 byte of fp32 is one element; 2 and 4 bytes too: deduplicated.
        self.assertEqual(ab.sweep_sizes(1, 16, 2, 0, 4), [4, 8, 16])
        self.assertEqual(ab.sweep_sizes(10, 10, 2, 0, 4), [8])

    def test_sweep_by_step(self):
        self.assertEqual(ab.sweep_sizes(1024, 4096, 1, 1024, 4), [1024, 2048, 3072, 4096])

    def test_sweep_errors(self):
        with self.assertRaises(ValueError):
            ab.sweep_sizes(64, 8, 2, 0, 4)
        with self.assertRaises(ValueError):
            ab.sweep_sizes(8, 64, 1, 0, 4)


class StatisticsTest(unittest.TestCase):
    def test_mean_and_population_stdev(self):
        m, s = ab.mean_and_pstdev([1.0, 2.0, 3.0, 4.0])
        self.assertEqual(m, 2.5)
        self.assertAlmostEqual(s, 1.25 ** 0.5)
        self.assertEqual(ab.iteration_times([0.0, 1.0, 3.0]), [1.0, 2.0])

    def test_course_csv_row(self):
        self.assertEqual(ab.CSV_HEADER,
                         "backend,world_size,total_elements,total_bytes,average_time,stdev_time")
        self.assertEqual(ab.csv_row("gloo", 4, 256, 1024, [0.001, 0.003]),
                         "gloo,4,256,1024,0.002,0.001")


class ArgumentTest(unittest.TestCase):
    def test_defaults(self):
        args = ab.parse_args(["--backend", "gloo", "-o", "/nonexistent/a.csv"])
        self.assertEqual(args.sizes[0], 8)
        self.assertEqual(args.sizes[-1], 256 << 20)
        self.assertEqual((args.iters, args.warmup_iters, args.rounds), (20, 5, 1))

    def test_rounds_alternate_the_order(self):
        self.assertEqual(ab.visit_order([8, 16, 32], 2), [8, 16, 32, 32, 16, 8])
        self.assertEqual(ab.visit_order([8], 3), [8, 8, 8])

    def test_errors(self):
        out = "/nonexistent/a.csv"
        cases = [
            (["-o", out], "--backend"),
            (["--backend", "mpi", "-o", out], "'mpi'"),
            (["--backend", "gloo", "-b", "1M", "-e", "1K", "-o", out], "larger than the maximum"),
            (["--backend", "gloo", "-n", "0", "-o", out], "-n/--iters 0"),
            (["--backend", "gloo", "-b", "lots", "-o", out], "'lots'"),
            (["--backend", "gloo", "-f", "1", "-o", out], "step factor"),
            (["--backend", "gloo", "-R", "0", "-o", out], "-R/--rounds 0"),
        ]
        for argv, want in cases:
            self.assertIn(want, usage_error(self, ab.parse_args, argv), argv)


if __name__ == "__main__":
    unittest.main()


class CollectiveTest(unittest.TestCase):
    def test_call_elements_follow_nccl_tests_sizes(self):
        # 64 bytes of fp32 over 2 ranks: all-gather sends 8, gathers 16.
        self.assertEqual(ab.call_elements("all_gather", 64, 4, 2), (8, 16))
        self.assertEqual(ab.call_elements("reduce_scatter", 64, 4, 2), (16, 8))
        self.assertEqual(ab.call_elements("all_reduce", 64, 4, 2), (16, 16))
        self.assertEqual(ab.call_elements("broadcast", 64, 4, 3), (16, 16))
        # A block rounds down to whole elements, or is empty.
        self.assertEqual(ab.call_elements("all_gather", 40, 4, 3), (3, 9))
        self.assertEqual(ab.call_elements("reduce_scatter", 4, 4, 2), (0, 0))

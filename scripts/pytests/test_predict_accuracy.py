"""predict_accuracy.py: the cleaned copy of a log and the scoring of predictions."""

import os
import tempfile
import unittest

import helpers  # noqa: F401  (puts scripts/ on sys.path)
import predict_accuracy


class CleanCopyTest(unittest.TestCase):
    def test_drops_bracketed_lines_before_the_first_hash_line_only(self):
        with tempfile.TemporaryDirectory() as folder:
            source = os.path.join(folder, "in")
            os.mkdir(os.path.join(folder, "out"))
            with open(source, "w", encoding="utf-8") as f:
                f.write("[1.0] [g1:1:0] ucp WARN x\n# nThread 1\n[kept] after\n  8  2 float\n")
            copy = predict_accuracy.clean_copy(source, os.path.join(folder, "out"))
            with open(copy, encoding="utf-8") as f:
                self.assertEqual(f.read(), "# nThread 1\n[kept] after\n  8  2 float\n")


class ScoreTest(unittest.TestCase):
    def test_errors_and_coverage_per_band(self):
        predictions = [
            {"bytes": 1024, "predicted_us": 11.0, "low_us": 9.0, "high_us": 12.0},
            {"bytes": 1 << 20, "predicted_us": 80.0, "low_us": 70.0, "high_us": 90.0},
            {"bytes": 1 << 30, "predicted_us": 990.0, "low_us": 980.0, "high_us": 1020.0,
             "algorithm": "ring", "protocol": "Simple"},
        ]
        measured = {1024: 10.0, 1 << 20: 100.0, 1 << 30: 1000.0}
        s = predict_accuracy.score(predictions, measured)
        self.assertEqual(s["small"]["sizes"], 2)
        self.assertAlmostEqual(s["small"]["mean_abs_error"], 0.15)
        self.assertAlmostEqual(s["small"]["max_abs_error"], 0.2)
        self.assertEqual(s["small"]["coverage"], 0.5)
        self.assertAlmostEqual(s["small"]["median_width"], (3.0 / 11.0 + 20.0 / 80.0) / 2)
        self.assertEqual(s["large"]["sizes"], 1)
        self.assertAlmostEqual(s["large"]["max_abs_error"], 0.01)
        self.assertEqual(s["large"]["coverage"], 1.0)
        self.assertAlmostEqual(s["points"][0]["rel_error"], 0.1)
        self.assertEqual(s["points"][2]["algorithm"], "ring")


class FitSetsTest(unittest.TestCase):
    def test_one_node_with_the_smallest_multi_node_count_then_consecutive_pairs(self):
        runs = [{"nodes": n} for n in (1, 1, 2, 4, 8, 16)]
        self.assertEqual(predict_accuracy.fit_sets(runs), [(1, 2), (2, 4), (4, 8), (8, 16)])
        self.assertEqual(predict_accuracy.fit_sets([{"nodes": 2}, {"nodes": 4}]), [(2, 4)])


class SummaryTest(unittest.TestCase):
    def test_pools_the_points_of_each_factor_and_band(self):
        point = lambda b, e, c: {"bytes": b, "rel_error": e, "covered": c,
                                 "predicted_us": 10.0, "low_us": 9.0, "high_us": 12.0}
        results = [
            {"factor": 2, "points": [point(1024, 0.1, True), point(1 << 30, -0.3, False)]},
            {"factor": 2, "points": [point(2048, -0.2, False)]},
            {"factor": 4, "points": [point(1024, 0.4, True)]},
        ]
        totals = predict_accuracy.summary(results)
        self.assertAlmostEqual(totals["2x small"]["mean_abs_error"], 0.15)
        self.assertEqual(totals["2x small"]["coverage"], 0.5)
        self.assertAlmostEqual(totals["2x large"]["max_abs_error"], 0.3)
        self.assertIsNone(totals["8x small"])


class NeighbourTest(unittest.TestCase):
    def test_each_node_count_between_its_half_and_twice_across_nodes_only(self):
        def run(nodes, times):
            rows = [{"collective": "all_reduce", "placement": "out", "bytes": b, "time_us": {"mean": t}}
                    for b, t in times.items()]
            rows.append({"collective": "all_reduce", "placement": "in", "bytes": 1024, "time_us": {"mean": 1.0}})
            return {"nodes": nodes, "world_size": 4 * nodes, "report": {"results": rows}}

        big = 16 << 20
        runs = [
            run(1, {1024: 1.0, big: 1.0}),
            run(2, {1024: 8.0, big: 100.0}),
            run(4, {1024: 10.0, big: 200.0}),
            run(8, {1024: 18.0, big: 400.0}),
        ]
        scores = predict_accuracy.neighbour_scores(runs, "all_reduce")
        # 2 nodes lies between 1 and 4, but one node is another tier: only 4 is scored.
        self.assertEqual([s["target"] for s in scores], ["4x4"])
        self.assertEqual(scores[0]["between"], ["2x4", "8x4"])
        # sqrt(8 x 18) = 12 against 10; sqrt(100 x 400) = 200 exactly.
        self.assertAlmostEqual(scores[0]["small"]["mean_abs_error"], 0.2)
        self.assertEqual(scores[0]["small"]["sizes"], 1)
        self.assertAlmostEqual(scores[0]["large"]["max_abs_error"], 0.0)


if __name__ == "__main__":
    unittest.main()


class ReadReportTest(unittest.TestCase):
    def test_a_report_is_read_as_it_is_and_anything_else_refused_naming_the_file(self):
        with tempfile.TemporaryDirectory() as folder:
            report = os.path.join(folder, "r.json")
            with open(report, "w", encoding="utf-8") as f:
                f.write('{"schema_version": 1, "environment": {"world_size": 2, "nodes": 2}}')
            self.assertEqual(predict_accuracy.read_report(report)["environment"]["nodes"], 2)
            log = os.path.join(folder, "nccl.json")
            with open(log, "w", encoding="utf-8") as f:
                f.write('{"version": 1, "results": []}')
            with self.assertRaises(SystemExit) as refused:
                predict_accuracy.read_report(log)
            self.assertIn(f"--reports {log}: not a collbench report", str(refused.exception))
            with self.assertRaises(SystemExit) as refused:
                predict_accuracy.read_report(os.path.join(folder, "missing.json"))
            self.assertIn("not a readable JSON report", str(refused.exception))


class FromSeveralTest(unittest.TestCase):
    def test_several_saved_outputs_print_each_then_every_target_pooled(self):
        import json
        import subprocess
        import sys

        point = lambda b, e, c: {"bytes": b, "rel_error": e, "covered": c,
                                 "predicted_us": 10.0, "low_us": 9.0, "high_us": 12.0}
        target = lambda factor, points: {
            "fitted": ["1x8", "2x8"], "target": "4x8", "factor": factor, "points": points,
            "small": predict_accuracy.band_score([p for p in points if p["bytes"] <= 8 << 20]),
            "large": predict_accuracy.band_score([p for p in points if p["bytes"] > 8 << 20]),
        }
        script = os.path.join(os.path.dirname(predict_accuracy.__file__), "predict_accuracy.py")
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for i, error in enumerate((0.1, 0.3)):
                path = os.path.join(folder, f"saved{i}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"targets": [target(2, [point(1024, error, i == 0)])]}, f)
                paths.append(path)
            argv = [sys.executable, script] + [a for p in paths for a in ("--from", p)]
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        self.assertIn(f"== {paths[0]}", out)
        self.assertIn(f"== {paths[1]}", out)
        pooled = out.split("pooled per extrapolation factor:")[1]
        # (10 % + 30 %) / 2 over the two files' one point each, one of two covered.
        self.assertRegex(pooled, r"\b2\s+2\s+20\.0%\s+30\.0%\s+50%")

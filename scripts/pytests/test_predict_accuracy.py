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
    def test_errors_and_coverage(self):
        predictions = [
            {"bytes": 1024, "predicted_us": 11.0, "low_us": 9.0, "high_us": 12.0},
            {"bytes": 1 << 20, "predicted_us": 80.0, "low_us": 70.0, "high_us": 90.0},
        ]
        measured = {1024: 10.0, 1 << 20: 100.0}
        s = predict_accuracy.score(predictions, measured)
        self.assertEqual(s["sizes"], 2)
        self.assertAlmostEqual(s["mean_abs_error"], 0.15)
        self.assertAlmostEqual(s["max_abs_error"], 0.2)
        self.assertAlmostEqual(s["mean_abs_error_from_64_kib"], 0.2)
        self.assertEqual(s["coverage"], 0.5)
        self.assertAlmostEqual(s["points"][0]["rel_error"], 0.1)


if __name__ == "__main__":
    unittest.main()

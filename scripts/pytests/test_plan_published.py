"""Pure parts of scripts/plan_published.py: the published rows, the
iteration time they imply, the row checks, the plan command and the
calibration's bisection, without the binary."""

import contextlib
import io
import tempfile
import unittest

from helpers import usage_error
import plan_published as pp


class RowsTest(unittest.TestCase):
    def test_every_row_runs_as_published(self):
        for row in pp.rows():
            self.assertIsNone(pp.check_row(row), pp.label(row))
            self.assertIn(row["model"], pp.MODELS)

    def test_dp_and_step_time_from_throughput(self):
        row = [r for r in pp.rows() if r["model"] == "LLAMA2-7B"][0]
        self.assertEqual(row["dp"], 8)
        # 128 samples of 4096 tokens at 16847 tokens/s on each of 8 GPUs.
        self.assertAlmostEqual(pp.measured_step_s(row), 128 * 4096 / (16847 * 8))

    def test_the_calibration_row_is_one_of_the_rows(self):
        hits = [r for r in pp.rows() if (r["model"], r["gpus"]) == pp.CALIBRATION_ROW]
        self.assertEqual(len(hits), 1)

    def test_checks_refuse_what_plan_cannot_run(self):
        row = dict(pp.rows()[2])  # GPT3-175B, 128 GPUs, pp 8, vp 6
        self.assertIsNone(pp.check_row(row))
        self.assertIn("context", pp.check_row(dict(row, cp=2, dp=2)))
        self.assertIn("layers", pp.check_row(dict(row, vp=5)))
        self.assertIn("global batch", pp.check_row(dict(row, gbs=250)))
        self.assertIn("divide the GPUs", pp.check_row(dict(row, gpus=100)))


class PlanCommandTest(unittest.TestCase):
    def test_interleaved_row_passes_its_chunks_and_sequence_parallelism(self):
        with tempfile.TemporaryDirectory() as d:
            open(d + "/all_reduce-8r1n.json", "w").close()
            open(d + "/sendrecv-2r2n.json", "w").close()
            row = [r for r in pp.rows() if r["model"] == "LLAMA2-70B"][0]
            argv = pp.plan_argv("exe", "p.csv", row, d)
            text = " ".join(argv)
            for part in ("--tp 4", "--pp 4", "--dp 4", "--microbatch 1",
                         "--schedule interleaved", "--chunks 20", "--global-batch 128",
                         "--sequence-parallel", "--comm %s/all_reduce-8r1n.json" % d,
                         "--sendrecv %s/sendrecv-2r2n.json" % d):
                self.assertIn(part, text)
            row = [r for r in pp.rows() if r["model"] == "LLAMA2-7B"][0]
            text = " ".join(pp.plan_argv("exe", "p.csv", row, d))
            self.assertIn("--schedule 1f1b", text)
            self.assertNotIn("--sequence-parallel", text)

    def test_overlap_only_where_the_recipe_sets_it(self):
        with tempfile.TemporaryDirectory() as d:
            by_model = {r["model"]: r for r in pp.rows()}
            text = " ".join(pp.plan_argv("exe", "p.csv", by_model["LLAMA2-70B"], d, 0.5))
            self.assertIn("--sequence-parallel --tp-comm-overlap --tp-overlap-fraction 0.5", text)
            # Blocking unless asked, and never where the recipe leaves it off.
            text = " ".join(pp.plan_argv("exe", "p.csv", by_model["LLAMA2-70B"], d))
            self.assertNotIn("--tp-comm-overlap", text)
            for model in ("GPT3-175B", "GPT3-5B", "LLAMA2-7B"):
                text = " ".join(pp.plan_argv("exe", "p.csv", by_model[model], d, 1.0))
                self.assertNotIn("--tp-comm-overlap", text, model)


class RecipeTest(unittest.TestCase):
    def test_every_row_has_a_recipe_with_its_parallelism(self):
        for row in pp.rows():
            r = pp.recipe(row)
            self.assertEqual((r["tp"], r["pp"], r["vp"]), (row["tp"], row["pp"], row["vp"]))
            # Megatron refuses the overlap without sequence parallelism.
            self.assertTrue(r["sequence_parallel"] or not r["tp_comm_overlap"], row["model"])

    def test_a_recipe_with_other_parallelism_is_refused(self):
        row = dict(pp.rows()[1], vp=2)  # GPT3-20B, whose recipe sets no interleaving
        self.assertIn("recipe", pp.check_row(row))


SOURCE_MD = """
## Large Language Models

### Pretraining

| Model     | #-GPUs | GBS  | MBS | Sequence Length| TP | PP | CP | VP | Tokens / sec / GPU | Model TFLOP / sec / GPU |
| -----     | ------ | ---  | --- | ---------------| -- | -- | -- | -- | ------------------ | ----------------------- |
| GPT3-5B   | 64     | 2048 | 4   | 2048           | 1  | 1  | 1  | 1  | 22521              | 736                     |
| LLAMA2-7B | 8      | 128  | 1   | 4096           | 1  | 1  | 1  | 1  | 16847              | [776](https://x)        |

### Finetuning

| LLAMA2-7B  | SFT      | 8      | 32  | 1   | 4096            | 1  | 1  | 17120              | 682 |
"""


class SourceTest(unittest.TestCase):
    def test_parse_reads_the_pretraining_table_alone(self):
        self.assertEqual(pp.parse_source(SOURCE_MD), [
            ("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 1, 22521),
            ("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 1, 16847)])

    def test_rows_missing_from_the_source_are_named(self):
        misses = pp.check_source(SOURCE_MD)
        self.assertEqual(len(misses), len(pp.ROWS) - 2)
        self.assertTrue(any(m.startswith("GPT3-20B on 64 GPUs") for m in misses))
        changed = SOURCE_MD.replace("22521", "22522")
        self.assertTrue(any(m.startswith("GPT3-5B on 64 GPUs") for m in pp.check_source(changed)))


class MathTest(unittest.TestCase):
    def test_mape(self):
        self.assertAlmostEqual(pp.mape([(10.0, 11.0), (10.0, 8.0)]), 15.0)

    def test_bisect_finds_a_decreasing_functions_target(self):
        x = pp.bisect(lambda e: 2.0 / e, 0.01, 1.0, 4.0)
        self.assertAlmostEqual(x, 0.5, places=6)


class CliTest(unittest.TestCase):
    def test_check_prints_every_row_without_the_binary(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(pp.main(["--check"]), 0)
        self.assertEqual(out.getvalue().count("measured"), len(pp.ROWS))

    def test_analyze_is_required_without_check(self):
        self.assertIn("--analyze", usage_error(self, pp.main, []))

    def test_a_fraction_out_of_range_is_refused(self):
        self.assertIn("--tp-overlap-fraction", usage_error(
            self, pp.main, ["--analyze", "x", "--tp-overlap-fraction", "1.5"]))


if __name__ == "__main__":
    unittest.main()

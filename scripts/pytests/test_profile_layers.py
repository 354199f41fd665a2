"""Pure parts of scripts/profile_layers.py: parameter counts from the model
shapes, gradient-ready deltas, the CSV it writes, and its argument errors."""

import os
import tempfile
import unittest

from helpers import usage_error
import profile_layers as pl


class ParameterCountTest(unittest.TestCase):
    def total(self, name, tied=True):
        return sum(n for _, n in pl.expected_group_params(pl.CONFIGS[name], tied))

    def test_gpt2_sizes_match_the_published_counts(self):
        # GPT-2 with the LM head tied to the token embedding.
        self.assertEqual(self.total("gpt2-small"), 124439808)
        self.assertEqual(self.total("gpt2-medium"), 354823168)
        self.assertEqual(self.total("gpt2-large"), 774030080)
        self.assertEqual(self.total("gpt2-xl"), 1557611200)

    def test_gpt2_small_groups(self):
        groups = pl.expected_group_params(pl.CONFIGS["gpt2-small"])
        self.assertEqual(groups[0], ("embedding", 50257 * 768 + 1024 * 768))
        self.assertEqual(groups[1], ("block_0", 7087872))
        self.assertEqual(groups[12][0], "block_11")
        self.assertEqual(groups[-2:], [("ln_f", 1536), ("lm_head", 0)])
        untied = pl.expected_group_params(pl.CONFIGS["gpt2-small"], tied=False)
        self.assertEqual(untied[-1], ("lm_head", 50257 * 768))

    def test_bert_base_with_mlm_head(self):
        groups = pl.expected_group_params(pl.CONFIGS["bert-base"])
        self.assertEqual(groups[0], ("embedding", 23837184))
        self.assertEqual(groups[1], ("block_0", 7087872))
        self.assertEqual(groups[-1], ("head", 768 * 768 + 768 + 2 * 768 + 30522))
        self.assertEqual(self.total("bert-base"), 109514298)


class TensorParallelShardTest(unittest.TestCase):
    def test_tp1_is_the_whole_model(self):
        cfg = pl.CONFIGS["gpt2-small"]
        self.assertEqual(pl.expected_group_params(cfg, tp=1), pl.expected_group_params(cfg))

    def test_a_block_shard_at_tp2(self):
        cfg = pl.CONFIGS["gpt2-mini"]  # hidden 256, FFN 1024
        groups = dict(pl.expected_group_params(cfg, tied=False, tp=2))
        d, inner = 256, 1024
        attention = d * 3 * d // 2 + 3 * d // 2 + d // 2 * d + d
        mlp = d * inner // 2 + inner // 2 + inner // 2 * d + d
        self.assertEqual(groups["block_0"], 2 * 2 * d + attention + mlp)
        # Embedding, final LayerNorm and head stay whole.
        whole = dict(pl.expected_group_params(cfg, tied=False))
        for name in ("embedding", "ln_f", "lm_head"):
            self.assertEqual(groups[name], whole[name], name)
        # Two shards hold the whole block but for the row-parallel biases,
        # which each rank keeps whole.
        self.assertEqual(2 * groups["block_0"] - 2 * (2 * 2 * d) - 2 * d,
                         whole["block_0"] - 2 * 2 * d)

    def test_a_degree_that_does_not_split_the_heads_is_refused(self):
        with self.assertRaises(ValueError) as cm:
            pl.expected_group_params(pl.CONFIGS["gpt2-mini"], tp=3)
        self.assertIn("4 heads", str(cm.exception))

    def test_tp_columns(self):
        names = ["embedding", "block_0", "block_1", "ln_f", "lm_head"]
        self.assertEqual(pl.tp_columns(names, 2),
                         [(2, 0), (2, 2), (2, 2), (2, 0), (2, 0)])


class ReadyDeltasTest(unittest.TestCase):
    def test_in_backward_order(self):
        # Registration order a, b, c; backward readies c at 1, b at 3, a at 6.
        self.assertEqual(pl.ready_deltas([6.0, 3.0, 1.0]), [3.0, 2.0, 1.0])

    def test_an_item_ready_early_counts_with_its_predecessor(self):
        # b became ready before c: it costs nothing after c.
        self.assertEqual(pl.ready_deltas([5.0, 0.5, 2.0]), [3.0, 0.0, 2.0])

    def test_sum_is_the_last_ready_time(self):
        done = [9.0, 4.0, 7.0, 1.0]
        self.assertAlmostEqual(sum(pl.ready_deltas(done)), 9.0)
        self.assertEqual(pl.ready_deltas([]), [])


class BackwardTransientsTest(unittest.TestCase):
    # Events are (item, allocated, peak since the previous event).

    def test_each_interval_above_the_higher_of_its_ends(self):
        # Registration order a, b, c; backward starts at 100 and readies c
        # (peak 400, then 150), b (peak 180, then 170), a (peak 500, then
        # 90). The first interval, from the start, is c's.
        events = [(2, 150, 400), (1, 170, 180), (0, 90, 500)]
        self.assertEqual(pl.backward_transients(3, 100, events),
                         [500 - 170, 180 - 170, 400 - 150])

    def test_an_interval_spans_every_event_up_to_the_last_of_its_item(self):
        # c is ready at its second event; b's parameter hook ran between
        # c's two, so b is ready with c (empty interval) and c's interval
        # holds all three peaks.
        events = [(2, 120, 130), (1, 140, 300), (2, 110, 150), (0, 100, 160)]
        self.assertEqual(pl.backward_transients(3, 100, events), [160 - 110, 0, 300 - 110])

    def test_never_negative_and_zero_without_events(self):
        # Nothing above either end (a's peak below its start, as no real
        # allocator reports, still gives 0); b has no hook at all.
        events = [(2, 200, 200), (0, 50, 150)]
        self.assertEqual(pl.backward_transients(3, 100, events), [0, 0, 0])
        self.assertEqual(pl.backward_transients(2, 100, []), [0, 0])


class SlowestRankTest(unittest.TestCase):
    def test_alone_the_times_are_this_process_own(self):
        # A process alone needs no process group (nor torch) for this.
        self.assertEqual(pl.ready_times_slowest_rank(None, [1.0, 2.0], 1), [1.0, 2.0])


class OutputTest(unittest.TestCase):
    def test_profile_csv(self):
        text = pl.format_profile([("embedding", 10, 0.5, 4), ("lm_head", 0, 0.25, 4)],
                                 ["made by a test"])
        self.assertEqual(text, "# made by a test\nname,params,grad_time_s,dtype_bytes\n"
                               "embedding,10,0.5,4\nlm_head,0,0.25,4\n")
        with self.assertRaises(ValueError):
            pl.format_profile([("a,b", 1, 0.1, 4)], [])

    def test_profile_text_with_the_sharding_columns(self):
        rows = [("embedding", 10, 0.5, 4, 0.25, 4096, 2048, 8, 512, 2),
                ("lm_head", 0, 0.25, 4, 0.125, 1024, None, 8, 65536, 0)]
        text = pl.format_profile(rows, [])
        self.assertEqual(text, "name,params,grad_time_s,dtype_bytes,fwd_time_s,"
                               "activation_bytes,output_bytes,microbatch,bwd_transient_bytes,"
                               "param_tensors\n"
                               "embedding,10,0.5,4,0.25,4096,2048,8,512,2\n"
                               "lm_head,0,0.25,4,0.125,1024,,8,65536,0\n")
        # On the CPU the transients are None: the column is there, empty;
        # a row leaving columns off has them empty too.
        cpu = pl.format_profile([("a", 1, 0.5, 4, 0.25, 8, None, 2, None, 1),
                                 ("b", 1, 0.5, 4, 0.25)], [])
        self.assertEqual(cpu.splitlines()[1:], ["a,1,0.5,4,0.25,8,,2,,1", "b,1,0.5,4,0.25,,,,,"])

    def test_profile_text_with_the_tp_columns(self):
        rows = [("embedding", 10, 0.5, 4, 0.25, 4096, 2048, 8, None, 2),
                ("block_0", 6, 0.4, 4, 0.2, 1024, 2048, 8, None, 12),
                ("lm_head", 0, 0.25, 4, 0.125)]
        text = pl.format_profile(rows, [], tp=2)
        self.assertEqual(text.splitlines(), [
            "name,params,grad_time_s,dtype_bytes,fwd_time_s,activation_bytes,output_bytes,"
            "microbatch,bwd_transient_bytes,param_tensors,tp,tp_allreduces",
            "embedding,10,0.5,4,0.25,4096,2048,8,,2,2,0",
            "block_0,6,0.4,4,0.2,1024,2048,8,,12,2,2",
            "lm_head,0,0.25,4,0.125,,,,,,2,0"])
        # --tp 1: today's text and the two columns.
        plain = pl.format_profile(rows, []).splitlines()
        at_one = pl.format_profile(rows, [], tp=1).splitlines()
        self.assertEqual([line.rsplit(",", 2)[0] for line in at_one], plain)
        self.assertEqual([line.rsplit(",", 2)[1:] for line in at_one[1:]],
                         [["1", "0"], ["1", "2"], ["1", "0"]])
        # Per-parameter rows have no layer columns to follow.
        with self.assertRaises(ValueError):
            pl.format_profile([("wte.weight", 10, 0.5, 4)], [], tp=2)

    def test_atomic_write_refuses_to_overwrite(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.csv")
            pl.write_text_atomic(path, "one\n", force=False)
            with self.assertRaises(FileExistsError):
                pl.write_text_atomic(path, "two\n", force=False)
            pl.write_text_atomic(path, "two\n", force=True)
            with open(path) as f:
                self.assertEqual(f.read(), "two\n")
            self.assertEqual(os.listdir(tmp), ["p.csv"])

    def test_mean(self):
        self.assertEqual(pl.mean([1.0, 2.0, 6.0]), 3.0)
        with self.assertRaises(ValueError):
            pl.mean([])


class ArgumentTest(unittest.TestCase):
    def test_defaults(self):
        args = pl.parse_args(["--model", "gpt2-small", "-o", "/nonexistent/x.csv"])
        self.assertEqual((args.batch_size, args.seq_len, args.dtype), (4, 1024, "fp32"))
        self.assertEqual((args.device, args.granularity, args.warmup, args.iters),
                         ("cuda", "layer", 3, 10))

    def test_errors_name_the_flag_and_value(self):
        out = "/nonexistent/x.csv"
        cases = [
            (["--model", "gpt3", "-o", out], "gpt3"),
            (["--model", "bert-base", "--seq-len", "1024", "-o", out], "--seq-len 1024"),
            (["--model", "gpt2-small", "--device", "tpu", "-o", out], "'tpu'"),
            (["--model", "gpt2-small", "--device", "cpu", "--dtype", "fp16", "-o", out], "fp16"),
            (["--model", "gpt2-small", "--batch-size", "0", "-o", out], "'0'"),
            (["--model", "gpt2-small", "--iters", "x", "-o", out], "'x'"),
            (["--model", "gpt2-small"], "--out"),
            (["--model", "gpt2-mini", "--seq-len", "64", "--tp", "3", "-o", out], "--tp 3"),
            (["--model", "gpt2-mini", "--tp", "0", "-o", out], "'0'"),
            (["--model", "gpt2-mini", "--seq-len", "64", "--tp", "2", "--granularity", "param",
              "-o", out],
             "--granularity layer"),
        ]
        for argv, want in cases:
            self.assertIn(want, usage_error(self, pl.parse_args, argv), argv)

    def test_refuses_an_existing_output(self):
        with tempfile.NamedTemporaryFile(suffix=".csv") as f:
            err = usage_error(self, pl.parse_args, ["--model", "gpt2-small", "-o", f.name])
            self.assertIn("--force", err)
            pl.parse_args(["--model", "gpt2-small", "-o", f.name, "--force"])



class GradientCopyCommentTest(unittest.TestCase):
    def test_speed_and_flags(self):
        rows = [("a", 1000, 0.1, 4), ("b", 250, 0.2, 4)]  # 5000 bytes
        line = pl.gradient_copy_comment(rows, 1e-6)
        self.assertIn("gradient copy: 5000 bytes in 1e-06 s, 5 GB/s", line)
        self.assertIn("--grad-copy-gbps 5 (add --grad-as-bucket-view", line)
        self.assertTrue(pl.gradient_copy_comment(rows, 1e-6, True).endswith(
            "collbench-analyze ddp --grad-copy-gbps 5 --grad-as-bucket-view"))
        self.assertTrue(pl.gradient_copy_comment(rows, 1e-6, False).endswith(
            "collbench-analyze ddp --grad-copy-gbps 5"))


class SyncWaitTest(unittest.TestCase):
    def test_wait_per_sync_from_the_means_and_the_header_line(self):
        sync = {"plain_s": [0.24, 0.26], "synced_s": [0.27, 0.29], "syncs": 12,
                "all_reduce_s": [0.0002]}
        # (0.28 - 0.25 - 12 x 0.0002) / 12
        self.assertAlmostEqual(pl.sync_wait(sync), 0.0023, places=12)
        line = pl.sync_wait_comment(sync)
        self.assertTrue(line.startswith("sync wait: 0.0023 s per blocking call (steps of the "
                                        "plain model with 12 syncs"), line)
        self.assertIn("0.28 s against 0.25 s without, 2 pairs", line)
        self.assertTrue(line.endswith("--comm-streams blocking --sync-wait-s 0.0023"), line)

    def test_drift_below_the_noise_is_negative_and_its_flag_zero(self):
        sync = {"plain_s": [0.25], "synced_s": [0.25], "syncs": 4, "all_reduce_s": [0.001]}
        self.assertAlmostEqual(pl.sync_wait(sync), -0.001, places=12)
        self.assertTrue(pl.sync_wait_comment(sync).endswith("--sync-wait-s 0"))


if __name__ == "__main__":
    unittest.main()

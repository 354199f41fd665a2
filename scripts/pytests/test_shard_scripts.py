"""Pure parts of scripts/shard_train.py, scripts/shard_calibrate.py,
scripts/shard_memory_compare.py and scripts/shard_trace.py: the strategy
list, the CSV row, reading it back, the error and the ranking, the profiles
a comparison reads, the trace's sums."""

import argparse
import os
import tempfile
import unittest

from helpers import usage_error
import shard_calibrate as sc
import shard_memory_compare as smc
import shard_trace as strace
import shard_train as st
import torch_world


class ShardTrainTest(unittest.TestCase):
    def test_strategies(self):
        self.assertEqual(st.parse_strategies("ddp, fsdp"), ["ddp", "fsdp"])
        for bad in ["", "ddp,zero3", "fsdp2"]:
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                st.parse_strategies(bad)

    def test_row_means_and_spread(self):
        steps = [(0.1, 0.2, 0.05, 0.4), (0.1, 0.2, 0.05, 0.6)]
        row = st.csv_row("ddp", 2, steps, None)
        self.assertEqual(row, "ddp,2,2,0.5,0.1,0.1,0.2,0.05,,,,")
        self.assertEqual(len(row.split(",")), len(st.CSV_HEADER.split(",")))
        self.assertTrue(st.csv_row("fsdp", 2, steps, [40, 10, 30, 20]).endswith(",40,10,30,20"))


class ShareGpusTest(unittest.TestCase):
    def test_each_rank_its_own_host_only_when_ranks_outnumber_gpus(self):
        env = {"RANK": "3", "LOCAL_RANK": "1", "HOSTNAME": "n1"}
        self.assertFalse(torch_world.share_gpus(env, 2, 2, "t"))
        self.assertNotIn("NCCL_HOSTID", env)
        self.assertTrue(torch_world.share_gpus(env, 2, 1, "t"))
        self.assertEqual(env["NCCL_HOSTID"], "n1-rank-3")
        given = {"RANK": "0", "NCCL_HOSTID": "mine"}
        self.assertFalse(torch_world.share_gpus(given, 4, 1, "t"))
        self.assertEqual(given["NCCL_HOSTID"], "mine")


class ShardCalibrateTest(unittest.TestCase):
    def test_reads_rows_and_scores(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "steps.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write("# made by a test\n" + st.CSV_HEADER + "\n"
                        + st.csv_row("ddp", 2, [(0.1, 0.2, 0.05, 0.4)], None) + "\n")
            rows = sc.read_steps(path)
        self.assertEqual(rows["ddp"]["step_s"], "0.4")
        self.assertAlmostEqual(sc.mape([(100.0, 110.0), (200.0, 180.0)]), 10.0)
        self.assertEqual(sc.order({"a": 3.0, "b": 1.0, "c": 2.0}), ["b", "c", "a"])

    def test_root_layers_are_the_rows_outside_the_blocks(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", encoding="utf-8") as f:
            f.write("# header\nname,params,grad_time_s\nembedding,1,0\nblock_0,1,0\n"
                    "block_11,1,0\nblock_x,1,0\nln_f,1,0\nlm_head,0,0\n")
            f.flush()
            self.assertEqual(sc.root_layers(f.name), ["embedding", "block_x", "ln_f", "lm_head"])

    def test_copy_speed_from_the_profile_header(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "profile.csv")

            def header(line):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("# model: m\n" + line + "name,params,grad_time_s\nl,1,0.1\n")
                return sc.copy_gbps(path)

            self.assertEqual(header("# gradient copy: 2000 bytes in 2e-06 s, 8.879 GB/s (every "
                                    "rank at once); ... --grad-copy-gbps 8.879\n"), 8.879)
            self.assertEqual(header("# gradient copy: 9 bytes in 1 s, 1.235e+04 GB/s (x)\n"),
                             12350.0)
            self.assertIsNone(header(""))
            with self.assertRaises(SystemExit) as done:
                header("# gradient copy: 9 bytes in 1 s, 1.2.3 GB/s (x)\n")
            self.assertIn("'1.2.3' is not a number", str(done.exception))

    def test_sync_wait_from_the_profile_header(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "profile.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write("# sync wait: -0.000123 s per blocking call (x): ... --sync-wait-s 0\n"
                        "name,params,grad_time_s\nl,1,0.1\n")
            self.assertEqual(sc.sync_wait_s(path), -0.000123)
            with open(path, "w", encoding="utf-8") as f:
                f.write("name,params,grad_time_s\n# sync wait: 1 s per blocking call\n")
            self.assertIsNone(sc.sync_wait_s(path), "only the header counts")
            for bad in ("nan", "", "1.2.3"):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("# sync wait: %s s per blocking call (x)\nname,params,grad_time_s\n" % bad)
                with self.assertRaises(SystemExit) as done:
                    sc.sync_wait_s(path)
                self.assertIn("the sync wait %r is not a number" % bad, str(done.exception))
        self.assertEqual(sc.wait_said(-0.002), "nothing: the profile header measured -2.000 ms, "
                         "below the noise, charged as 0")
        self.assertEqual(sc.wait_said(0.0015), "1.500 ms each for the other ranks (profile header)")

    def test_missing_inputs_and_a_failing_analyze_are_one_line_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            err = usage_error(self, sc.main, ["--analyze", "x", "--dir", tmp, "--world-size", "2"])
            self.assertIn("--dir %s: no steps.csv there" % tmp, err)
        with self.assertRaises(SystemExit) as done:
            sc.run_analyze([os.path.join(os.sep, "no", "such", "analyze"), "zero"])
        self.assertIn("--analyze", str(done.exception))
        with self.assertRaises(SystemExit) as done:
            sc.run_analyze(["sh", "-c", "echo first >&2; echo 'error: --profile p: bad' >&2; exit 2"])
        self.assertEqual(str(done.exception),
                         "shard_calibrate.py: sh -c exited with 2: error: --profile p: bad")


MS = 1_000_000  # ns


class ShardTraceTest(unittest.TestCase):
    def test_sums_by_hand(self):
        # Step 0 is warm-up. In step 1 rank 1 arrives 4 ms late at the
        # all-gather, leaves it 2 ms after rank 0, computes 1 ms longer and
        # arrives 3 ms late at the reduce-scatter.
        rank0 = [("all_gather", 0, 0, 50 * MS),
                 ("all_gather", 1, 100 * MS, 110 * MS), ("reduce_scatter", 1, 120 * MS, 125 * MS)]
        rank1 = [("all_gather", 0, 1 * MS, 50 * MS),
                 ("all_gather", 1, 104 * MS, 112 * MS), ("reduce_scatter", 1, 123 * MS, 126 * MS)]
        got = strace.summarize([rank0, rank1], first_step=1)
        self.assertEqual(got, {
            "steps": 1, "calls": [2],
            "skew_ms": 7.0,          # 4 + 3
            "transfer_ms": 8.0,      # (110 - 104) + (125 - 123)
            "left_apart_ms": 2.0,    # the all-gather's exits, 112 - 110; none before it in step 1
            "work_apart_ms": 1.0,    # (123 - 112) - (120 - 110)
            "in_call_ms": [15.0, 11.0],
            "last_arrivals": [0, 2],
        })
        self.assertEqual(strace.summarize([rank0, rank1], first_step=0)["steps"], 2)

    def test_ranks_that_disagree_and_no_timed_step_are_errors(self):
        one = [("all_gather", 1, 0, MS)]
        with self.assertRaisesRegex(ValueError, "different numbers of calls"):
            strace.summarize([one, one * 2], 0)
        with self.assertRaisesRegex(ValueError, "call 0 differs"):
            strace.summarize([one, [("reduce_scatter", 1, 0, MS)]], 0)
        with self.assertRaisesRegex(ValueError, "no calls in the timed steps"):
            strace.summarize([one, one], 2)

    def test_tensors_by_position_or_by_name(self):
        self.assertEqual(strace.tensor_arguments(("o", "i", None), {}), ("o", "i"))
        self.assertEqual(strace.tensor_arguments((), {"output_tensor": "o", "input_tensor": "i"}),
                         ("o", "i"))
        self.assertEqual(strace.tensor_arguments(("o",), {"input": "i"}), ("o", "i"))
        with self.assertRaisesRegex(TypeError, "no input_tensor"):
            strace.tensor_arguments(("o",), {})

    def test_bad_flags_are_usage_errors(self):
        err = usage_error(self, strace.parse_args, ["--model", "gpt2-mini", "--iters", "0"])
        self.assertIn("--iters", err)
        err = usage_error(self, strace.parse_args, ["--model", "gpt2-mini", "--seq-len", "99999"])
        self.assertIn("--seq-len 99999", err)


class ShardMemoryCompareTest(unittest.TestCase):
    def test_profiles_by_suffix(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("b-profile.csv", "a-profile.csv", "a-profile-transient.csv",
                         "-profile.csv", "a-steps-ddp.csv"):
                open(os.path.join(tmp, name), "w").close()
            self.assertEqual([n for n, _ in smc.profile_files(tmp, "-profile.csv")], ["a", "b"])
            found = smc.profile_files(tmp, "-profile-transient.csv")
            self.assertEqual(found, [("a", os.path.join(tmp, "a-profile-transient.csv"))])

    def test_a_suffix_starting_with_a_dash_is_a_value_and_a_pattern_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(SystemExit) as done:
                smc.main(["--dir", tmp, "--curves", tmp, "--profile-suffix", "-p-t.csv"])
            self.assertEqual(str(done.exception), "--dir %s: no NAME-p-t.csv there" % tmp)
        err = usage_error(self, smc.main,
                          ["--dir", "d", "--curves", "c", "--profile-suffix", "*.csv"])
        self.assertIn("--profile-suffix '*.csv'", err)

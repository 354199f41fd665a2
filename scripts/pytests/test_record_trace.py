"""Pure parts of scripts/record_trace.py: which profiler events a trace
keeps, and its command line."""

import unittest

from helpers import usage_error
import record_trace as rt


class RecordTraceTest(unittest.TestCase):
    def test_kept_events_are_the_collectives_and_the_metadata(self):
        kept = [
            {"ph": "M", "name": "process_name"},
            {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_"},
            {"ph": "X", "cat": "cpu_op", "name": "record_param_comms"},
            {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce",
             "args": {"Collective name": "allreduce"}},
            {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce"},
            {"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:all_reduce"},
        ]
        dropped = [
            {"ph": "X", "cat": "cpu_op", "name": "aten::add"},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1"},
            {"ph": "X", "cat": "user_annotation", "name": "glooish:thing"},
        ]
        for event in kept:
            self.assertTrue(rt.is_kept(event), event)
        for event in dropped:
            self.assertFalse(rt.is_kept(event), event)

    def test_command_line(self):
        tiny = ["--backend", "gloo", "--model", "gpt2-tiny", "--seq-len", "32"]
        args = rt.parse_args(tiny + ["--strategy", "pipeline", "--out-dir", "d"])
        self.assertEqual((args.strategy, args.microbatches, args.full_trace), ("pipeline", 4, False))
        err = usage_error(self, rt.parse_args, tiny + ["--strategy", "tp", "--out-dir", "d"])
        self.assertIn("--strategy", err)
        err = usage_error(self, rt.parse_args, tiny + ["--strategy", "ddp"])
        self.assertIn("--out-dir", err)
        err = usage_error(self, rt.parse_args, ["--backend", "gloo", "--model", "bert-base",
                                                "--seq-len", "32", "--strategy", "pipeline",
                                                "--out-dir", "d"])
        self.assertIn("splits a GPT-2", err)
        err = usage_error(self, rt.parse_args, tiny + ["--strategy", "pipeline", "--batch-size",
                                                       "6", "--out-dir", "d"])
        self.assertIn("not a multiple of --microbatches 4", err)


if __name__ == "__main__":
    unittest.main()

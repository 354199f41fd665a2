"""Pure parts of scripts/pipeline_train.py and scripts/pipeline_compare.py:
argument checks, import and --help without PyTorch."""

import contextlib
import io
import os
import subprocess
import sys
import unittest

from helpers import SCRIPTS

import pipeline_train as pt


class PipelineTrainArgsTest(unittest.TestCase):
    def test_defaults_and_lists(self):
        args = pt.parse_args(["--out-dir", "d", "--microbatches", "2,8", "--uneven", "5,3"])
        self.assertEqual(args.microbatches, [2, 8])
        self.assertEqual(args.uneven, [5, 3])
        self.assertEqual(args.global_batch, 32)

    def test_bad_counts_and_splits_are_refused(self):
        for argv in (["--microbatches", "3"], ["--microbatches", "0"], ["--uneven", "4,3"]):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                pt.parse_args(["--out-dir", "d"] + argv)

    def test_scripts_import_and_help_without_torch(self):
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import pipeline_train, pipeline_compare\n"
                "assert 'torch' not in sys.modules\n" % SCRIPTS)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in ("pipeline_train.py", "pipeline_compare.py"):
            result = subprocess.run([sys.executable, os.path.join(SCRIPTS, name), "--help"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("usage:", result.stdout)


if __name__ == "__main__":
    unittest.main()

"""scripts/gpu-smoke.sh refuses an unknown COLLBENCH_SMOKE_PARTS part in one
line (exit 3), before it makes the output folder or asks any GPU."""

import os
import subprocess
import tempfile
import unittest

from helpers import SCRIPTS


class SmokePartsTest(unittest.TestCase):
    def test_an_unknown_part_is_refused_before_anything_is_made(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "smoke")
            env = dict(os.environ, COLLBENCH_SMOKE_PARTS="tests bogus")
            done = subprocess.run(["bash", os.path.join(SCRIPTS, "gpu-smoke.sh"), out],
                                  env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertEqual(done.stderr.strip().splitlines(),
                             ["COLLBENCH_SMOKE_PARTS: unknown part 'bogus' "
                              "(sweeps launch host shared stopped nccl-tests tests)"])
            self.assertEqual(done.stdout, "")
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()

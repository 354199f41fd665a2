"""scripts/lib/results-json.sh's record of a failed `collbench info`: the
launcher's error lines and the last line, joined in one line."""

import os
import subprocess
import unittest

from helpers import SCRIPTS

LIB = os.path.join(SCRIPTS, "lib", "results-json.sh")


def info_error(stderr_script):
    """COLLBENCH_INFO_ERROR after a launcher that runs `stderr_script`."""
    script = ('source "$1"; COLLBENCH_BIN=true; COLLBENCH_INFO_LAUNCH=(bash -c "$2" --); '
              '_results_collect_info; printf %s "$COLLBENCH_INFO_ERROR"')
    out = subprocess.run(["bash", "-c", script, "t", LIB, stderr_script],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout


class InfoErrorTest(unittest.TestCase):
    def test_error_lines_and_the_last_once_each_with_their_own_bars_kept(self):
        got = info_error("echo 'srun: error: n1: task 1: Segmentation fault' >&2; "
                         "echo 'an error in a|b' >&2; echo 'srun: error: n1: task 1: "
                         "Segmentation fault' >&2; exit 139")
        self.assertEqual(got, "collbench info --json exited with 139: srun: error: n1: task 1: "
                              "Segmentation fault | an error in a|b")

    def test_no_output_says_so(self):
        self.assertEqual(info_error("exit 3"),
                         "collbench info --json exited with 3: no error output")


if __name__ == "__main__":
    unittest.main()

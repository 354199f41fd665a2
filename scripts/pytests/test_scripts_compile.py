"""The PyTorch scripts byte-compile and import without PyTorch (torch is
imported only when a model is built or a process group started)."""

import os
import py_compile
import subprocess
import sys
import tempfile
import unittest

from helpers import SCRIPTS

SCRIPT_NAMES = ["profile_layers.py", "allreduce_bench.py", "ddp_bucket_sweep.py"]


class CompileTest(unittest.TestCase):
    def test_byte_compile(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in SCRIPT_NAMES:
                py_compile.compile(os.path.join(SCRIPTS, name),
                                   cfile=os.path.join(tmp, name + "c"), doraise=True)

    def test_import_does_not_import_torch(self):
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import profile_layers, allreduce_bench, ddp_bucket_sweep, torch_world\n"
                "assert 'torch' not in sys.modules, 'torch imported at module level'\n"
                % SCRIPTS)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_help_runs_without_torch(self):
        for name in SCRIPT_NAMES:
            result = subprocess.run([sys.executable, os.path.join(SCRIPTS, name), "--help"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("usage:", result.stdout)


class ShellTest(unittest.TestCase):
    """Every shell script parses (bash -n), the GPU-only ones included,
    which no test here can run."""

    def test_every_shell_script_parses(self):
        root = os.path.dirname(SCRIPTS)
        paths = []
        for folder, suffix in [("scripts", ".sh"), ("scripts/lib", ".sh"), ("sbatch", ".sbatch")]:
            for name in sorted(os.listdir(os.path.join(root, folder))):
                if name.endswith(suffix):
                    paths.append(os.path.join(root, folder, name))
        self.assertIn(os.path.join(root, "scripts", "gpu-smoke.sh"), paths)
        for path in paths:
            result = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, f"{path}: {result.stderr}")


if __name__ == "__main__":
    unittest.main()

"""scripts/gpu-smoke.sh without a GPU: an unknown part is refused in one
line before anything is made; --dry-run lists every part's commands and
ends with its budget lines, each part within one device call; a staged
build whose sources changed is refused in one line."""

import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest

from helpers import SCRIPTS

SMOKE = os.path.join(SCRIPTS, "gpu-smoke.sh")
# The most one device call may run, in seconds.
DEVICE_CALL_S = 600
PARTS = ["essential", "sweeps", "launch", "host", "shared", "graph-gap", "two-gpu", "acceptance", "parity"]


def smoke(args, parts=None, script=SMOKE):
    env = dict(os.environ)
    env.pop("NCCL_TESTS_DIR", None)
    env.pop("COLLBENCH_SMOKE_PARTS", None)
    if parts is not None:
        env["COLLBENCH_SMOKE_PARTS"] = parts
    return subprocess.run(["bash", script, *args], env=env, capture_output=True, text=True,
                          timeout=60)


def budgets(stdout):
    """The trailing 'budget: PART SECONDS' lines, as [(part, seconds)]."""
    lines = stdout.strip().splitlines()
    tail = []
    while lines and lines[-1].startswith("budget: "):
        _, part, seconds = lines.pop().split()
        tail.insert(0, (part, int(seconds)))
    return tail


class SmokePartsTest(unittest.TestCase):
    def test_an_unknown_part_is_refused_before_anything_is_made(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "smoke")
            done = smoke([out], parts="essential bogus")
            self.assertEqual(done.returncode, 3, done.stderr)
            self.assertEqual(done.stderr.strip().splitlines(),
                             ["COLLBENCH_SMOKE_PARTS: unknown part 'bogus' "
                              f"({' '.join(PARTS)})"])
            self.assertEqual(done.stdout, "")
            self.assertFalse(os.path.exists(out))

    def test_the_dry_run_lists_every_part_and_ends_with_its_budget(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "smoke")
            done = smoke(["--dry-run", out])
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertFalse(os.path.exists(out), "a dry run must write nothing")
        found = budgets(done.stdout)
        self.assertEqual([part for part, _ in found], PARTS)
        for part, seconds in found:
            self.assertLess(seconds, DEVICE_CALL_S, f"part {part} does not fit one device call")
            self.assertIn(f"=== part {part} (budget {seconds} s)", done.stdout)
            self.assertIn(f"part {part}: dry run, nothing run", done.stdout)

    def test_the_essential_part_fits_one_call_and_holds_the_essential_evidence(self):
        done = smoke(["--dry-run", "out"], parts="essential")
        self.assertEqual(done.returncode, 0, done.stderr)
        [(part, seconds)] = budgets(done.stdout)
        self.assertEqual(part, "essential")
        self.assertLessEqual(seconds, DEVICE_CALL_S)
        # Its sections' budgets add up to the part's.
        sections = [int(line.rsplit("(budget ", 1)[1].split()[0])
                    for line in done.stdout.splitlines() if line.startswith("# ")]
        self.assertEqual(sum(sections) + 10, seconds)
        for command in ["/all_reduce_perf -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 > out/side-by-side",
                        "/all_reduce_perf -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20 >",
                        "collbench all-reduce -b 8 -e 1G -f 2 -n 50 -w 10 -c 1 -G 20",
                        "collbench sendrecv -b 8 -e 64M", "collbench scatter -b 8 -e 64M",
                        "mpirun -n 2 (NCCL_HOSTID per rank) target/release/collbench gather",
                        "kill -STOP rank 1", "-T 5 -G 10 --out out/stopped-rank-graph.json",
                        "--ignored --skip two_gpus"]:
            self.assertIn(command, done.stdout)

    def test_a_stale_staged_build_is_refused_in_one_line(self):
        with tempfile.TemporaryDirectory() as repo:
            os.makedirs(os.path.join(repo, "scripts"))
            script = os.path.join(repo, "scripts", "gpu-smoke.sh")
            shutil.copy(SMOKE, script)
            os.makedirs(os.path.join(repo, "src"))
            source = os.path.join(repo, "src", "main.rs")
            with open(source, "w") as f:
                f.write("fn main() {}\n")
            staged = os.path.join(repo, "target", "gpu-carry", "target", "release")
            os.makedirs(staged)
            digest = hashlib.sha256(b"fn main() {}\n").hexdigest()
            # As scripts/gpu-prepare.sh writes it.
            with open(os.path.join(staged, "gpu-build.txt"), "w") as f:
                f.write(f"# commit 0123abcd\n{digest}  src/main.rs\n")
            done = smoke(["--dry-run", "out"], parts="host", script=script)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(source, "a") as f:
                f.write("// changed after the build\n")
            done = smoke(["--dry-run", "out"], parts="host", script=script)
            self.assertEqual(done.returncode, 3)
            self.assertEqual(done.stdout, "")
            self.assertEqual(done.stderr.strip().splitlines(),
                             ["stale staged build: src/main.rs differs from what "
                              "scripts/gpu-prepare.sh built (commit 0123abcd): run it again "
                              "and carry target/gpu-carry"])


if __name__ == "__main__":
    unittest.main()

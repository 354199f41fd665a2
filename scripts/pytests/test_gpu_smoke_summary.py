"""gpu_smoke_check.py summary on a small made-up results folder: each line
NOTES.md quotes is what the files say, and a missing part is said missing."""

import contextlib
import io
import json
import pathlib
import tempfile
import unittest

from helpers import SCRIPTS
import gpu_smoke_check
import gpu_smoke_summary as s

MIB = 1 << 20
HEADER = """# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""


def nccl_tests_log(rows):
    """One nccl-tests run: (bytes, out-of-place us) rows."""
    return HEADER + "".join(f"{size:>12} {size // 4:>12} float sum -1 {t:.2f} 0 0 0 0.5 0 0 0\n"
                            for size, t in rows)


def report(collective, rows, world=1, dirty=False, status="complete", argv=None):
    results = []
    for size, mean in rows:
        algbw = size / mean / 1e3
        factor = 2 * (world - 1) / world if collective == "all_reduce" else 1.0
        results.append({"collective": collective, "bytes": size, "placement": "out",
                        "time_us": {"mean": mean, "min": mean, "p50": mean, "p99": mean,
                                    "max": mean},
                        "algbw_gbps": algbw, "busbw_gbps": algbw * factor,
                        "wrong_elements": 0})
    return {"tool": {"git_commit": "0123456789abcdef", "git_dirty": dirty},
            "run": {"status": status, "argv": argv or ["collbench"],
                    "started_at": "2026-01-01T00:00:00Z",
                    "finished_at": "2026-01-01T00:00:10Z"},
            "config": {"benchmark": collective},
            "environment": {"world_size": world}, "results": results}


def delivery(size, memory, strategy, time_us, copy_us, chunk=None):
    return {"bytes": size, "host_memory": memory, "strategy": strategy, "chunk_bytes": chunk,
            "time_us": {"mean": time_us}, "host_to_gpu": {"time_us": {"mean": copy_us},
                                                          "gbps": size / copy_us / 1e3},
            "delivered_gbps": size / time_us / 1e3, "wrong_bytes": 0}


def write(root, files):
    for name, content in files.items():
        path = pathlib.Path(root) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))


class SummaryTest(unittest.TestCase):
    def summary(self, files):
        with tempfile.TemporaryDirectory() as d:
            write(d, files)
            return s.summary(d)

    def test_every_quoted_line_is_computed_from_the_files(self):
        sizes = [8, 512 * 1024, 32 * MIB, 64 * MIB]
        theirs_plain = [6.00, 6.50, 26.00, 48.00]
        theirs_graph = [1.00, 2.20, 24.00, 47.00]
        files = {
            "side-by-side/all-reduce-wall.json": report(
                "all_reduce", list(zip(sizes, [6.50, 6.00, 26.10, 47.60])), dirty=True),
            "side-by-side/all-reduce-graph.json": report(
                "all_reduce", list(zip(sizes, [0.90, 1.80, 23.60, 46.80])), dirty=True),
            "side-by-side/nccl-tests-plain.log": nccl_tests_log(zip(sizes, theirs_plain)),
            "side-by-side/nccl-tests-graph.log": nccl_tests_log(zip(sizes, theirs_graph)),
            "side-by-side/nccl-tests-graph-register.log":
                nccl_tests_log(zip(sizes, theirs_graph))
                + nccl_tests_log(zip(sizes, [1.02, 2.19, 24.00, 47.00])),
            "sweeps/sendrecv-wall.json": report("sendrecv", [(64 * MIB, 100.0)]),
            "sweeps/sendrecv-iteration.json": report("sendrecv", [(64 * MIB, 106.5)]),
            "sweeps/reduce-wall.json": report("reduce", [(64 * MIB, 100.0), (1 << 30, 900.0)]),
            "sweeps/reduce-iteration.json": report("reduce", [(64 * MIB, 100.5),
                                                              (1 << 30, 902.0)]),
            "shared/shared-2-all-reduce.json": report(
                "all_reduce", [(64, 4300.0), (256 * 1024, 4600.0)], world=2, dirty=True,
                argv=["collbench", "all-reduce", "-n", "5"]),
            "host-broadcast/host-broadcast.json": {
                "tool": {"git_commit": "0123456789abcdef", "git_dirty": True},
                "run": {"status": "complete"},
                "deliveries": [delivery(64 * MIB, "pinned", "direct", 1560.0, 1000.0),
                               delivery(64 * MIB, "pinned", "nccl", 1010.0, 1000.0),
                               delivery(64 * MIB, "pageable", "direct", 6000.0, 1000.0)]},
            "machine.txt": "| NVIDIA-SMI 580.1   Driver Version: 580.1   CUDA Version: 13.0 |\n",
            "sweeps/info.txt": "mpi: Open MPI v4.1.6\nnccl: 2.28.3 (libnccl.so)\n"
                               "rank 0 (local 0) pid 5 on vm: GPU 0 NVIDIA H100 [0000:00:06.0]\n",
            "sweeps.log": "+ collbench ...\nsmoke exit 124 after 439 s\n",
            "stopped.log": "=== parts stopped at 129 s\n"
                           "stopped-rank: exit 4 after 6 s, report failed with 58 rows\n"
                           "=== exit 1 at 176 s\n",
            "tests.log": "test a ... ok\ntest b ... FAILED\n=== exit 1 at 31 s\n",
        }
        lines = self.summary(files)
        self.assertIn("sweeps.log: smoke exit 124 after 439 s", lines)
        self.assertIn("tests.log: === exit 1 at 31 s", lines)
        self.assertIn("side-by-side/: 2 reports, 2 complete, 0 wrong elements, 0 wrong bytes, "
                      "git_dirty true in 2, commit 0123456789ab", lines)
        # Wall: +0.50 and -0.50 below 32 MiB; +0.10 (0.38 %) and -0.40
        # (-0.83 %) from 32 MiB.
        self.assertIn("wall: below 32 MiB -0.50 to +0.50 us; 32 MiB and up -0.40 to +0.10 us, "
                      "largest -0.83% at 64 MiB", lines)
        self.assertIn("-G 20 gap per size, us: 8 B -0.10; 512 KiB -0.40; 32 MiB -0.40; "
                      "64 MiB -0.20", lines)
        self.assertIn("nccl-tests-graph-register.log: 2 runs, 4 sizes (8 B-64 MiB), first minus "
                      "second -0.02 to +0.01 us", lines)
        self.assertIn("reduce: +0.50 to +2.00 us", lines)
        self.assertIn("sendrecv: +6.50 us", lines)
        self.assertIn("all: +0.50 to +6.50 us; all but sendrecv: +0.50 to +2.00 us", lines)
        self.assertIn("every-collective sweep (-n 5) sizes: 64 B, 256 KiB", lines)
        self.assertIn("pinned direct: 1.56-1.56x one pinned copy (highest at 64 MiB)", lines)
        self.assertIn("pinned nccl: 1.01-1.01x one pinned copy (highest at 64 MiB)", lines)
        self.assertIn("2 tests ran: 1 ok, 1 not ok", lines)
        self.assertIn("stopped-rank: exit 4 after 6 s, report failed with 58 rows", lines)
        for line in ["driver: 580.1", "CUDA: 13.0", "mpi (sweeps/info.txt): Open MPI v4.1.6",
                     "nccl (sweeps/info.txt): 2.28.3 (libnccl.so)", "GPU: NVIDIA H100",
                     "nccl-tests logs: nccl-tests version 2.19.6 nccl-headers=22803 "
                     "nccl-library=22803"]:
            self.assertIn(line, lines)
        # Durations: each report's 10 s; a part log's own time from its start line.
        self.assertIn("side-by-side/: 2 runs, 20 s in all, longest 10 s", lines)
        self.assertIn("stopped.log: 47 s (129 to 176 s into its device call)", lines)
        self.assertIn("sweeps.log: 439 s (0 to 439 s into its device call)", lines)

    def test_missing_parts_are_said_missing(self):
        lines = self.summary({"sweeps/reduce-wall.json": report("reduce", [(64 * MIB, 1.0)])})
        for folder in ("side-by-side", "shared", "host-broadcast"):
            self.assertIn(f"{folder}/: missing", lines)
        self.assertIn("tests.log: missing", lines)
        self.assertIn("no part logs", lines)

    def test_the_command_line_names_a_bad_folder_in_one_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = gpu_smoke_check.main(["gpu_smoke_check.py", "summary", "/nonexistent/run"])
        self.assertEqual(code, 2)
        self.assertEqual(len(err.getvalue().strip().splitlines()), 1)
        self.assertIn("/nonexistent/run", err.getvalue())

    def test_update_notes_replaces_only_the_block(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, {"tests.log": "test a ... ok\n",
                      "NOTES.md": f"# Run\n\n{s.BEGIN}\nold\n{s.END}\n\nprose\n"})
            self.assertIsNone(s.update_notes(d))
            text = (pathlib.Path(d) / "NOTES.md").read_text()
            self.assertEqual(text, "# Run\n\n" + s.notes_block(s.summary(d)) + "\n\nprose\n")
            (pathlib.Path(d) / "NOTES.md").write_text("no markers\n")
            self.assertIn("lacks the lines", s.update_notes(d))

    def test_the_committed_notes_hold_what_the_command_prints(self):
        root = pathlib.Path(SCRIPTS).parent / "results" / "2026-11-25-h100vm-1n1g-gpu-smoke-2"
        notes = (root / "NOTES.md").read_text()
        self.assertIn(s.notes_block(s.summary(root)), notes,
                      "NOTES.md's summary block is stale: run python3 scripts/gpu_smoke_check.py "
                      f"summary {root.relative_to(root.parents[1])} --update-notes")

    def test_sizes_are_named_as_notes_write_them(self):
        self.assertEqual([s.size_name(x) for x in (8, 1536, 512 * 1024, 32 * MIB, 1 << 30)],
                         ["8 B", "1536 B", "512 KiB", "32 MiB", "1 GiB"])


if __name__ == "__main__":
    unittest.main()

"""scripts/gpu_smoke_check.py on made-up reports and logs: each check fails
on the number it is there for."""

import json
import pathlib
import tempfile
import unittest

from helpers import SCRIPTS  # noqa: F401 (puts scripts/ on sys.path)
import gpu_smoke_check as g

MIB = 1 << 20
# An nccl-tests all_reduce_perf excerpt: header, then out-of-place time at
# the header's "time" column.
NCCL_TESTS_LOG = """#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00      0     9.90    0.00    0.00      0
    67108864      16777216     float     sum      -1   500.00  134.22  134.22      0   501.00  133.95  133.95      0
# Avg bus bandwidth    : 67.1
"""


def report(collective, rows, world=1, status="complete"):
    results = []
    for size, mean, wrong in rows:
        algbw = size / mean / 1e3
        factor = {"all_reduce": 2 * (world - 1) / world,
                  "all_gather": (world - 1) / world}.get(collective, 1.0)
        results.append({
            "collective": collective, "bytes": size, "placement": "out",
            "time_us": {"mean": mean, "min": mean, "p50": mean, "p99": mean, "max": mean},
            "algbw_gbps": algbw, "busbw_gbps": algbw * factor, "wrong_elements": wrong,
        })
    return {"environment": {"world_size": world}, "run": {"status": status},
            "results": results}


class CheckTest(unittest.TestCase):
    def run_check(self, files):
        with tempfile.TemporaryDirectory() as d:
            for name, content in files.items():
                text = content if isinstance(content, str) else json.dumps(content)
                (pathlib.Path(d) / name).write_text(text)
            return g.check(d)

    def test_a_sound_run_has_no_problem(self):
        wall = report("all_reduce", [(8, 10.5, 0), (64 * MIB, 502.0, 0), (1 << 30, 8000.0, 0)])
        events = report("all_reduce", [(8, 11.8, 0), (64 * MIB, 505.0, 0), (1 << 30, 8010.0, 0)])
        graph = report("all_reduce", [(8, 10.2, 0), (64 * MIB, 501.0, 0), (1 << 30, 8100.0, 0)])
        lines, problems = self.run_check({
            "all-reduce-wall.json": wall, "all-reduce-iteration.json": events,
            "all-reduce-graph.json": graph, "nccl-tests-plain.log": NCCL_TESTS_LOG,
            "nccl-tests-graph.log": NCCL_TESTS_LOG})
        self.assertEqual(problems, [])
        # events vs wall and -G vs plain (three sizes each, -G only
        # reported), three nccl-tests comparisons of two sizes each.
        self.assertEqual(len(lines), 3 + 3 + 6)
        self.assertTrue(all("reported only" in line for line in lines if "-G 20 vs plain" in line))

    def test_each_check_fails_on_its_own_number(self):
        wall = report("all_reduce", [(8, 10.5, 0), (64 * MIB, 502.0, 0), (1 << 30, 8000.0, 0)])
        slow_events = report("all_reduce", [(64 * MIB, 520.0, 0)])  # 18 us > 2 % + 3.5 us
        _, problems = self.run_check({"all-reduce-wall.json": wall,
                                      "all-reduce-iteration.json": slow_events})
        self.assertEqual(len(problems), 1)
        self.assertIn("events vs wall", problems[0])
        slow_graph = report("all_reduce", [(64 * MIB, 510.0, 0)])  # 2 % > 1 %
        _, problems = self.run_check({"all-reduce-wall.json": wall,
                                      "all-reduce-graph.json": slow_graph,
                                      "nccl-tests-graph.log": NCCL_TESTS_LOG})
        self.assertEqual(len(problems), 1)
        self.assertIn("all-reduce-graph vs nccl-tests-graph.log", problems[0])
        # Two ranks asked for NCCL's estimate and one row has none.
        estimated = report("all_reduce", [(1024, 50.0, 0), (2048, 60.0, 0)], world=2)
        estimated["run"]["argv"] = ["collbench", "all-reduce", "--nccl-estimate"]
        estimated["results"][0]["nccl_estimate_us"] = 20.0
        _, problems = self.run_check({"shared-2-estimate.json": estimated})
        self.assertEqual(problems, ["shared-2-estimate 2048 B out: no NCCL estimate"])
        estimated["environment"]["world_size"] = 1  # one rank: NCCL gives none
        estimated["results"] = [r for r in estimated["results"] if r["bytes"] == 2048]
        for r in estimated["results"]:
            r["busbw_gbps"] = 0.0
        _, problems = self.run_check({"one-estimate.json": estimated})
        self.assertEqual(problems, [])
        # 1.5 us off at 8 B: past nccl-tests' 1 us target.
        off = report("all_reduce", [(8, 11.5, 0), (64 * MIB, 502.0, 0)])
        _, problems = self.run_check({"all-reduce-wall.json": off,
                                      "nccl-tests-plain.log": NCCL_TESTS_LOG})
        self.assertEqual([p.split(":")[0] for p in problems],
                         ["all-reduce-wall vs nccl-tests-plain.log 8 B out"])

    def test_per_iteration_timing_below_32_mib_is_only_reported(self):
        events = report("all_reduce", [(8, 12.0, 0), (64 * MIB, 503.0, 0)])
        lines, problems = self.run_check({"all-reduce-iteration.json": events,
                                          "nccl-tests-plain.log": NCCL_TESTS_LOG})
        self.assertEqual(problems, [])
        self.assertTrue(any("reported only" in line for line in lines))

    def test_bad_reports_are_problems(self):
        wrong = report("all_gather", [(1024, 5.0, 3)], world=2)
        failed = report("broadcast", [(1024, 5.0, 0)], status="failed")
        broken = report("all_reduce", [(1024, 5.0, 0)], world=2)
        broken["results"][0]["busbw_gbps"] *= 2
        _, problems = self.run_check({"a.json": wrong, "b.json": failed, "c.json": broken})
        self.assertEqual(len(problems), 3, problems)

    def test_nccl_tests_must_name_the_nccl_collbench_loads(self):
        self.assertEqual(g.nccl_version_code("2.28.3"), 22803)
        self.assertEqual(g.nccl_version_code("2.8.4"), 2804)
        info = "collbench 0.1.0\nnccl: 2.28.3 (/usr/lib/libnccl.so.2.28.3)\n"
        same = "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
        self.assertEqual(g.nccl_version_problems(info, {"plain.log": same}), [])
        other = "# nccl-tests version 2.19.6 nccl-headers=22706 nccl-library=22803\n"
        [problem] = g.nccl_version_problems(info, {"plain.log": same, "graph.log": other})
        self.assertTrue(problem.startswith("graph.log: nccl-tests built with NCCL headers 22706"))
        [problem] = g.nccl_version_problems(info, {"old.log": NCCL_TESTS_LOG})
        self.assertIn("no 'nccl-headers=N nccl-library=N' line", problem)
        # In check(): info.txt beside the logs.
        _, problems = self.run_check({"info.txt": info, "nccl-tests-graph.log": other})
        self.assertEqual(len(problems), 1)

    def test_the_graph_gap_implies_an_upload_per_launch_count(self):
        files = {}
        for launches, ours, theirs in ((1, 10.0, 15.0), (20, 10.0, 10.25)):
            r = report("all_reduce", [(8, ours, 0)])
            r["config"] = {"iters": 50}
            files[f"graph-G{launches}.json"] = r
            files[f"nccl-tests-graph-G{launches}.log"] = NCCL_TESTS_LOG.replace(
                "10.00", f"{theirs:.2f}")
        lines, problems = self.run_check(files)
        self.assertEqual(problems, [])
        gap = [line for line in lines if line.startswith("graph gap")]
        # 5 us x 1 x 50 and 0.25 us x 20 x 50: the same 250 us upload.
        self.assertEqual(gap, [
            "graph gap -G 1 8 B: 10.00 against 15.00 us (-5.00 us), implied upload 250.0 us "
            "(reported only)",
            "graph gap -G 20 8 B: 10.00 against 10.25 us (-0.25 us), implied upload 250.0 us "
            "(reported only)"])

    def test_host_broadcast_reports_are_checked(self):
        copy = {"time_us": {"mean": 10.0}, "gbps": 50.0}
        good = {"rank": 0, "bytes": 1024, "host_memory": "pinned", "strategy": "direct",
                "chunk_bytes": None, "gpus": 1, "gpu_to_gpu": None, "host_to_gpu": copy,
                "wrong_bytes": 0, "time_us": {"mean": 11.0, "min": 10.0, "p50": 11.0, "max": 12.0}}
        bad = dict(good, wrong_bytes=3, strategy="relay")
        with tempfile.TemporaryDirectory() as d:
            (pathlib.Path(d) / "hb.json").write_text(json.dumps(
                {"run": {"status": "complete"}, "deliveries": [good, bad]}))
            lines, problems = g.host_broadcast_check(d)
        self.assertEqual(problems, ["hb.json 1024 B pinned relay chunk None: 3 wrong bytes"])
        self.assertEqual(len(lines), 1)
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(len(g.host_broadcast_check(d)[1]), 1)

    def test_the_nccl_tests_parser_reads_the_out_of_place_time(self):
        times = g.parse_nccl_tests(NCCL_TESTS_LOG)
        self.assertEqual(times, {(8, "out"): 10.0, (64 * MIB, "out"): 500.0})


if __name__ == "__main__":
    unittest.main()

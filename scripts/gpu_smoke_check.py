#!/usr/bin/env python3
"""Checks the numbers of a scripts/gpu-smoke.sh run, not only its exit codes.

Usage: gpu_smoke_check.py OUTDIR | summary RESULTS_DIR [--update-notes] | host-broadcast DIR

"summary RESULTS_DIR" prints what a committed run's NOTES.md quotes,
computed from that folder's raw files (gpu_smoke_summary.py); with
--update-notes it also rewrites the summary block of RESULTS_DIR/NOTES.md.
The rest of this text is about the check.

Every collective report in OUTDIR must be complete, with no wrong element,
ordered times and busbw = algbw x nccl-tests' factor. Then, where both
runs are there:
  - per-iteration event timing against wall timing of the same collective,
    out of place: means within 2 % + 3.5 us at 64 MiB and up (an event
    pair between iterations keeps the next launch from being queued ahead,
    0.5 to 3.5 us per iteration on an H100, 6.5 us for send/receive; below
    64 MiB that cost is only reported, as is the one-rank in-place case,
    where NCCL does nothing);
  - -G 20 against plain launches: reported only (from 512 MiB a one-rank
    graph's copy runs about 1.24x slower than a launched one, in nccl-tests
    -G 20 alike: CUDA's, not the harness's); -G 20 against nccl-tests -G 20
    is checked below;
  - collbench against nccl-tests' all_reduce_perf (logs nccl-tests-*.log,
    made when NCCL_TESTS_DIR names a build): plain and -G 20 within 1 % at
    32 MiB and up and 1 us below; -G 20 within 1 % + 0.5 us (on one H100,
    collbench's graph iterations ran 0.09 us shorter than nccl-tests' at
    8 B, about 0.24 us to 256 KiB, about 0.40 us from 512 KiB, 1.13 us at
    1 GiB; nccl-tests uploads its graph inside its timer, collbench before
    its clock, which fits the small sizes only; the graph-gap part's logs,
    below, settle it); per-iteration timing within 1 % + 3.5 us at 32 MiB
    and up, its difference below only reported;
  - NCCL's own estimates (--nccl-estimate) beside the measured means,
    reported only; a multi-rank report that asked for them must have one
    for every row (NCCL has none for a one-rank communicator);
  - with info.txt (collbench info) beside nccl-tests logs: every log's
    nccl-headers and nccl-library must be the NCCL collbench loads;
  - graph-GN.json beside nccl-tests-graph-GN.log (the graph-gap part):
    the gap at each -G N and the graph upload it implies, reported only.
"host-broadcast DIR" checks host-broadcast reports: complete, no wrong
byte, ordered times, references there; one line per size: the fastest.
Prints one line per comparison and per problem; exits 1 on any problem.
"""
import json
import pathlib
import re
import sys

MIB = 1 << 20
# nccl-tests' bus factors (schema::Collective::bus_factor).
FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0,
           "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0, "hypercube": lambda n: 1.0}


def report_problems(name, report):
    """What is wrong with one collective report, as lines."""
    problems = []
    n = report["environment"]["world_size"]
    for r in report["results"]:
        t = r["time_us"]
        where = f"{name} {r['bytes']} B {r['placement']}"
        if r.get("wrong_elements") not in (0, None):
            problems.append(f"{where}: {r['wrong_elements']} wrong")
        if t.get("min") is not None and not (t["min"] <= t["p50"] <= t["p99"] <= t["max"]):
            problems.append(f"{where}: min <= p50 <= p99 <= max fails")
        factor = FACTORS.get(r["collective"], lambda n: (n - 1) / n)(n)
        if abs(r["busbw_gbps"] - r["algbw_gbps"] * factor) > 1e-9 * max(1.0, r["busbw_gbps"]):
            problems.append(f"{where}: busbw != algbw x factor")
        if not t["mean"] > 0:
            problems.append(f"{where}: mean time {t['mean']} is not positive")
    if report["run"]["status"] != "complete":
        problems.append(f"{name}: status {report['run']['status']}")
    return problems


def means(report):
    """(bytes, placement) -> mean time, us."""
    return {(r["bytes"], r["placement"]): r["time_us"]["mean"] for r in report["results"]}


def compare(label, measured, reference, min_bytes, rel, abs_us=None, below_checked=True,
            slack_us=0.0):
    """Compares two {(bytes, placement): us} maps on their common keys.

    At min_bytes and up the difference must be at most rel of the reference
    plus slack_us; below, at most abs_us (when given and below_checked).
    Returns (lines, problems).
    """
    lines, problems = [], []
    common = sorted(set(measured) & set(reference))
    if not common:
        return [f"{label}: nothing in common to compare"], [f"{label}: no common sizes"]
    for key in common:
        size, placement = key
        ours, theirs = measured[key], reference[key]
        diff = ours - theirs
        if size >= min_bytes:
            ok = abs(diff) <= rel * theirs + slack_us
            target = f"{rel:.0%}" + (f" + {slack_us} us" if slack_us else "")
        elif abs_us is not None:
            ok = abs(diff) <= abs_us or not below_checked
            target = f"{abs_us} us" if below_checked else "reported only"
        else:
            continue
        line = (f"{label} {size} B {placement}: {ours:.2f} against {theirs:.2f} us "
                f"({diff:+.2f} us, {diff / theirs:+.2%}; target {target})")
        lines.append(line)
        if not ok:
            problems.append(line)
    return lines, problems


def parse_nccl_tests(text):
    """An nccl-tests log's out-of-place times: {(bytes, 'out'): us}."""
    times, time_column = {}, None
    for line in text.splitlines():
        words = line.replace("#", " ").split()
        if time_column is None and "size" in words and "time" in words:
            time_column = words.index("time")
            continue
        if time_column is None or not words or not words[0].isdigit():
            continue
        try:
            times[(int(words[0]), "out")] = float(words[time_column])
        except (IndexError, ValueError):
            continue
    return times


def nccl_version_code(version):
    """NCCL's version number as nccl-tests prints it: 2.28.3 -> 22803
    (major x 10000 + minor x 100 + patch from 2.9, x 1000 before)."""
    major, minor, patch = (int(p) for p in version.split("."))
    return major * (10000 if (major, minor) >= (2, 9) else 1000) + minor * 100 + patch


def nccl_version_problems(info_text, logs):
    """collbench's NCCL (its `info`) against each nccl-tests log's headers
    and library: {log name: text} -> problem lines."""
    found = re.search(r"(?m)^nccl: (\d+\.\d+\.\d+)", info_text)
    if not found:
        return ["info.txt names no NCCL version ('nccl: X.Y.Z' line)"] if logs else []
    ours = nccl_version_code(found.group(1))
    problems = []
    for name, text in sorted(logs.items()):
        versions = re.search(r"nccl-headers=(\d+) nccl-library=(\d+)", text)
        if not versions:
            problems.append(f"{name}: no 'nccl-headers=N nccl-library=N' line to compare "
                            f"with collbench's NCCL {found.group(1)}")
            continue
        headers, library = (int(v) for v in versions.groups())
        if headers != ours or library != ours:
            problems.append(f"{name}: nccl-tests built with NCCL headers {headers}, ran library "
                            f"{library}; collbench loads NCCL {found.group(1)} ({ours}): "
                            "build nccl-tests against the NCCL collbench loads")
    return problems


def graph_gap_lines(out, reports):
    """collbench -G N against nccl-tests -G N (graph-GN.json beside
    nccl-tests-graph-GN.log): the gap, and the upload U = -gap x N x n
    that nccl-tests' first replay would carry if that were the whole gap
    (then U agrees across N). Reported only."""
    lines = []
    for stem in sorted(reports, key=lambda s: (len(s), s)):
        found = re.fullmatch(r"graph-G(\d+)", stem)
        log = out / f"nccl-tests-graph-G{found.group(1)}.log" if found else None
        if not log or not log.exists():
            continue
        launches = int(found.group(1))
        iters = reports[stem].get("config", {}).get("iters") or 0
        theirs = parse_nccl_tests(log.read_text())
        ours = {k: v for k, v in means(reports[stem]).items() if k[1] == "out"}
        for key in sorted(set(ours) & set(theirs)):
            gap = ours[key] - theirs[key]
            lines.append(f"graph gap -G {launches} {key[0]} B: {ours[key]:.2f} against "
                         f"{theirs[key]:.2f} us ({gap:+.2f} us), implied upload "
                         f"{-gap * launches * iters:.1f} us (reported only)")
    return lines


def host_broadcast_check(folder):
    """Every host-broadcast report: complete, nothing wrong, times ordered,
    the references there; one line per size and memory: the fastest."""
    lines, problems = [], []
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        report = json.loads(path.read_text())
        if report["run"]["status"] != "complete":
            problems.append(f"{path.name}: status {report['run']['status']}")
        best = {}
        for d in report.get("deliveries") or []:
            t = d["time_us"]
            name = f"{d['bytes']} B {d['host_memory']} {d['strategy']} chunk {d['chunk_bytes']}"
            if d["wrong_bytes"] != 0:
                problems.append(f"{path.name} {name}: {d['wrong_bytes']} wrong bytes")
            if not (t["min"] <= t["p50"] <= t["max"]):
                problems.append(f"{path.name} {name}: min <= p50 <= max fails")
            if (d["gpu_to_gpu"] is None) != (d["gpus"] == 1) or d["host_to_gpu"]["gbps"] <= 0:
                problems.append(f"{path.name} {name}: references missing")
            key = (d["rank"], d["bytes"], d["host_memory"])
            if key not in best or t["mean"] < best[key]["time_us"]["mean"]:
                best[key] = d
        for (rank, size, memory), d in sorted(best.items()):
            chunk = f" {d['chunk_bytes']} B chunks" if d["chunk_bytes"] else ""
            copy = d["host_to_gpu"]
            lines.append(f"{path.name}: rank {rank} {size} B from {memory}: fastest "
                         f"{d['strategy']}{chunk} {d['time_us']['mean']:.1f} us, "
                         f"{d['time_us']['mean'] / copy['time_us']['mean']:.2f}x one pinned copy "
                         f"({copy['gbps']:.1f} GB/s) to {d['gpus']} GPU(s)")
    if not lines and not problems:
        problems.append(f"{folder}: no host-broadcast report")
    return lines, problems


def check(out):
    out = pathlib.Path(out)
    lines, problems = [], []
    reports = {}
    for path in sorted(out.glob("*.json")):
        report = json.loads(path.read_text())
        reports[path.stem] = report
        problems += report_problems(path.name, report)
    for stem, report in sorted(reports.items()):
        if stem.endswith("-iteration") and stem[:-len("-iteration")] + "-wall" in reports:
            wall = reports[stem[:-len("-iteration")] + "-wall"]
            out_of_place = {k: v for k, v in means(report).items() if k[1] == "out"}
            found, bad = compare(f"{stem} events vs wall", out_of_place, means(wall),
                                 64 * MIB, 0.02, 3.5, below_checked=False, slack_us=3.5)
            lines += found
            problems += bad
    if "all-reduce-graph" in reports and "all-reduce-wall" in reports:
        found, _ = compare("-G 20 vs plain", means(reports["all-reduce-graph"]),
                           means(reports["all-reduce-wall"]), 1 << 30, 0.03,
                           0.0, below_checked=False)
        lines += [f"{line} (reported only)" for line in found]
    for stem, report in sorted(reports.items()):
        asked = "--nccl-estimate" in report["run"].get("argv", [])
        for r in report["results"]:
            if asked and report["environment"]["world_size"] > 1 and not r.get("nccl_estimate_us"):
                problems.append(f"{stem} {r['bytes']} B {r['placement']}: no NCCL estimate")
            if r.get("nccl_estimate_us"):
                lines.append(f"{stem} {r['bytes']} B {r['placement']}: measured "
                             f"{r['time_us']['mean']:.2f} us, NCCL's estimate "
                             f"{r['nccl_estimate_us']:.2f} us "
                             f"({r['time_us']['mean'] / r['nccl_estimate_us']:.2f}x; reported only)")
    # (log, report, below 32 MiB checked, slack in us at 32 MiB and up)
    pairs = [("nccl-tests-plain.log", "all-reduce-wall", True, 0.0),
             ("nccl-tests-graph.log", "all-reduce-graph", True, 0.5),
             ("nccl-tests-plain.log", "all-reduce-iteration", False, 3.5)]
    for log, stem, below_checked, slack in pairs:
        if (out / log).exists() and stem in reports:
            theirs = parse_nccl_tests((out / log).read_text())
            ours = {k: v for k, v in means(reports[stem]).items() if k[1] == "out"}
            found, bad = compare(f"{stem} vs {log}", ours, theirs, 32 * MIB, 0.01, 1.0,
                                 below_checked, slack)
            lines += found
            problems += bad
    lines += graph_gap_lines(out, reports)
    logs = {p.name: p.read_text() for p in sorted(out.glob("nccl-tests-*.log"))}
    if logs and (out / "info.txt").exists():
        problems += nccl_version_problems((out / "info.txt").read_text(), logs)
    return lines, problems


def main(argv):
    if len(argv) in (3, 4) and argv[1] == "summary" and argv[3:] in ([], ["--update-notes"]):
        import gpu_smoke_summary
        try:
            lines = gpu_smoke_summary.summary(argv[2])
        except FileNotFoundError as e:
            print(e, file=sys.stderr)
            return 2
        if argv[3:]:
            error = gpu_smoke_summary.update_notes(argv[2])
            if error:
                print(error, file=sys.stderr)
                return 2
        print("\n".join(lines))
        return 0
    if len(argv) == 3 and argv[1] == "host-broadcast":
        lines, problems = host_broadcast_check(argv[2])
    elif len(argv) != 2 or argv[1] in ("summary", "host-broadcast"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    else:
        lines, problems = check(argv[1])
    for line in lines:
        print(line)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print(f"{len(lines)} comparisons, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The summary of a committed GPU smoke run that its NOTES.md quotes, computed
from the run's raw files only (gpu_smoke_check.py summary RESULTS_DIR).

RESULTS_DIR is a results folder laid out as the smoke parts wrote it: part
logs (*.log) at the top, reports under sweeps/, side-by-side/, shared/ and
host-broadcast/, nccl-tests logs under side-by-side/, the stopped-rank
reports (*.report) at the top. A part that is missing is said to be
missing; nothing is assumed.
"""
import json
import pathlib
import re

import gpu_smoke_check as check

MIB = 1 << 20
# The size from which the side-by-side comparison is held to a relative target.
LARGE = 32 * MIB
# The size from which events are checked against wall (gpu_smoke_check.check).
EVENTS_CHECKED = 64 * MIB


def size_name(size):
    """8 B, 512 KiB, 32 MiB, 1 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def span(values, unit="us", digits=2):
    """'-0.84 to +0.98 us' (or one value) over a non-empty list."""
    low, high = min(values), max(values)
    if round(low, digits) == round(high, digits):
        return f"{low:+.{digits}f} {unit}"
    return f"{low:+.{digits}f} to {high:+.{digits}f} {unit}"


def plain_span(values, unit, digits=1):
    """'4.3-4.6 ms' (or '1.02-1.56x') without signs."""
    gap = "" if unit == "x" else " "
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}{gap}{unit}"


def parse_nccl_tests_runs(text):
    """Every run of an nccl-tests log (a log may hold several, each starting
    with its '# nccl-tests version' line): a list of {(bytes, 'out'): us}."""
    runs = re.split(r"(?m)^# nccl-tests version", text)
    return [times for times in (check.parse_nccl_tests(run) for run in runs[1:]) if times]


def load_reports(folder):
    """{stem: report} of a folder's *.json."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def out_of_place(report):
    return {k[0]: v for k, v in check.means(report).items() if k[1] == "out"}


def differences(ours, theirs):
    """{bytes: (ours - theirs us, relative)} on common sizes."""
    return {s: (ours[s] - theirs[s], (ours[s] - theirs[s]) / theirs[s])
            for s in sorted(set(ours) & set(theirs))}


def parts_section(root):
    """Each part log's last line, as the part wrote it."""
    lines = ["## part logs: last line of each"]
    logs = sorted(root.glob("*.log"))
    if not logs:
        return lines + ["no part logs"]
    for log in logs:
        text = log.read_text().rstrip().splitlines()
        lines.append(f"{log.name}: {text[-1] if text else '(empty)'}")
    return lines


def reports_section(root):
    """Reports per folder: how many, complete, wrong elements, dirty trees."""
    lines = ["## reports per folder"]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        reports = load_reports(folder)
        if not reports:
            continue
        complete = sum(r["run"]["status"] == "complete" for r in reports.values())
        wrong = sum((row.get("wrong_elements") or 0) for r in reports.values()
                    for row in r.get("results") or [])
        wrong_bytes = sum(d.get("wrong_bytes") or 0 for r in reports.values()
                          for d in r.get("deliveries") or [])
        dirty = sum(bool(r["tool"].get("git_dirty")) for r in reports.values())
        commits = sorted({r["tool"].get("git_commit", "?")[:12] for r in reports.values()})
        lines.append(f"{folder.name}/: {len(reports)} reports, {complete} complete, "
                     f"{wrong} wrong elements, {wrong_bytes} wrong bytes, "
                     f"git_dirty true in {dirty}, commit {', '.join(commits)}")
    return lines


def checks_section(root):
    """gpu_smoke_check.py as it is now, over each folder of reports."""
    lines = ["## gpu_smoke_check.py per folder (the check as committed now)"]
    for name in ("sweeps", "side-by-side", "shared"):
        folder = root / name
        if not folder.is_dir():
            lines.append(f"{name}/: missing")
            continue
        found, problems = check.check(folder)
        lines.append(f"{name}/: {len(found)} comparisons, {len(problems)} problems")
        lines += [f"  PROBLEM: {p}" for p in problems]
    return lines


def side_by_side_section(root):
    """collbench against nccl-tests, out of place, below and from 32 MiB."""
    folder = root / "side-by-side"
    lines = ["## side-by-side: collbench minus nccl-tests, out of place"]
    if not folder.is_dir():
        return lines + ["side-by-side/: missing"]
    reports = load_reports(folder)
    logs = {}
    for name in ("plain", "graph"):
        path = folder / f"nccl-tests-{name}.log"
        logs[name] = check.parse_nccl_tests(path.read_text()) if path.exists() else {}
    logs = {k: {s[0]: t for s, t in v.items()} for k, v in logs.items()}
    pairs = [("wall", "all-reduce-wall", "plain"), ("-G 20 vs nccl-tests -G 20", "all-reduce-graph", "graph"),
             ("per-iteration events", "all-reduce-iteration", "plain")]
    for label, stem, log in pairs:
        if stem not in reports or not logs[log]:
            lines.append(f"{label}: missing ({stem}.json or nccl-tests-{log}.log)")
            continue
        diff = differences(out_of_place(reports[stem]), logs[log])
        small = [d for s, (d, _) in diff.items() if s < LARGE]
        large = {s: d for s, d in diff.items() if s >= LARGE}
        worst = max(large, key=lambda s: abs(large[s][1]))
        lines.append(f"{label}: below 32 MiB {span(small)}; 32 MiB and up "
                     f"{span([d for d, _ in large.values()])}, largest "
                     f"{large[worst][1]:+.2%} at {size_name(worst)}")
    if "all-reduce-graph" in reports and logs["graph"]:
        diff = differences(out_of_place(reports["all-reduce-graph"]), logs["graph"])
        lines.append("-G 20 gap per size, us: " + "; ".join(
            f"{size_name(s)} {d:+.2f}" for s, (d, _) in diff.items()))
    register = folder / "nccl-tests-graph-register.log"
    if register.exists():
        runs = parse_nccl_tests_runs(register.read_text())
        if len(runs) == 2:
            first, second = ({s[0]: t for s, t in run.items()} for run in runs)
            gap = [d for d, _ in differences(first, second).values()]
            lines.append(f"nccl-tests-graph-register.log: 2 runs, {len(first)} sizes "
                         f"({size_name(min(first))}-{size_name(max(first))}), first minus "
                         f"second {span(gap)}")
        else:
            lines.append(f"nccl-tests-graph-register.log: {len(runs)} runs (2 expected)")
    return lines


def graph_vs_plain_section(root):
    """-G 20 against plain launches at the largest sizes, both tools."""
    lines = ["## -G 20 against plain launches, out of place, 512 MiB and up"]
    folder = root / "side-by-side"
    reports = load_reports(folder) if folder.is_dir() else {}
    if "all-reduce-graph" in reports and "all-reduce-wall" in reports:
        graph, plain = out_of_place(reports["all-reduce-graph"]), out_of_place(reports["all-reduce-wall"])
        for s in sorted(set(graph) & set(plain)):
            if s >= 512 * MIB:
                lines.append(f"collbench {size_name(s)}: {graph[s]:.1f} against {plain[s]:.1f} us "
                             f"({graph[s] / plain[s]:.2f}x)")
    logs = [folder / "nccl-tests-graph.log", folder / "nccl-tests-plain.log"]
    if all(p.exists() for p in logs):
        graph, plain = ({k[0]: v for k, v in check.parse_nccl_tests(p.read_text()).items()}
                        for p in logs)
        for s in sorted(set(graph) & set(plain)):
            if s >= 512 * MIB:
                lines.append(f"nccl-tests {size_name(s)}: {graph[s]:.2f} against {plain[s]:.2f} us "
                             f"({graph[s] / plain[s]:.2f}x)")
    return lines


def events_section(root):
    """Per-iteration events minus wall, out of place, per collective."""
    lines = [f"## sweeps: per-iteration events minus wall, out of place, "
             f"{size_name(EVENTS_CHECKED)} and up"]
    folder = root / "sweeps"
    if not folder.is_dir():
        return lines + ["sweeps/: missing"]
    reports = load_reports(folder)
    every, but_sendrecv = [], []
    for stem in sorted(reports):
        if not stem.endswith("-iteration"):
            continue
        base = stem[:-len("-iteration")]
        if base + "-wall" not in reports:
            continue
        diff = differences(out_of_place(reports[stem]), out_of_place(reports[base + "-wall"]))
        large = [d for s, (d, _) in diff.items() if s >= EVENTS_CHECKED]
        if large:
            every += large
            but_sendrecv += [] if base == "sendrecv" else large
            lines.append(f"{base}: {span(large)}")
    if every:
        lines.append(f"all: {span(every)}; all but sendrecv: {span(but_sendrecv)}")
    return lines


def shared_section(root):
    """Ranks sharing the GPU: sizes, times, NCCL's estimate."""
    lines = ["## shared: ranks sharing one GPU"]
    folder = root / "shared"
    if not folder.is_dir():
        return lines + ["shared/: missing"]
    reports = load_reports(folder)
    per_collective = {}
    for stem, r in reports.items():
        key = (r["environment"]["world_size"], r["config"]["benchmark"])
        per_collective.setdefault(key, []).append(stem)
    worlds = sorted({k[0] for k in per_collective})
    lines.append(f"{len(reports)} reports, ranks {', '.join(map(str, worlds))}, "
                 f"{len({k[1] for k in per_collective})} collectives")
    sweep = [r for s, r in reports.items() if "-n" in r["run"]["argv"]
             and r["run"]["argv"][r["run"]["argv"].index("-n") + 1] == "5"]
    sizes = sorted({row["bytes"] for r in sweep for row in r["results"]})
    if sizes:
        lines.append("every-collective sweep (-n 5) sizes: "
                     + ", ".join(size_name(s) for s in sizes))
    all_reduce = {}
    for stem in ("shared-2-all-reduce", "shared-2-estimate"):
        if stem in reports:
            for row in reports[stem]["results"]:
                all_reduce.setdefault(row["bytes"], []).append(row["time_us"]["mean"])
    upto = [t for s, ts in all_reduce.items() if s <= 2 * MIB for t in ts]
    if upto:
        lines.append(f"2-rank all-reduce, 8 B-2 MiB: {plain_span([t / 1e3 for t in upto], 'ms')} "
                     f"(shared-2-all-reduce, shared-2-estimate)")
    if "shared-2-estimate" in reports:
        rows = [r for r in reports["shared-2-estimate"]["results"] if r["placement"] == "out"]
        for row in (rows[0], rows[-1]):
            est = row.get("nccl_estimate_us")
            lines.append(f"2-rank estimate {size_name(row['bytes'])}: NCCL "
                         f"{est if est is None else f'{est:.1f}'} us, measured "
                         f"{row['time_us']['mean']:.1f} us")
    return lines


def stopped_section(root):
    """The stopped-rank probes: the log's verdicts and the reports."""
    lines = ["## stopped rank"]
    log = root / "stopped.log"
    if log.exists():
        lines += [line for line in log.read_text().splitlines()
                  if re.match(r"^stopped-rank[-\w]*: exit", line)]
    for path in sorted(root.glob("*.report")):
        r = json.loads(path.read_text())
        lines.append(f"{path.name}: status {r['run']['status']}, {len(r['results'])} rows")
    return lines


def host_broadcast_section(root):
    """Host to GPU: one pinned copy, each strategy against it, pageable."""
    lines = ["## host-broadcast"]
    folder = root / "host-broadcast"
    reports = load_reports(folder) if folder.is_dir() else {}
    deliveries = [d for r in reports.values() for d in r.get("deliveries") or []]
    if not deliveries:
        return lines + ["host-broadcast/: missing"]
    sizes = sorted({d["bytes"] for d in deliveries})
    lines.append(f"{len(deliveries)} deliveries, {sum(d['wrong_bytes'] for d in deliveries)} "
                 f"wrong bytes, {size_name(sizes[0])}-{size_name(sizes[-1])}")
    large = [d for d in deliveries if d["bytes"] >= 16 * MIB]
    copy = [d["host_to_gpu"]["gbps"] for d in large]
    lines.append(f"one pinned copy from 16 MiB: {plain_span(copy, 'GB/s')}")
    strategies = {}
    for d in large:
        if d["host_memory"] == "pinned":
            name = d["strategy"] + (f" {size_name(d['chunk_bytes'])} chunks" if d["chunk_bytes"] else "")
            ratio = d["time_us"]["mean"] / d["host_to_gpu"]["time_us"]["mean"]
            strategies.setdefault(name, []).append((ratio, d["bytes"]))
    for name, ratios in sorted(strategies.items()):
        worst = max(ratios)
        lines.append(f"pinned {name}: {min(ratios)[0]:.2f}-{worst[0]:.2f}x one pinned copy "
                     f"(highest at {size_name(worst[1])})")
    pageable = [d for d in large if d["host_memory"] == "pageable"]
    lines.append(f"pageable from 16 MiB: delivered {plain_span([d['delivered_gbps'] for d in pageable], 'GB/s')}, "
                 f"{plain_span([d['time_us']['mean'] / d['host_to_gpu']['time_us']['mean'] for d in pageable], 'x', 2)} "
                 "one pinned copy's time")
    return lines


def tests_section(root):
    """The #[ignore]d GPU tests that ran, from tests.log."""
    lines = ["## the #[ignore]d GPU tests (tests.log)"]
    log = root / "tests.log"
    if not log.exists():
        return lines + ["tests.log: missing"]
    text = log.read_text()
    ran = re.findall(r"(?m)^test (\S+) \.\.\. (\w+)", text)
    lines.append(f"{len(ran)} tests ran: {sum(v == 'ok' for _, v in ran)} ok, "
                 f"{sum(v != 'ok' for _, v in ran)} not ok")
    return lines


def summary(root):
    """Every summary line of a committed smoke run's folder."""
    root = pathlib.Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"summary: {root} is not a folder (a results folder of "
                                "scripts/gpu-smoke.sh parts is accepted)")
    sections = [parts_section, reports_section, checks_section, side_by_side_section,
                graph_vs_plain_section, events_section, shared_section, stopped_section,
                host_broadcast_section, tests_section]
    lines = []
    for section in sections:
        lines += section(root) + [""]
    return lines[:-1]

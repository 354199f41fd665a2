# shellcheck shell=bash
# Checks one results folder as scripts/slurm-test.sh expects it after a
# successful run, and the multi-node facts of a folder; needs python3 (for
# JSON). Each prints one line saying what was checked, or the first failure,
# and returns non-zero on failure.
#
#   results_check_run DIR EXPERIMENT WORLD_SIZE LAUNCHER JOBID [COMMAND]
#
# LAUNCHER is slurm or mpirun; JOBID is Slurm's job id, or "local" for
# mpirun runs (then only the local-... suffix of the folder name is checked);
# COMMAND is the program run.json's command starts with (default: srun on
# Slurm, mpirun locally).

results_check_run() {
    python3 - "$@" <<'PY'
import json, os, re, sys

run_dir, experiment, world, launcher, jobid = sys.argv[1:6]
program = sys.argv[6] if len(sys.argv) > 6 else ("srun" if launcher == "slurm" else "mpirun")
world = int(world)
name = os.path.basename(run_dir.rstrip("/"))
checked = []


def fail(msg):
    print(f"FAIL {experiment} ({name}): {msg}")
    sys.exit(1)


def load(file):
    path = os.path.join(run_dir, file)
    if not os.path.isfile(path):
        fail(f"{file} is missing")
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        fail(f"{file} is not valid JSON: {e}")


def nonempty(file):
    path = os.path.join(run_dir, file)
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        fail(f"{file} is missing or empty")


# The folder name: <YYYY-MM-DD>-<cluster>-<N>n<G>g-<jobid>.
suffix = re.escape(jobid) if launcher == "slurm" else r"local-\d{6}(-\d+)?"
if not re.fullmatch(r"\d{4}-\d{2}-\d{2}-[A-Za-z0-9._-]+-\d+n\d+g-" + suffix, name):
    fail(f"folder name does not follow <YYYY-MM-DD>-<cluster>-<N>n<G>g-<jobid> with job id {jobid}")
checked.append("folder name")

run = load("run.json")
for key, want in (("run_json_version", 1), ("experiment", experiment),
                  ("launcher", launcher), ("folder", name),
                  ("exit_code", 0), ("script_exit_code", 0)):
    if run.get(key) != want:
        fail(f"run.json {key} is {run.get(key)!r}, expected {want!r}")
command = run.get("command") or []
if not command or os.path.basename(command[0]) != program:
    fail(f"run.json command does not start with {program}: {command[:1]}")
if launcher == "slurm" and run.get("slurm", {}).get("SLURM_JOB_ID") != jobid.split("_")[0]:
    fail(f"run.json slurm.SLURM_JOB_ID is {run.get('slurm', {}).get('SLURM_JOB_ID')!r}, expected {jobid}")
if run.get("collbench_info") is None:
    fail(f"run.json has no collbench_info: {run.get('collbench_info_error')}")
checked.append(f"run.json ({command[0]} command, exit 0)")

# The report is <experiment>.json (perf_model: all_reduce.json); config.benchmark
# spells all-to-all as nccl-tests does.
bench = {"perf_model": "all_reduce"}.get(experiment, experiment)
benchmark = {"all_to_all": "alltoall"}.get(bench, bench)
report = load(f"{bench}.json")
env = report.get("environment", {})
results = report.get("results") or []
if report.get("schema_version") != 1:
    fail(f"{bench}.json schema_version is {report.get('schema_version')!r}")
if report.get("run", {}).get("status") != "complete":
    fail(f"{bench}.json run.status is {report.get('run', {}).get('status')!r}, expected 'complete'")
if report.get("config", {}).get("benchmark") != benchmark:
    fail(f"{bench}.json config.benchmark is {report.get('config', {}).get('benchmark')!r}")
if env.get("world_size") != world or len(env.get("ranks", [])) != world:
    fail(f"{bench}.json world_size {env.get('world_size')} with {len(env.get('ranks', []))} ranks, expected {world}")
if launcher == "slurm" and env.get("env", {}).get("SLURM_JOB_ID") != jobid.split("_")[0]:
    fail(f"{bench}.json was not written from inside job {jobid} (environment.env.SLURM_JOB_ID)")
# A chunked all-reduce sweeps the chunk size; its rows' bytes is the total.
size_key = "chunk_bytes" if bench == "chunked_all_reduce" else "bytes"
sizes = {r.get(size_key) for r in results}
if len(sizes) < 2:
    fail(f"{bench}.json has {len(results)} results over {len(sizes)} size(s), expected a sweep")
wrong = [r.get("bytes") for r in results if r.get("wrong_elements") not in (0, None)]
if wrong:
    fail(f"{bench}.json has wrong elements at sizes {wrong}")
nonempty(f"{bench}.csv")
checked.append(f"{bench}.json (complete, world size {world}, {len(results)} results over {len(sizes)} sizes, 0 wrong) and .csv")

output = "slurm.out" if launcher == "slurm" else "mpirun.out"
nonempty(output)
with open(os.path.join(run_dir, output), errors="replace") as f:
    if "collbench: results in" not in f.read():
        fail(f"{output} does not hold the job's output")
checked.append(output)

if experiment == "perf_model":
    fit = load("fit.json")
    ddp = load("ddp.json")
    for file in ("fit.txt", "fit.svg", "ddp.txt", "ddp.svg", "profile.csv"):
        nonempty(file)
    if not (isinstance(fit, dict) and fit.get("fits")):
        fail("fit.json holds no fits")
    if not (isinstance(ddp, dict) and ddp.get("best")):
        fail("ddp.json holds no best bucket cap")
    if ddp.get("world_size") != world:
        fail(f"ddp.json world_size is {ddp.get('world_size')!r}, expected {world}")
    checked.append("fit.{txt,json,svg}, ddp.{txt,json,svg}, profile.csv")

print(f"ok   {experiment}: " + "; ".join(checked))
PY
}

# The multi-node facts of one results folder of a Slurm job on several nodes:
#
#   results_check_nodes DIR REPORT NODES RANKS_PER_NODE HOST...
#
# REPORT is the report's file name; HOST... the job's nodes in order
# (`scontrol show hostnames`). Checks the folder's <N>n0g, the report's
# nodes and each rank's host and local rank (Slurm's block distribution:
# rank r on node r / RANKS_PER_NODE), and run.json's collbench_info: one
# rank and one topology entry per node.
results_check_nodes() {
    python3 - "$@" <<'PY'
import json, os, re, sys

run_dir, report_file, nodes, per_node = sys.argv[1:5]
hosts = sys.argv[5:]
nodes, per_node = int(nodes), int(per_node)
name = os.path.basename(run_dir.rstrip("/"))


def fail(msg):
    print(f"FAIL {name}: {msg}")
    sys.exit(1)


if len(hosts) != nodes:
    fail(f"the job ran on {len(hosts)} nodes ({' '.join(hosts)}), expected {nodes}")
if not re.search(rf"-{nodes}n0g-", name):
    fail(f"folder name does not say {nodes}n0g")
with open(os.path.join(run_dir, report_file)) as f:
    env = json.load(f)["environment"]
if env.get("nodes") != nodes:
    fail(f"{report_file} environment.nodes is {env.get('nodes')!r}, expected {nodes}")
got = [(r.get("rank"), r.get("local_rank"), r.get("host")) for r in env.get("ranks", [])]
want = [(r, r % per_node, hosts[r // per_node]) for r in range(nodes * per_node)]
if got != want:
    fail(f"{report_file} ranks (rank, local rank, host) are {got}, expected {want}")
with open(os.path.join(run_dir, "run.json")) as f:
    run = json.load(f)
if run.get("slurm", {}).get("SLURM_JOB_NUM_NODES") != str(nodes):
    fail(f"run.json slurm.SLURM_JOB_NUM_NODES is {run.get('slurm', {}).get('SLURM_JOB_NUM_NODES')!r}")
info = run.get("collbench_info")
if not info:
    fail(f"run.json has no collbench_info: {run.get('collbench_info_error')}")
info_hosts = [r.get("host") for r in info.get("ranks", [])]
topo_hosts = [t.get("host") for t in info.get("topology") or []]
if info.get("nodes") != nodes or info_hosts != hosts or sorted(topo_hosts) != sorted(hosts):
    fail(f"run.json collbench_info covers nodes {info.get('nodes')!r}, ranks on {info_hosts}, topology of {topo_hosts}; expected one of each on {hosts}")
cmd = run.get("collbench_info_command") or []
if "--topology" not in cmd:
    fail(f"run.json collbench_info_command is {cmd}")
print(f"ok   {name}: {nodes}n0g; {report_file}: nodes {nodes}, ranks (rank, local rank, host) "
      + " ".join(f"({r},{l},{h})" for r, l, h in got)
      + f"; run.json collbench_info: one rank and one topology per node ({os.path.basename(cmd[0])})")
PY
}

# The groups of a strided run on several nodes:
#
#   results_check_groups DIR REPORT STRIDE
#
# Checks config.groups (rank r in group r mod STRIDE), that every group
# spans as many nodes as it has ranks (one rank per node: the data-parallel
# layout), and in every row each group's times with 0 wrong elements and
# the row's time the slowest group's.
results_check_groups() {
    python3 - "$@" <<'PY'
import json, os, sys

run_dir, report_file, stride = sys.argv[1], sys.argv[2], int(sys.argv[3])
name = os.path.basename(run_dir.rstrip("/"))


def fail(msg):
    print(f"FAIL {name}: {msg}")
    sys.exit(1)


with open(os.path.join(run_dir, report_file)) as f:
    report = json.load(f)
world = report["environment"]["world_size"]
host = {r["rank"]: r["host"] for r in report["environment"]["ranks"]}
groups = report["config"].get("groups")
want = [[g + i * stride for i in range(world // stride)] for g in range(stride)]
if not groups or groups.get("stride") != stride or groups.get("members") != want:
    fail(f"{report_file} config.groups is {groups!r}, expected stride {stride} and members {want}")
for members in want:
    spanned = {host[r] for r in members}
    if len(spanned) != len(members):
        fail(f"{report_file}: group {members} runs on {sorted(spanned)}, expected one rank per node")
for row in report["results"]:
    each = row.get("groups") or []
    if [g.get("group") for g in each] != list(range(stride)):
        fail(f"{report_file}: the {row['bytes']} B row has groups {[g.get('group') for g in each]}")
    if any(g.get("wrong_elements") != 0 for g in each):
        fail(f"{report_file}: the {row['bytes']} B row has wrong elements in groups {[g.get('wrong_elements') for g in each]}")
    slowest = max(each, key=lambda g: g["time_us"]["mean"])
    if row.get("slowest_group") != slowest["group"] or row["time_us"] != slowest["time_us"]:
        fail(f"{report_file}: the {row['bytes']} B row's time is not its slowest group's")
print(f"ok   {name}: {report_file}: {stride} strided groups " + " ".join(str(m) for m in want)
      + f", each across {world // stride} nodes; {len(report['results'])} rows, every group checked (0 wrong), each row its slowest group's")
PY
}

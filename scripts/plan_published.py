#!/usr/bin/env python3
"""`collbench-analyze plan` against published measured training throughput.

The source: NVIDIA NeMo's performance summary, repository NVIDIA/NeMo,
docs/source/performance/performance_summary.md at commit
070a0bb168d405d653b9734c0017cf5078e77c0d, "Pretraining" table (container
NeMo 24.07, DGX-H100, FP8); the repository is Apache-2.0 at that commit,
and the rows below are quoted from it with this citation. Each row gives GPUs, global batch (GBS),
micro-batch (MBS), sequence length, TP, PP, CP, VP and the measured tokens
per second per GPU; the iteration time follows as

    step_s = GBS * seq / (tokens_per_s_per_gpu * GPUs)

(every GPU of a data-parallel replica's tp * pp ranks counts the replica's
tokens once per GPU, as the table's per-GPU rate does). Rows kept: every
GPT3 and LLAMA2 row (7). Left out: the Nemotron rows (their architecture is
not given in a config this script can read) and the LLAMA3 rows (context
parallelism 2, which `plan` does not model).

Model shapes are NeMo's launcher configs (not the performance page):
NVIDIA/NeMo-Megatron-Launcher launcher_scripts/conf/training/gpt3/{5b,20b,
175b}.yaml at 0c6c960da12a423dfb4d6813e705a291ee779821 (GPT-2 BPE
vocabulary, 50257 before Megatron's padding), NVIDIA/NeMo-Framework-Launcher
launcher_scripts/conf/training/llama/llama2_{13b,70b}.yaml at
0446d2c0603733cb7252ff36999b32b76e7cf1c4 and llama2_7b.yaml at
064e676963bd7632cb57f1abf575e1205dfcc390 (Llama 2's 32000-token
vocabulary); sequence parallelism and the gradient bucket size from those
files too. No activation recompute (all of them say none).

For each row the script writes the model's config.json, estimates its
profile with `collbench-analyze profile --config` at the row's tp and
micro-batch (--gpu-tflops 989, H100 SXM's dense 16-bit peak; the runs were
FP8, but only peak x efficiency enters the estimate, and that product is
calibrated), writes synthetic NVLink/InfiniBand curves with
scripts/synthetic_curves.py (DGX-H100 as assumed, not stated by the
source: --intra-gbps 360 inside a node, --inter-gbps 45 per GPU across
nodes, the generator's defaults; groups of more than 2 nodes take `plan`'s
scale model, with its warning), and runs `plan` at the row's exact
configuration (interleaved with --chunks VP where VP > 1, else 1F1B;
ZeRO-1, as NeMo's distributed optimizer shards the optimizer state).

The rows' recipes: NVIDIA/NeMo-Framework-Launcher at
1a7171d7951425d080dfb183f676ce3b11e75dcb (authored 2024-07-17, two days
after 77b69bba set GPT3-175B's VP to the table's 6; every row's TP, PP and VP
are that commit's, and its MBS but for GPT3-175B on 512 GPUs, 2 against
the recipe's 1), launcher_scripts/conf/training/{gpt3/5b,
gpt3/20b, gpt3/175b, llama/llama2_7b, llama/llama2_13b,
llama/llama2_70b}.yaml: RECIPES below holds, per row, their
`sequence_parallel`, `ub_tp_comm_overlap` (Transformer Engine's
userbuffers overlap of the tensor-parallel collectives with the GEMMs)
and the distributed optimizer's `overlap_grad_sync` and
`overlap_param_sync`. Each row runs twice: with the tensor-parallel
collectives blocking the compute stream (`plan`'s default, the
"blocking" column) and with the recipe's setting (`plan
--tp-comm-overlap` where the recipe sets `ub_tp_comm_overlap`, the
"recipe" column; --tp-overlap-fraction F passes the share of each row's
compute that hides them, 1 by default). The data-parallel flags are
recorded, not modelled beyond what `plan` does (ZeRO-1's buckets overlap
the last micro-batch's backward; the parameter all-gather follows the
reduction).

ONE efficiency is calibrated on ONE row, LLAMA2-7B on 8 GPUs (tp = pp = 1,
one node: the row where compute dominates and the least is modelled), by
bisection until plan's step equals the measured one; every other row uses
it unchanged. Prints row, measured, predicted and error, the communication
plan leaves exposed (tp, pp, dp), the step with links 100 times faster (a
diagnosis: compute and schedule alone), and the MAPE over every row with
the calibration row and without it.

    python3 scripts/plan_published.py --analyze target/release/collbench-analyze [--dir DIR]
                                      [--tp-overlap-fraction F]
    python3 scripts/plan_published.py --check     # the table and formula alone, no binary
    python3 scripts/plan_published.py --check --source performance_summary.md
                                                  # every row checked against the source file
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SOURCE = ("NVIDIA/NeMo docs/source/performance/performance_summary.md @ "
          "070a0bb168d405d653b9734c0017cf5078e77c0d (NeMo 24.07, DGX-H100, FP8)")

# The source's rows: model, GPUs, GBS, MBS, sequence, TP, PP, CP, VP,
# measured tokens/s/GPU.
ROWS = [
    ("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 1, 22521),
    ("GPT3-20B", 64, 256, 2, 2048, 2, 1, 1, 1, 5851),
    ("GPT3-175B", 128, 256, 1, 2048, 4, 8, 1, 6, 726),
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 1, 6, 782),
    ("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 1, 16847),
    ("LLAMA2-13B", 16, 128, 1, 4096, 1, 4, 1, 10, 8646),
    ("LLAMA2-70B", 64, 128, 1, 4096, 4, 4, 1, 20, 1707),
]

CALIBRATION_ROW = ("LLAMA2-7B", 8)  # (model, GPUs): the one row the efficiency is fitted on

GPUS_PER_NODE = 8
GPU_TFLOPS = 989.0
INTRA_GBPS = 360.0
INTER_GBPS = 45.0

# Hugging Face style configs of the launcher files above, with the launcher's
# sequence parallelism and gradient bucket cap (MiB).
GPT_VOCAB = 50257
LLAMA_VOCAB = 32000
MODELS = {
    "GPT3-5B": ({"hidden_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 32,
                 "intermediate_size": 4 * 4096, "vocab_size": GPT_VOCAB,
                 "tie_word_embeddings": True}, False, 400),
    "GPT3-20B": ({"hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 48,
                  "intermediate_size": 4 * 6144, "vocab_size": GPT_VOCAB,
                  "tie_word_embeddings": True}, True, 220),
    "GPT3-175B": ({"hidden_size": 12288, "num_hidden_layers": 96, "num_attention_heads": 96,
                   "intermediate_size": 4 * 12288, "vocab_size": GPT_VOCAB,
                   "tie_word_embeddings": True}, True, 220),
    "LLAMA2-7B": ({"model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
                   "num_hidden_layers": 32, "num_attention_heads": 32,
                   "intermediate_size": 11008, "vocab_size": LLAMA_VOCAB,
                   "tie_word_embeddings": False}, False, 125),
    "LLAMA2-13B": ({"model_type": "llama", "hidden_act": "silu", "hidden_size": 5120,
                    "num_hidden_layers": 40, "num_attention_heads": 40,
                    "intermediate_size": 13824, "vocab_size": LLAMA_VOCAB,
                    "tie_word_embeddings": False}, True, 125),
    "LLAMA2-70B": ({"model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
                    "num_hidden_layers": 80, "num_attention_heads": 64,
                    "num_key_value_heads": 8, "intermediate_size": 28672,
                    "vocab_size": LLAMA_VOCAB, "tie_word_embeddings": False}, True, 125),
}

# The rows' launcher recipes (see the docstring): file under
# launcher_scripts/conf/training/, then its sequence_parallel,
# ub_tp_comm_overlap, overlap_grad_sync, overlap_param_sync, and the
# TP, PP, VP (checked against the row) and MBS it sets (GPT3-175B on 512
# GPUs ran 2, the recipe sets 1).
RECIPE_COMMIT = "1a7171d7951425d080dfb183f676ce3b11e75dcb"
RECIPE_FIELDS = ("file", "sequence_parallel", "tp_comm_overlap", "overlap_grad_sync",
                 "overlap_param_sync", "tp", "pp", "vp", "mbs")
RECIPES = {
    "GPT3-5B": ("gpt3/5b.yaml", False, False, True, True, 1, 1, 1, 4),
    "GPT3-20B": ("gpt3/20b.yaml", True, True, True, True, 2, 1, 1, 2),
    "GPT3-175B": ("gpt3/175b.yaml", True, False, True, True, 4, 8, 6, 1),
    "LLAMA2-7B": ("llama/llama2_7b.yaml", False, False, True, True, 1, 1, 1, 1),
    "LLAMA2-13B": ("llama/llama2_13b.yaml", False, False, True, True, 1, 4, 10, 1),
    "LLAMA2-70B": ("llama/llama2_70b.yaml", True, True, True, True, 4, 4, 20, 1),
}


def recipe(row):
    """The row's launcher recipe as a dict."""
    return dict(zip(RECIPE_FIELDS, RECIPES[row["model"]]))


FIELDS = ("model", "gpus", "gbs", "mbs", "seq", "tp", "pp", "cp", "vp", "tokens_per_s_gpu")


def rows():
    """The source's rows as dicts, each with its dp."""
    out = []
    for values in ROWS:
        row = dict(zip(FIELDS, values))
        row["dp"] = row["gpus"] // (row["tp"] * row["pp"] * row["cp"])
        out.append(row)
    return out


def label(row):
    return "%s %dGPU tp%d pp%d dp%d mb%d%s" % (
        row["model"], row["gpus"], row["tp"], row["pp"], row["dp"], row["mbs"],
        " vp%d" % row["vp"] if row["vp"] > 1 else "")


def measured_step_s(row):
    """The iteration time the row's throughput implies, in seconds."""
    return row["gbs"] * row["seq"] / (row["tokens_per_s_gpu"] * row["gpus"])


def check_row(row):
    """None, or why `plan` cannot run the row as published."""
    shape = MODELS[row["model"]][0]
    layers = shape["num_hidden_layers"]
    if row["tp"] * row["pp"] * row["cp"] * row["dp"] != row["gpus"]:
        return "tp x pp x cp does not divide the GPUs"
    if row["cp"] != 1:
        return "context parallelism is not modelled"
    if row["gbs"] % (row["dp"] * row["mbs"]):
        return "dp x micro-batch does not divide the global batch"
    if layers % (row["pp"] * row["vp"]):
        return "pp x vp does not divide the layers"
    r = recipe(row)
    if any(r[k] != row[k] for k in ("tp", "pp", "vp")):
        return "the recipe %s sets other tp/pp/vp" % r["file"]
    microbatches = row["gbs"] // (row["dp"] * row["mbs"])
    if row["vp"] > 1 and microbatches % row["pp"]:
        return "interleaving needs micro-batches a multiple of pp"
    return None


def parse_source(text):
    """The pretraining table's rows of the source's markdown, as ROWS holds
    them (model, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, tokens/s/GPU):
    the first table after a `Pretraining` heading, up to the next heading."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("#"):
            if inside:
                break
            inside = "pretraining" in line.lower()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not inside or len(cells) < 10 or not cells[1].isdigit():
            continue
        out.append(tuple([cells[0]] + [int(c) for c in cells[1:10]]))
    return out


def check_source(text):
    """Every row of ROWS as the source has it; else a list of the misses."""
    published = parse_source(text)
    return ["%s on %d GPUs: not in the source as %r" % (r[0], r[1], r) for r in ROWS
            if r not in published]


def mape(pairs):
    """Mean absolute percentage error of (measured, predicted) pairs."""
    return sum(abs(p - m) / m for m, p in pairs) / len(pairs) * 100.0


def bisect(f, lo, hi, target, iters=40):
    """x in [lo, hi] with f(x) = target, f decreasing in x."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def run(cmd):
    """The finished process; its own error in one line when it fails."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise SystemExit("plan_published.py: --analyze %s: %s" % (cmd[0], e.strerror))
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no error message"])[-1]
        raise SystemExit("plan_published.py: %s exited with %d: %s" % (
            " ".join(cmd[:2]), out.returncode, why))
    return out


def curve_argv(curves):
    argv = []
    flags = {"all_reduce": "--comm", "all_gather": "--all-gather",
             "reduce_scatter": "--reduce-scatter", "sendrecv": "--sendrecv"}
    for name in sorted(os.listdir(curves)):
        stem = name.split("-")[0]
        if stem in flags and name.endswith(".json"):
            argv += [flags[stem], os.path.join(curves, name)]
    return argv


def plan_argv(exe, profile, row, curves, tp_overlap=None):
    """`plan` at the row's configuration; `tp_overlap` (a fraction): the
    tensor-parallel collectives overlapped with compute where the row's
    recipe sets it, None: blocking."""
    _, sp, bucket = MODELS[row["model"]]
    schedule = "interleaved" if row["vp"] > 1 else "1f1b"
    argv = [exe, "plan", "--profile", profile, "--gpus", str(row["gpus"]),
            "--gpus-per-node", str(GPUS_PER_NODE), "--global-batch", str(row["gbs"]),
            "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]),
            "--microbatch", str(row["mbs"]), "--schedule", schedule,
            "--chunks", str(max(row["vp"], 2)), "--zero", "1",
            "--bucket-cap", str(bucket), "--json"]
    if sp and row["tp"] > 1:
        argv.append("--sequence-parallel")
        if tp_overlap is not None and recipe(row)["tp_comm_overlap"]:
            argv += ["--tp-comm-overlap", "--tp-overlap-fraction", repr(tp_overlap)]
    return argv + curve_argv(curves)


def predict_s(exe, work, row, efficiency, curves, tp_overlap=None):
    """plan's step time for the row at `efficiency`, in seconds."""
    shape = MODELS[row["model"]][0]
    config = os.path.join(work, row["model"] + ".json")
    with open(config, "w") as f:
        json.dump(shape, f)
    profile = os.path.join(work, "%s-tp%d-mb%d.csv" % (row["model"], row["tp"], row["mbs"]))
    run([exe, "profile", "--config", config, "--seq", str(row["seq"]),
         "--microbatch", str(row["mbs"]), "--tp", str(row["tp"]),
         "--gpu-tflops", str(GPU_TFLOPS), "--efficiency", repr(efficiency), "-o", profile,
         "--force"])
    out = run(plan_argv(exe, profile, row, curves, tp_overlap))
    report = json.loads(out.stdout)
    configs = report["configs"]
    if len(configs) != 1:
        raise SystemExit("plan_published.py: %s: plan gave %d configurations, not 1" % (
            label(row), len(configs)))
    return configs[0]["step_ms"] / 1000.0, configs[0]["exposed_comm_ms"], report["warnings"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="plan_published.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--analyze", help="the collbench-analyze binary")
    parser.add_argument("--dir", help="where configs, profiles and curves go [a temporary folder]")
    parser.add_argument("--check", action="store_true",
                        help="check the table and print the measured times; no binary")
    parser.add_argument("--source", metavar="FILE.md",
                        help="the source's performance_summary.md (at the commit above): "
                             "check that every row here is one of its pretraining rows")
    parser.add_argument("--tp-overlap-fraction", type=float, default=1.0, metavar="F",
                        help="the recipe column's share of each row's compute that hides its "
                             "tensor-parallel collectives [1]")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not 0.0 < args.tp_overlap_fraction <= 1.0:
        parser.error("--tp-overlap-fraction %r: give a share above 0 and at most 1"
                     % args.tp_overlap_fraction)
    table = rows()
    if args.source:
        try:
            with open(args.source) as f:
                text = f.read()
        except OSError as e:
            raise SystemExit("plan_published.py: --source %s: %s" % (args.source, e.strerror))
        misses = check_source(text)
        if misses:
            raise SystemExit("plan_published.py: --source %s: %s" % (args.source, "; ".join(misses)))
        print("--source %s: all %d rows found in its pretraining table" % (args.source, len(ROWS)))
    for row in table:
        why = check_row(row)
        if why:
            raise SystemExit("plan_published.py: %s: %s" % (label(row), why))
    print("source: " + SOURCE)
    if args.check:
        for row in table:
            r = recipe(row)
            print("%-40s measured %8.3f s  recipe %s: sequence_parallel %s, "
                  "ub_tp_comm_overlap %s, overlap_grad_sync %s, overlap_param_sync %s" % (
                      label(row), measured_step_s(row), r["file"], r["sequence_parallel"],
                      r["tp_comm_overlap"], r["overlap_grad_sync"], r["overlap_param_sync"]))
        print("recipes: NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/ @ "
              + RECIPE_COMMIT)
        return 0
    if not args.analyze:
        parser.error("--analyze is required (or --check)")
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        return compare(args.analyze, args.dir, table, args.tp_overlap_fraction)
    with tempfile.TemporaryDirectory(prefix="plan-published-") as work:
        return compare(args.analyze, work, table, args.tp_overlap_fraction)


def compare(exe, work, table, tp_overlap):
    """Calibrates on the one row, then predicts and prints every row, with
    the tensor-parallel collectives blocking and as the row's recipe runs
    them."""
    curves = os.path.join(work, "curves")
    here = os.path.dirname(os.path.abspath(__file__))
    run([sys.executable, os.path.join(here, "synthetic_curves.py"), curves,
         "--gpus-per-node", str(GPUS_PER_NODE), "--intra-gbps", str(INTRA_GBPS),
         "--inter-gbps", str(INTER_GBPS)])
    calib = [r for r in table if (r["model"], r["gpus"]) == CALIBRATION_ROW][0]
    target = measured_step_s(calib)
    efficiency = bisect(lambda e: predict_s(exe, work, calib, e, curves)[0],
                        0.01, 1.0, target, iters=20)
    # The same links 100 times faster with a 10 ns base latency: what compute
    # and the schedule alone give (a diagnosis column, not a prediction).
    fast = os.path.join(work, "curves-fast")
    run([sys.executable, os.path.join(here, "synthetic_curves.py"), fast,
         "--gpus-per-node", str(GPUS_PER_NODE), "--intra-gbps", str(INTRA_GBPS * 100),
         "--inter-gbps", str(INTER_GBPS * 100), "--alpha-us", "0.01", "--hop-us", "0"])
    print("efficiency %.4f of %.0f TFLOP/s, calibrated on %s alone" % (
        efficiency, GPU_TFLOPS, label(calib)))
    print("%-38s %9s %9s %7s %6s %6s %6s %9s %7s %6s %9s" % (
        "row", "measured", "blocking", "error", "tp", "pp", "dp", "fast-link",
        "overlap", "tp", "recipe"))
    blocking, recipes, others, others_recipe, warnings = [], [], [], [], []
    for row in table:
        m = measured_step_s(row)
        p, exposed, said = predict_s(exe, work, row, efficiency, curves)
        compute_only = predict_s(exe, work, row, efficiency, fast)[0]
        overlapped = recipe(row)["tp_comm_overlap"] and row["tp"] > 1
        if overlapped:
            q, exposed_q, more = predict_s(exe, work, row, efficiency, curves, tp_overlap)
            said = said + more
        else:
            q, exposed_q = p, exposed
        warnings += [w for w in said if w not in warnings and "is an estimate" not in w]
        blocking.append((m, p))
        recipes.append((m, q))
        if row is not calib:
            others.append((m, p))
            others_recipe.append((m, q))
        print("%-38s %8.3fs %8.3fs %+6.1f%% %5.2fs %5.2fs %5.2fs %8.3fs %7s %5.2fs %8.3fs "
              "%+6.1f%%%s" % (
                  label(row), m, p, (p - m) / m * 100.0, exposed["tp"] / 1e3,
                  exposed["pp"] / 1e3, exposed["dp"] / 1e3, compute_only,
                  "on" if overlapped else "off", exposed_q["tp"] / 1e3, q,
                  (q - m) / m * 100.0, "  (calibration)" if row is calib else ""))
    print("MAPE over all %d rows: blocking %.1f %%, recipe %.1f %%" % (
        len(blocking), mape(blocking), mape(recipes)))
    print("MAPE over the %d rows the calibration did not see: blocking %.1f %%, recipe %.1f %%" % (
        len(others), mape(others), mape(others_recipe)))
    print("tp/pp/dp: communication plan says is exposed per step; fast-link: plan's step with "
          "links 100x faster, 10 ns base latency (compute and schedule alone); overlap: the "
          "recipe's ub_tp_comm_overlap (plan --tp-comm-overlap --tp-overlap-fraction %g), then "
          "its exposed tp and step" % tp_overlap)
    print("recipes: NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/ @ "
          + RECIPE_COMMIT)
    print("every profile is an estimate (profile --config), not a measurement")
    for w in warnings:
        print("plan warned: " + w)
    return 0


if __name__ == "__main__":
    sys.exit(main())

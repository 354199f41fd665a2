#!/usr/bin/env python3
"""Measure PyTorch DDP's step time over a sweep of bucket_cap_mb.

Run under torchrun, one process per rank:

    torchrun --nproc-per-node 4 scripts/ddp_bucket_sweep.py --backend gloo \\
        --model gpt2-small --batch-size 1 --seq-len 256 \\
        --bucket-cap-mb 1,2,5,10,25,50,100,200 -o ddp-sweep.csv

For each cap it builds the model afresh (same seed; the same modules as
profile_layers.py), wraps it in DistributedDataParallel(bucket_cap_mb=cap),
runs `--warmup` untimed steps (DDP rebuilds its buckets in gradient-ready
order after the first) and `--iters` timed forward+backward passes. The
backward pass is timed until gradients are synchronized: DDP's backward
returns only after its last all-reduce is waited on (on a GPU, the current
stream waits for it, so a CUDA event recorded afterwards marks it). An
iteration's time is the maximum over ranks; the file holds means over
iterations:

    # provenance comment lines
    bucket_bytes,time_s,forward_s,step_s,buckets,time_sd_s,iterations
    1048576,0.8123,0.3012,1.1135,148,0.0213,20

With `--rounds R` the whole list of caps is measured R times, in ascending
order, then descending, and so on, each visit with a freshly built model,
its warm-up and `--iters` timed passes; a cap's row pools all its rounds.
On a shared or noisy machine (a VM, a laptop) whose speed drifts over
minutes, measuring the caps one after the other in a single pass turns that
drift into a false trend across caps; alternating rounds spread it evenly.

With `--profile-out FILE` every round also profiles the plain model (no DDP,
all ranks at once, as `torchrun ... profile_layers.py` does) and writes the
layer profile `collbench-analyze ddp --profile` reads, so the model's compute
times are measured in the same minutes as the DDP runs they are compared
with, not before or after them on a machine whose speed may have moved.

With `--paired`, the plain model's backward is also timed right before
every cap's timed passes (`--iters` passes, one plain model kept warm), and
its mean becomes a last column `compute_s`: the machine's compute speed in
the same minute as that cap's DDP passes, kept as data (collbench-analyze
does not use it; dividing each point by it only added noise where we tried
it). With `--profile-out` the profile is made of these same passes, so it
covers the same minutes as the measurements it is compared with.

`time_s` is the backward pass until gradients are synchronized: the quantity
`collbench-analyze ddp --measured` compares with its prediction (the model
predicts the backward pass). `step_s` is forward + backward, `forward_s` the
forward alone, and `buckets` the number of buckets DDP formed (from its
logging data; empty when this torch does not say). `time_sd_s` is the
standard deviation of the backward times over the timed iterations and
`iterations` their number (time_sd_s / sqrt(iterations) estimates the
standard error of time_s). bucket_bytes is
int(bucket_cap_mb * 2**20), exactly as DDP computes its cap.

When bucket_cap_mb is given, current PyTorch uses it for the first bucket too
(pass `--first-bucket-bytes same` to the model, its default); releases before
that change used 1 MiB for the first bucket (`--first-bucket-bytes 1M`). The
header says which this torch did.

On CPUs (gloo), give every process its share of the cores with `--threads`
and profile the layers with the same `--threads` (profile_layers.py), and
under the same `torchrun --nproc-per-node`, so the profile's compute matches
each rank's: ranks that share a machine also share its caches and memory
bandwidth.

Only the pure helpers at the top run without PyTorch (CI tests them).
"""

import argparse
import datetime
import os
import platform
import sys
import time

import torch_world

from profile_layers import (
    CONFIGS,
    DTYPE_BYTES,
    Clock,
    Profiler,
    add_model_arguments,
    build_model,
    check_model_arguments,
    check_parameter_counts,
    format_profile,
    mean,
    positive_int,
    profile_comments,
    random_tokens,
    torch_dtype,
    write_text_atomic,
)

# --------------------------------------------------------------------------
# Pure helpers (no torch)

MIB = 1 << 20
CSV_HEADER = "bucket_bytes,time_s,forward_s,step_s,buckets,time_sd_s,iterations"
# The extra column of --paired.
PAIRED_COLUMN = "compute_s"


def parse_caps_mb(text):
    """`1,2.5,25` -> [1.0, 2.5, 25.0]: positive, distinct, sorted."""
    caps = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number of MiB" % part.strip())
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError("%r: a cap must be a positive number of MiB" % part.strip())
        caps.append(value)
    if len(set(caps)) != len(caps):
        raise argparse.ArgumentTypeError("%r lists a cap twice" % text)
    return sorted(caps)


def cap_bytes(cap_mb):
    """DDP's own conversion: int(bucket_cap_mb * 1024 * 1024)."""
    return int(cap_mb * MIB)


def bucket_count(logging_data):
    """Buckets after DDP's rebuild, from `_get_ddp_logging_data()`; None when
    the data does not say."""
    sizes = logging_data.get("rebuilt_bucket_sizes") or logging_data.get("bucket_sizes")
    if not isinstance(sizes, str) or not sizes.strip():
        return None
    return len([s for s in sizes.split(",") if s.strip()])


def pstdev(values):
    """Population standard deviation."""
    m = mean(values)
    return (sum((v - m) ** 2 for v in values) / len(values)) ** 0.5


def format_row(cap_mb, backward_s, forward_s, buckets, compute_s=None):
    """One CSV row from per-iteration times (already maxed over ranks);
    `compute_s`, with --paired, the plain model's backward times paired
    with this cap's."""
    step = [f + b for f, b in zip(forward_s, backward_s)]
    row = "%d,%.9g,%.9g,%.9g,%s,%.9g,%d" % (
        cap_bytes(cap_mb), mean(backward_s), mean(forward_s), mean(step),
        "" if buckets is None else str(buckets), pstdev(backward_s), len(backward_s))
    return row if compute_s is None else row + ",%.9g" % mean(compute_s)


def visit_order(caps, rounds):
    """The caps in the order they are measured: ascending, then descending,
    and so on for `rounds` rounds."""
    order = []
    for r in range(rounds):
        order += caps if r % 2 == 0 else caps[::-1]
    return order


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="ddp_bucket_sweep.py",
        description="Time PyTorch DDP forward+backward over a sweep of bucket_cap_mb "
        "(run under torchrun); writes the --measured CSV of `collbench-analyze ddp`.",
    )
    add_model_arguments(parser)
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True,
                        help="nccl: GPU LOCAL_RANK; gloo: CPU")
    parser.add_argument("--bucket-cap-mb", type=parse_caps_mb, required=True,
                        help="comma-separated caps in MiB, e.g. 1,2,5,10,25,50,100,200")
    parser.add_argument("--rounds", type=positive_int, default=1,
                        help="measure the list of caps this many times, alternating "
                        "ascending and descending order, and pool the rounds [1]")
    parser.add_argument("--profile-out", metavar="FILE",
                        help="also profile the plain model (no DDP) in every round and "
                        "write the layer profile here (rank 0)")
    parser.add_argument("--grad-as-bucket-view", action="store_true",
                        help="DDP(gradient_as_bucket_view=True): gradients live in the "
                        "buckets, so DDP only scales them in place and copies nothing back "
                        "(model: --grad-copy-gbps B --grad-as-bucket-view)")
    parser.add_argument("--paired", action="store_true",
                        help="right before each cap's timed passes, time as many backward "
                        "passes of the plain model (no DDP) and write their mean as column "
                        "compute_s (data only); with --profile-out the profile is made of "
                        "these passes, so it covers the same minutes as the DDP runs")
    parser.add_argument("--profile-granularity", choices=["layer", "param"], default="param",
                        help="rows of --profile-out: layer groups or parameters [param]")
    parser.add_argument("-o", "--out", required=True, help="CSV to write (rank 0)")
    parser.add_argument("--force", action="store_true", help="overwrite --out and --profile-out")
    args = parser.parse_args(argv)
    check_model_arguments(parser, args, "cuda" if args.backend == "nccl" else "cpu")
    if args.warmup < 2:
        parser.error("--warmup %d: at least 2, so DDP has rebuilt its buckets before timing"
                     % args.warmup)
    if os.environ.get("RANK", "0") == "0" and not args.force:
        for flag, path in (("--out", args.out), ("--profile-out", args.profile_out)):
            if path and os.path.exists(path):
                parser.error("%s %s already exists (pass --force to overwrite it)" % (flag, path))
    if args.profile_out and os.path.abspath(args.profile_out) == os.path.abspath(args.out):
        parser.error("--profile-out and --out are the same file")
    return args


# --------------------------------------------------------------------------
# The sweep (torch from here on)


def measure_cap(torch, args, cap_mb, device, cfg):
    """Per-iteration (forward_s, backward_s) of this rank, and the bucket count."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(args.seed)
    model = build_model(cfg, tied=not args.untied_head)
    model = model.to(device=device, dtype=torch_dtype(torch, args.dtype))
    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=cap_mb,
        gradient_as_bucket_view=args.grad_as_bucket_view,
    )
    # Every rank gets different tokens, as in data-parallel training.
    rank = torch.distributed.get_rank()
    tokens = random_tokens(torch, cfg, args.batch_size, args.seq_len, device, args.seed + rank)
    cuda = device.type == "cuda"

    def mark():
        if cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(a, b):
        return a.elapsed_time(b) / 1e3 if cuda else b - a

    forward_s, backward_s = [], []
    for it in range(args.warmup + args.iters):
        ddp.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize(device)
        torch.distributed.barrier()
        start = mark()
        loss = ddp(tokens)
        middle = mark()
        loss.backward()
        end = mark()
        if cuda:
            torch.cuda.synchronize(device)
        if it >= args.warmup:
            forward_s.append(seconds(start, middle))
            backward_s.append(seconds(middle, end))
    try:
        buckets = bucket_count(ddp._get_ddp_logging_data())
    except Exception:  # a private API: absent or different in some releases
        buckets = None
    first_same = getattr(ddp, "bucket_bytes_cap_default", None) is False
    del ddp, model
    return forward_s, backward_s, buckets, first_same


def plain_profiler(torch, args, device, cfg, world):
    """A `Profiler` of the plain model (no DDP), run on every rank at once,
    with no iterations recorded yet."""
    tied = not args.untied_head
    torch.manual_seed(args.seed)
    model = build_model(cfg, tied)
    check_parameter_counts(model, cfg, tied)
    model = model.to(device=device, dtype=torch_dtype(torch, args.dtype))
    model.train()
    rank = torch.distributed.get_rank()
    tokens = random_tokens(torch, cfg, args.batch_size, args.seq_len, device, args.seed + rank)
    return Profiler(torch, model, tokens, Clock(torch, device), args.profile_granularity, world)


def measure_profile(torch, args, device, cfg, world):
    """One round's profile of the plain model: a `Profiler` holding this
    round's timed iterations."""
    profiler = plain_profiler(torch, args, device, cfg, world)
    profiler.run(args.warmup, args.iters)
    return profiler


def run(args):
    import torch
    import torch.distributed as dist

    device, rank, world = torch_world.join(torch, "ddp_bucket_sweep.py", args.backend, args.threads)
    if rank == 0 and device.type == "cpu" and not args.threads:
        print("ddp_bucket_sweep.py: note: %d torch threads per rank (torchrun sets "
              "OMP_NUM_THREADS=1 unless told otherwise); pass --threads N, and the same "
              "--threads to profile_layers.py, so the profile's compute matches each rank's"
              % torch.get_num_threads(), file=sys.stderr)
    cfg = CONFIGS[args.model]
    first_same = None
    pooled = {cap_mb: ([], [], None) for cap_mb in args.bucket_cap_mb}
    paired = {cap_mb: [] for cap_mb in args.bucket_cap_mb}
    # None stands for a round's profile of the plain model; --paired
    # profiles before every cap instead, with one plain model kept warm.
    visits = ([None] if args.profile_out and not args.paired else []) + args.bucket_cap_mb
    profiled = None
    if args.paired:
        profiled = plain_profiler(torch, args, device, cfg, world)
        profiled.run(args.warmup, 0)
    for visit, cap_mb in enumerate(visit_order(visits, args.rounds)):
        label = "" if args.rounds == 1 else "round %d/%d: " % (visit // len(visits) + 1, args.rounds)
        if cap_mb is None:
            profiler = measure_profile(torch, args, device, cfg, world)
            if profiled is None:
                profiled = profiler
            else:
                profiled.forward_s += profiler.forward_s
                profiled.backward_s += profiler.backward_s
                profiled.per_item += profiler.per_item
            if rank == 0:
                print("%sprofile (no DDP): backward %.9g s" % (label, mean(profiler.backward_s)),
                      flush=True)
            continue
        pair = None  # this visit's plain-model backward times, with --paired
        if args.paired:
            before = len(profiled.backward_s)
            profiled.run(0, args.iters)
            pair = profiled.backward_s[before:]
            paired[cap_mb] += pair
        forward_s, backward_s, buckets, first_same = measure_cap(torch, args, cap_mb, device, cfg)
        # Per iteration, the slowest rank's time.
        times = torch.tensor([forward_s, backward_s], dtype=torch.float64, device=device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        forward_max, backward_max = times.tolist()
        forward_all, backward_all, _ = pooled[cap_mb]
        pooled[cap_mb] = (forward_all + forward_max, backward_all + backward_max, buckets)
        if rank == 0:
            print(label + format_row(cap_mb, backward_max, forward_max, buckets, pair), flush=True)
    if profiled is not None:
        profiled.measure_gradient_copy()  # on every rank: it synchronizes them
    rows = [format_row(cap_mb, b, f, n, paired[cap_mb] if args.paired else None)
            for cap_mb, (f, b, n) in sorted(pooled.items())]
    if rank == 0:
        if first_same is None:
            first = "unknown for this torch"
        elif first_same:
            first = "same as the cap (model: --first-bucket-bytes same)"
        else:
            first = "1 MiB (model: --first-bucket-bytes 1M)"
        comments = [
            "collbench DDP bucket sweep written by scripts/ddp_bucket_sweep.py",
            "model: %s, batch %d x sequence %d per rank, %s, %s head"
            % (args.model, args.batch_size, args.seq_len, args.dtype,
               "untied" if args.untied_head else "tied"),
            "world: %d ranks, backend %s, device %s, %d torch threads per rank"
            % (world, args.backend,
               torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine() + " cpu",
               torch.get_num_threads()),
            "torch %s; python %s; date %s" % (
                torch.__version__, platform.python_version(),
                datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")),
            "first bucket: %s" % first,
            "gradient_as_bucket_view: %s" % (
                "True (gradients scaled in place, no copy back; model: --grad-copy-gbps B "
                "--grad-as-bucket-view, B from the profile's header)" if args.grad_as_bucket_view
                else "False (gradients copied into buckets and back; model: --grad-copy-gbps B, "
                "B from the profile's header)"),
            "arguments: %s" % " ".join(sys.argv[1:]),
            "iterations: %d warm-up, %d timed per cap and round; %d round%s; means over all timed "
            "iterations of the max over ranks"
            % (args.warmup, args.iters, args.rounds,
               "" if args.rounds == 1 else "s, caps in ascending, then descending order"),
            "time_s: backward until gradients are synchronized; step_s: forward + backward; "
            "time_sd_s: standard deviation of the backward times"
            + ("; compute_s: the plain model's backward (no DDP), timed right before each "
               "round's passes of this cap" if args.paired else ""),
        ]
        header = CSV_HEADER + ("," + PAIRED_COLUMN if args.paired else "")
        text = "".join("# %s\n" % c for c in comments) + header + "\n"
        text += "".join(r + "\n" for r in rows)
        tmp = "%s.tmp.%d" % (args.out, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.out)
        print("ddp_bucket_sweep.py: wrote %s" % args.out, file=sys.stderr)
        if profiled is not None:
            profiled.bucket_view = args.grad_as_bucket_view
            profile_rows = profiled.rows(DTYPE_BYTES[args.dtype])
            if args.paired:
                how = ("%d warm-up, then %d timed right before each cap's DDP passes in each of "
                       "%d round%s (the plain model, no DDP)"
                       % (args.warmup, args.iters, args.rounds, "" if args.rounds == 1 else "s"))
            else:
                how = ("%d warm-up, %d timed per round; %d round%s, interleaved with this "
                       "sweep's DDP runs (the plain model, no DDP)"
                       % (args.warmup, args.iters, args.rounds, "" if args.rounds == 1 else "s"))
            comments = profile_comments(torch, args, cfg, not args.untied_head, profiled, profile_rows,
                                        device, world, "ddp_bucket_sweep.py (--profile-out)", how)
            write_text_atomic(args.profile_out, format_profile(profile_rows, comments), True)
            print("ddp_bucket_sweep.py: wrote %s" % args.profile_out, file=sys.stderr)
    dist.destroy_process_group()


def main(argv=None):
    run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Collective time against message size with torch.distributed, any backend:
all-reduce by default, or all-gather, reduce-scatter or broadcast with
`--collective` (the curves `collbench-analyze fsdp` and `zero` read).

Run under torchrun, one process per rank:

    torchrun --nproc-per-node 4 scripts/allreduce_bench.py --backend gloo \\
        -b 8 -e 256M -f 2 -o allreduce-gloo-4.csv

Writes the course CSV that `collbench-analyze import` and `ddp --comm` read,
one row per size, times in seconds:

    backend,world_size,total_elements,total_bytes,average_time,stdev_time

so gloo runs on CPUs feed the same model as NCCL runs on GPUs. The format has
no collective column: `import --collective NAME` reads other collectives, and
`fsdp`/`zero` read a course CSV given as `--all-gather FILE` as all-gather
times. Sizes are nccl-tests': the gathered total for all-gather (each rank
sends size/world), the reduced total for reduce-scatter (each rank keeps
size/world); a per-rank block is rounded down to whole elements.

Method, as collbench's own (docs/timing.md, "Timing method"): before each size a
barrier, then `-w` untimed all-reduces, then `-n` timed ones issued back to
back. nccl: a CUDA event at every iteration boundary on the current stream,
one synchronize at the end; gloo: the monotonic clock around each call (gloo
all-reduce is synchronous on CPU tensors). An iteration's time is the maximum
over ranks; average_time and stdev_time (population) are over iterations.
total_bytes is the per-rank buffer, as nccl-tests' `size`.

With `--rounds R` the size sweep runs R times, ascending, then descending,
and so on, and each size's row pools its R x `-n` iterations: on a machine
whose speed drifts over minutes (a VM, shared cores) that drift then no
longer lands on one end of the curve.

Only the pure helpers at the top run without PyTorch (CI tests them).
"""

import argparse
import datetime
import math
import os
import sys
import time

import torch_world

# --------------------------------------------------------------------------
# Pure helpers (no torch)

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp64": 8}
CSV_HEADER = "backend,world_size,total_elements,total_bytes,average_time,stdev_time"


def parse_size(text):
    """Bytes from `8`, `64K`, `1.5M`, `2G` (binary suffixes, as nccl-tests)."""
    body = text.strip().upper()
    if body.endswith("IB"):
        body = body[:-2]
    elif body.endswith("B"):
        body = body[:-1]
    multiplier = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(body[-1:], 1)
    if multiplier > 1:
        body = body[:-1]
    try:
        value = float(body) * multiplier
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a size (examples: 8, 64K, 1.5M, 2G)" % text)
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise argparse.ArgumentTypeError("%r is not a whole number of bytes" % text)
    return int(value)


def sweep_sizes(min_bytes, max_bytes, factor, step_bytes, elem_bytes):
    """Message sizes in bytes from min to max, multiplying by `factor` (when
    > 1) or adding `step_bytes`; each rounded down to whole elements, at least
    one element, duplicates dropped."""
    if min_bytes > max_bytes:
        raise ValueError("minimum size %d is larger than the maximum %d" % (min_bytes, max_bytes))
    if factor <= 1 and step_bytes <= 0:
        raise ValueError("need a step factor above 1 or a positive step size")
    sizes = []
    size = float(min_bytes)
    while size <= max_bytes:
        elements = max(1, int(size) // elem_bytes)
        nbytes = elements * elem_bytes
        if not sizes or sizes[-1] != nbytes:
            sizes.append(nbytes)
        size = size * factor if factor > 1 else size + step_bytes
    return sizes


def mean_and_pstdev(values):
    values = list(values)
    if not values:
        raise ValueError("no values")
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def iteration_times(marks_s):
    """Durations between successive marks (seconds)."""
    return [b - a for a, b in zip(marks_s, marks_s[1:])]


def visit_order(sizes, rounds):
    """The sizes in the order they are measured: ascending, then descending,
    and so on for `rounds` rounds."""
    order = []
    for r in range(rounds):
        order += sizes if r % 2 == 0 else sizes[::-1]
    return order


COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]


def call_elements(collective, nbytes, elem, world):
    """(elements of the input, elements of the output) of one call of
    `nbytes` as nccl-tests counts the size; (0, 0) when a rank's block
    would be empty."""
    count = nbytes // elem
    if collective in ("all_gather", "reduce_scatter"):
        block = count // world
        if block == 0:
            return 0, 0
        return (block, block * world) if collective == "all_gather" else (block * world, block)
    return count, count


def csv_row(backend, world_size, elements, nbytes, times_s):
    avg, std = mean_and_pstdev(times_s)
    return "%s,%d,%d,%d,%.9g,%.9g" % (backend, world_size, elements, nbytes, avg, std)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="allreduce_bench.py",
        description="torch.distributed all-reduce sweep (run under torchrun); "
        "writes the course CSV in seconds.",
    )
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True,
                        help="nccl: CUDA tensors on GPU LOCAL_RANK; gloo: CPU tensors")
    parser.add_argument("--collective", choices=COLLECTIVES, default="all_reduce",
                        help="what to time [all_reduce]")
    parser.add_argument("-b", "--min-bytes", type=parse_size, default=parse_size("8"),
                        help="smallest message [8]")
    parser.add_argument("-e", "--max-bytes", type=parse_size, default=parse_size("256M"),
                        help="largest message [256M]")
    parser.add_argument("-f", "--step-factor", type=float, default=2.0,
                        help="multiply the size by this [2]")
    parser.add_argument("-i", "--step-bytes", type=parse_size, default=0,
                        help="add this instead (with -f 1)")
    parser.add_argument("-n", "--iters", type=int, default=20, help="timed iterations [20]")
    parser.add_argument("-w", "--warmup-iters", type=int, default=5, help="untimed first [5]")
    parser.add_argument("-R", "--rounds", type=int, default=1,
                        help="run the size sweep this many times, alternating ascending "
                        "and descending order, and pool the rounds [1]")
    parser.add_argument("-d", "--dtype", choices=sorted(DTYPE_BYTES), default="fp32",
                        help="element type [fp32]")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads per process [torch's default]")
    parser.add_argument("-o", "--out", required=True, help="CSV to write (rank 0)")
    parser.add_argument("--force", action="store_true", help="overwrite --out")
    args = parser.parse_args(argv)
    if args.iters < 1:
        parser.error("-n/--iters %d: at least 1" % args.iters)
    if args.rounds < 1:
        parser.error("-R/--rounds %d: at least 1" % args.rounds)
    if args.warmup_iters < 0:
        parser.error("-w/--warmup-iters %d: not negative" % args.warmup_iters)
    if args.threads is not None and args.threads < 1:
        parser.error("--threads %d: at least 1" % args.threads)
    try:
        args.sizes = sweep_sizes(args.min_bytes, args.max_bytes, args.step_factor,
                                 args.step_bytes, DTYPE_BYTES[args.dtype])
    except ValueError as e:
        parser.error("sizes: %s" % e)
    if os.environ.get("RANK", "0") == "0" and os.path.exists(args.out) and not args.force:
        parser.error("--out %s already exists (pass --force to overwrite it)" % args.out)
    return args


# --------------------------------------------------------------------------
# The benchmark (torch from here on)


def run(args):
    import torch
    import torch.distributed as dist

    device, rank, world = torch_world.join(torch, "allreduce_bench.py", args.backend, args.threads)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
             "fp64": torch.float64}[args.dtype]
    elem = DTYPE_BYTES[args.dtype]
    buffer = torch.ones(max(args.sizes) // elem, dtype=dtype, device=device)
    output = torch.empty_like(buffer)
    sizes = [n for n in args.sizes if call_elements(args.collective, n, elem, world)[0] > 0]
    samples = {nbytes: [] for nbytes in sizes}

    def caller(nbytes):
        inp, out = call_elements(args.collective, nbytes, elem, world)
        if args.collective == "all_gather":
            return lambda: dist.all_gather_into_tensor(output[:out], buffer[:inp])
        if args.collective == "reduce_scatter":
            return lambda: dist.reduce_scatter_tensor(output[:out], buffer[:inp])
        if args.collective == "broadcast":
            return lambda: dist.broadcast(buffer[:inp], 0)
        return lambda: dist.all_reduce(buffer[:inp])

    for visit, nbytes in enumerate(visit_order(sizes, args.rounds)):
        call = caller(nbytes)
        dist.barrier()
        for _ in range(args.warmup_iters):
            call()
        if args.backend == "nccl":
            torch.cuda.synchronize(device)
            events = [torch.cuda.Event(enable_timing=True) for _ in range(args.iters + 1)]
            dist.barrier()
            events[0].record()
            for i in range(args.iters):
                call()
                events[i + 1].record()
            torch.cuda.synchronize(device)
            times = [a.elapsed_time(b) / 1e3 for a, b in zip(events, events[1:])]
        else:
            dist.barrier()
            marks = [time.perf_counter()]
            for _ in range(args.iters):
                call()
                marks.append(time.perf_counter())
            times = iteration_times(marks)
        # The collective's time per iteration: the slowest rank's.
        slowest = torch.tensor(times, dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        samples[nbytes] += slowest.tolist()
        if rank == 0:
            label = "" if args.rounds == 1 else "round %d/%d: " % (
                visit // len(sizes) + 1, args.rounds)
            print(label + csv_row(args.backend, world, nbytes // elem, nbytes, slowest.tolist()),
                  flush=True)
    rows = [csv_row(args.backend, world, n // elem, n, samples[n]) for n in sizes]
    if rank == 0:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        print("allreduce_bench.py: %s %s, world %d, torch %s, %s, %d x %d timed iterations per "
              "size; writing %s" % (args.backend, args.collective, world, torch.__version__,
                                    stamp, args.rounds, args.iters, args.out), file=sys.stderr)
        # The course format has no comment lines, so provenance goes to stderr.
        tmp = "%s.tmp.%d" % (args.out, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(CSV_HEADER + "\n" + "".join(r + "\n" for r in rows))
        os.replace(tmp, args.out)
    dist.destroy_process_group()


def main(argv=None):
    run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()

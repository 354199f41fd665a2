#!/usr/bin/env python3
"""Where FSDP2's blocking collectives spend their time on the CPU with gloo: the ranks' arrival skew against the transfer itself.

Run under torchrun with OMP_NUM_THREADS=1, with scripts/shard_train.py's
model flags:

    torchrun --nproc-per-node 2 scripts/shard_trace.py --model gpt2-mini \\
        --batch-size 4 --seq-len 128 --threads 1 --warmup 3 --iters 10

Trains with FSDP2 exactly as shard_train.py's `fsdp` strategy does (its
`train`), with every all-gather and reduce-scatter FSDP2 issues wrapped in
a timer on every rank. The clock is CLOCK_MONOTONIC, one clock for all the
processes of a machine, so the ranks' times compare directly; steps are
counted at `train`'s barrier before each step. For each call of each timed
step it finds:

- the skew: the last rank's arrival less the first's, time the early
  ranks spend waiting for the late one (a blocking call cannot start
  its transfer before every rank has posted it);
- the transfer: from the last arrival until the first rank leaves, the
  collective itself once every rank is in;
- which rank came last.

Then it calls the last step's sizes again back to back, a barrier before
each call so that the ranks arrive together, and times them the same way:
the transfer of the same calls with no compute between them.

Prints one JSON object: per step the calls, the sums of skew and transfer
and each rank's time inside the calls (ms, the mean over timed steps), how
often each rank came last, and the same sums for the back-to-back calls.
A diagnostic: it measures nothing the model reads.
"""
import argparse
import json
import sys
import time

import profile_layers as pl

# The FSDP2 collectives to time (torch 2.15 calls the *_single names; older
# releases the *_tensor ones). A call inside a wrapped call is not counted.
WRAPPED = {
    "all_gather_single": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "reduce_scatter_single": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
}


def tensor_arguments(positional, named):
    """The (output, input) tensors of an all-gather or reduce-scatter call,
    given by position or by any of torch's names for them."""
    def pick(index, names):
        if len(positional) > index:
            return positional[index]
        for n in names:
            if n in named:
                return named[n]
        raise TypeError("no %s tensor among the call's arguments" % names[0])
    return (pick(0, ("output_tensor", "output")), pick(1, ("input_tensor", "input")))


def parse_args(argv):
    p = argparse.ArgumentParser(prog="shard_trace.py", description=__doc__.splitlines()[0])
    pl.add_model_arguments(p)
    args = p.parse_args(argv)
    pl.check_model_arguments(p, args, "cpu")
    return args


def summarize(calls_per_rank, first_step):
    """The per-step sums of `calls_per_rank`: for each rank, its calls in
    issue order as (kind, step, enter_ns, exit_ns), every rank with the
    same calls. Steps before `first_step` are left out. Per step (the mean
    over the steps kept, in ms): `skew`, the last arrival less the first,
    summed over the calls; `transfer`, from the last arrival until the
    first rank left; `left_apart`, the last rank's leaving less the
    first's, of the call before each call of the same step; `work_apart`,
    the longest less the shortest time a rank spent between that call and
    this one (its compute); `in_call`, each rank's time inside the calls.
    A call's skew is at most the previous call's `left_apart` plus its
    `work_apart`. Also: the calls per step and `last_arrivals`, how often
    each rank came last."""
    world = len(calls_per_rank)
    counts = {len(c) for c in calls_per_rank}
    if len(counts) != 1:
        raise ValueError("the ranks made different numbers of calls: %s"
                         % sorted(len(c) for c in calls_per_rank))
    sums = {}
    last = [0] * world
    previous = None  # (step, exits) of the call before
    for i in range(counts.pop()):
        row = [c[i] for c in calls_per_rank]
        kind, step = row[0][0], row[0][1]
        if any((r[0], r[1]) != (kind, step) for r in row):
            raise ValueError("call %d differs between ranks: %s" % (i, [r[:2] for r in row]))
        enters = [r[2] for r in row]
        exits = [r[3] for r in row]
        before = previous[1] if previous and previous[0] == step else None
        previous = (step, exits)
        if step < first_step:
            continue
        s = sums.setdefault(step, {"calls": 0, "skew": 0, "transfer": 0, "left_apart": 0,
                                   "work_apart": 0, "in": [0] * world})
        s["calls"] += 1
        s["skew"] += max(enters) - min(enters)
        s["transfer"] += max(min(exits) - max(enters), 0)
        if before:
            work = [e - x for e, x in zip(enters, before)]
            s["left_apart"] += max(before) - min(before)
            s["work_apart"] += max(work) - min(work)
        for r in range(world):
            s["in"][r] += exits[r] - enters[r]
        last[enters.index(max(enters))] += 1
    n = len(sums)
    if n == 0:
        raise ValueError("no calls in the timed steps")

    def mean_ms(key, rank=None):
        values = [s[key] if rank is None else s[key][rank] for s in sums.values()]
        return round(sum(values) / n / 1e6, 3)

    return {
        "steps": n,
        "calls": sorted({s["calls"] for s in sums.values()}),
        "skew_ms": mean_ms("skew"),
        "transfer_ms": mean_ms("transfer"),
        "left_apart_ms": mean_ms("left_apart"),
        "work_apart_ms": mean_ms("work_apart"),
        "in_call_ms": [mean_ms("in", r) for r in range(world)],
        "last_arrivals": last,
    }


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.distributed as dist

    import shard_train
    import torch_world

    device, rank, world = torch_world.join(torch, "shard_trace.py", "gloo", args.threads)
    calls, shapes = [], []
    state = {"step": -1, "inside": False, "record_shapes": False}

    def timed(name, kind, call):
        def wrapper(*positional, **named):
            if state["inside"]:
                return call(*positional, **named)
            state["inside"] = True
            try:
                enter = time.monotonic_ns()
                result = call(*positional, **named)
                calls.append((kind, state["step"], enter, time.monotonic_ns()))
            finally:
                state["inside"] = False
            if state["record_shapes"]:
                out, inp = tensor_arguments(positional, named)
                shapes.append((name, out.numel(), inp.numel(), out.dtype))
            return result
        return wrapper

    for name, kind in WRAPPED.items():
        if hasattr(dist, name):
            setattr(dist, name, timed(name, kind, getattr(dist, name)))
    plain_barrier = dist.barrier
    last_step = args.warmup + args.iters - 1

    def counting_barrier(*positional, **named):
        state["step"] += 1
        state["record_shapes"] = state["step"] == last_step
        return plain_barrier(*positional, **named)

    dist.barrier = counting_barrier
    shard_train.train(torch, "fsdp", args, device, rank, world)
    dist.barrier = plain_barrier
    state["record_shapes"] = False
    training = calls[:]

    calls.clear()
    state["step"] = 0
    for name, out_numel, in_numel, dtype in shapes:
        out = torch.zeros(out_numel, dtype=dtype)
        inp = torch.ones(in_numel, dtype=dtype)
        plain_barrier()
        getattr(dist, name)(out, inp)

    gathered = [None] * world
    dist.all_gather_object(gathered, (training, calls[:]))
    dist.destroy_process_group()
    if rank == 0:
        try:
            report = {
                "model": args.model, "batch_size": args.batch_size, "seq_len": args.seq_len,
                "ranks": world, "torch": torch.__version__,
                "training": summarize([g[0] for g in gathered], args.warmup),
                "back_to_back": summarize([g[1] for g in gathered], 0),
            }
        except ValueError as e:  # e.g. this torch's FSDP2 calls none of WRAPPED
            raise SystemExit("shard_trace.py: %s" % e)
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

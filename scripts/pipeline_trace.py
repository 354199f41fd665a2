#!/usr/bin/env python3
"""Where a torch.distributed.pipelining step spends its time, per rank, on the CPU with gloo.

Run under `torchrun --nproc-per-node 2` with OMP_NUM_THREADS=1. The model
is scripts/pipeline_train.py's (a stack of nn.TransformerEncoderLayer, an
MSE loss on the last stage), split evenly (in 2 chunks per stage for the
interleaved schedule). The schedule's steps are timed with the stage's
forward_one_chunk and backward_one_chunk, the loss, the gradient scaling
and every gloo send/receive post and wait wrapped in timers; then each
rank's stage modules are timed alone (the other rank waiting) and with
both ranks at once, at the same micro-batch size, and their layers one
by one as scripts/pipeline_train.py's profile times them (a fresh input
and a barrier before each step, both ranks at once), summed per module, with the minor page faults per
layer step: once first thing in the fresh process and once after the
steps. Prints one JSON object: per rank the mean step, the time per step in
each wrapped call (count, ms, and for posts the median, 90th percentile
and largest single call in ms) and the module and summed layer times
(forward, backward in ms). A diagnostic: it measures nothing the model
reads.
"""
import argparse
import collections
import json
import sys
import time

from pipeline_train import one_step
from profile_layers import non_negative_int, positive_int

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--schedule", required=True, choices=SCHEDULES)
    p.add_argument("--microbatches", type=positive_int, required=True, help="micro-batch count")
    p.add_argument("--layers", type=positive_int, default=8, help="encoder layers [8]")
    p.add_argument("--width", type=positive_int, default=256, help="model width [256]")
    p.add_argument("--seq-len", type=positive_int, default=64, help="tokens per sample [64]")
    p.add_argument("--global-batch", type=positive_int, default=32, help="samples per step [32]")
    p.add_argument("--warmup", type=non_negative_int, default=2, help="untimed steps [2]")
    p.add_argument("--iters", type=positive_int, default=5, help="timed steps [5]")
    args = p.parse_args(argv)
    if args.width % 4:
        p.error("--width %d is not divisible by the 4 attention heads" % args.width)
    if args.global_batch % args.microbatches:
        p.error("--microbatches %d must divide --global-batch %d"
                % (args.microbatches, args.global_batch))
    return args


def minor_faults(path="/proc/self/stat"):
    """This process's minor page faults (field 10 of /proc/PID/stat; the
    command name in parentheses may hold spaces, so fields count from its
    end); 0 where it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
        return int(text[text.rindex(")") + 2:].split()[7])
    except (OSError, ValueError, IndexError):
        return 0


def summarize(events, iters):
    """Per tag of (tag, start, end) events: [calls per step, ms per step], and
    for the post tags [median, 90th percentile, largest] of one call in ms."""
    by_tag = collections.defaultdict(list)
    for tag, start, end in events:
        by_tag[tag].append(end - start)
    totals = {tag: [len(d) // iters, round(1e3 * sum(d) / iters, 2)] for tag, d in by_tag.items()}
    spread = {}
    for tag, d in by_tag.items():
        if tag.startswith("post"):
            d = sorted(d)
            spread[tag] = [round(1e3 * d[len(d) // 2], 3), round(1e3 * d[int(len(d) * 0.9)], 3),
                           round(1e3 * d[-1], 3)]
    return totals, spread


def run(args):
    import torch
    import torch.distributed as dist
    import torch.distributed.pipelining.schedules as schedules
    from torch import nn
    from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                              ScheduleInterleaved1F1B)
    from torch.distributed.pipelining.stage import _PipelineStageBase

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = [nn.TransformerEncoderLayer(args.width, 4, 4 * args.width, dropout=0.0,
                                         batch_first=True) for _ in range(args.layers)]
    parts = world * (2 if args.schedule == "interleaved" else 1)
    split = [args.layers // parts + (1 if g < args.layers % parts else 0) for g in range(parts)]
    mine = list(range(rank, parts, world))
    mods = [nn.Sequential(*layers[sum(split[:g]):sum(split[:g + 1])]) for g in mine]
    stages = [PipelineStage(mod, g, parts, torch.device("cpu")) for mod, g in zip(mods, mine)]
    loss = lambda out, target: nn.functional.mse_loss(out, target)  # noqa: E731
    cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B,
           "interleaved": ScheduleInterleaved1F1B}[args.schedule]
    m = args.microbatches
    schedule = cls(stages if args.schedule == "interleaved" else stages[0], n_microbatches=m,
                   loss_fn=loss)

    events, recording = [], [False]

    def timed(fn, tag):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            result = fn(*a, **k)
            if recording[0]:
                events.append((tag, t0, time.perf_counter()))
            return result
        return wrapper

    for name, tag in (("forward_one_chunk", "forward"), ("backward_one_chunk", "backward"),
                      ("scale_grads", "scale_grads")):
        setattr(_PipelineStageBase, name, timed(getattr(_PipelineStageBase, name), tag))
    schedule._compute_loss = timed(schedule._compute_loss, "loss")

    class TimedWork:
        def __init__(self, work, tag):
            self.work, self.tag = work, tag

        def wait(self):
            return timed(self.work.wait, "wait " + self.tag)()

    batch_p2p = schedules._batch_p2p

    def timed_batch_p2p(ops, desc=None):
        tag = desc or "runtime"
        works = timed(batch_p2p, "post " + tag)(ops, desc) if ops else batch_p2p(ops, desc)
        return [TimedWork(w, tag) for w in works]

    schedules._batch_p2p = timed_batch_p2p

    b = args.global_batch // m

    def module_ms(mod, first, barrier=False, faults=None):
        fwd, bwd = [], []
        for it in range(args.warmup + args.iters):
            inp = torch.randn(b, args.seq_len, args.width, requires_grad=not first)
            if barrier:
                dist.barrier()
            if it == args.warmup and faults is not None:
                faults.append(-minor_faults())
            t0 = time.perf_counter()
            y = mod(inp)
            t1 = time.perf_counter()
            y.backward(torch.ones_like(y))
            if it >= args.warmup:
                fwd.append(t1 - t0)
                bwd.append(time.perf_counter() - t1)
        if faults is not None:
            faults[-1] += minor_faults()
        mod.zero_grad(set_to_none=True)
        return [round(1e3 * sum(fwd) / len(fwd), 2), round(1e3 * sum(bwd) / len(bwd), 2)]

    def layers_profile_way():
        """Each stage's layers one by one as the profile times them, summed
        per module (forward, backward ms), and the minor page faults per
        layer step."""
        sums, faults = [], []
        for mod in mods:
            per_layer = [module_ms(layer, False, barrier=True, faults=faults) for layer in mod]
            sums.append([round(sum(f for f, _ in per_layer), 2),
                         round(sum(g for _, g in per_layer), 2)])
        return sums, round(sum(faults) / (len(faults) * args.iters))

    # First in the fresh process (as the profile ran before the allocator
    # warm-up), then after the steps.
    fresh = layers_profile_way()

    x = torch.randn(args.global_batch, args.seq_len, args.width)
    target = torch.randn(args.global_batch, args.seq_len, args.width)
    steps = []
    for it in range(args.warmup + args.iters):
        dist.barrier()
        recording[0] = it >= args.warmup
        t0 = time.perf_counter()
        one_step(schedule, rank, world, x, target)
        if recording[0]:
            steps.append(time.perf_counter() - t0)
        dist.barrier()
        for mod in mods:
            mod.zero_grad(set_to_none=True)
    recording[0] = False
    totals, spread = summarize(events, args.iters)

    dist.barrier()
    together = [module_ms(mod, g == 0) for mod, g in zip(mods, mine)]
    after_steps = layers_profile_way()
    alone = None
    for r in range(world):
        dist.barrier()
        if r == rank:
            alone = [module_ms(mod, g == 0) for mod, g in zip(mods, mine)]
        dist.barrier()
    mine_out = {"rank": rank, "step_ms": round(1e3 * sum(steps) / len(steps), 1),
                "calls": totals, "post_spread_ms": spread,
                "module_fwd_bwd_ms_both_ranks": together, "module_fwd_bwd_ms_alone": alone,
                "layers_summed_fwd_bwd_ms_profile_way": after_steps[0],
                "page_faults_per_layer_step": after_steps[1],
                "fresh_process_layers_summed_fwd_bwd_ms_profile_way": fresh[0],
                "fresh_process_page_faults_per_layer_step": fresh[1]}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine_out)
    if rank == 0:
        print(json.dumps({"schedule": args.schedule, "microbatches": m,
                          "microbatch_size": b, "ranks": gathered}))
    dist.destroy_process_group()


if __name__ == "__main__":
    run(parse_args(sys.argv[1:]))

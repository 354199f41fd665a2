#!/usr/bin/env python3
"""Measured training steps under DDP, ZeRO-1 and FSDP, for checking
`collbench-analyze zero` and `fsdp` against PyTorch.

Run under torchrun, one process per rank:

    torchrun --nproc-per-node 2 scripts/shard_train.py --backend gloo \\
        --model gpt2-mini --batch-size 4 --seq-len 128 --threads 1 \\
        --strategy ddp,zero1,fsdp -o steps.csv

Trains the same transformer (scripts/profile_layers.py's GPT-2/BERT, random
tokens, Adam) with each strategy in turn, from the same initial weights:

- `ddp`: DistributedDataParallel (bucket_cap_mb --bucket-cap-mb, 25 by
  default), Adam;
- `zero1`: the same DDP model with ZeroRedundancyOptimizer(Adam): gradients
  all-reduced by DDP, each rank steps its shard of the state, parameters
  broadcast from their owners (`zero --stage 1 --zero-grads all-reduce
  --zero-params broadcast`);
- `fsdp`: FSDP2 `fully_shard` on every block and on the whole model
  (FULL_SHARD, reshard after forward; `fsdp --strategy full --unit-layers 1`).

Each step is timed on every rank (a barrier first, then forward, backward,
optimizer step and zero_grad), and each iteration keeps the slowest rank's
times. With `--profile-out FILE` the plain model (no communication) is
profiled as scripts/profile_layers.py does, by the same processes right
before the strategies, so that the layer profile sees the machine as the
steps do; with `--rounds R` the profile and the strategies run R times in
turn and each pools its rounds (on shared cores whose load drifts, the
drift then falls on all alike). On a GPU, `torch.cuda.max_memory_allocated` is recorded per rank.
Rank 0 writes one CSV row per strategy:

    strategy,world_size,iterations,step_s,step_sd_s,forward_s,backward_s,optimizer_s,
    peak_bytes,init_bytes,before_step_bytes,after_step_bytes

The memory columns are GPU bytes allocated by the strategy (the largest
rank's; empty on the CPU), counted from what was allocated before its
model was built, so that nothing left by the profiler or an earlier
strategy counts: the peak over all its steps, and the moments the models
report: after the model and optimizer are set up, just before the last
step's optimizer step, and just after it. Provenance goes to the
`#` lines before the header. Only the pure helpers at the top run without
PyTorch.
"""

import argparse
import datetime
import os
import platform
import sys

import profile_layers as pl
import torch_world

STRATEGIES = ["ddp", "zero1", "fsdp"]
CSV_HEADER = ("strategy,world_size,iterations,step_s,step_sd_s,forward_s,backward_s,"
              "optimizer_s,peak_bytes,init_bytes,before_step_bytes,after_step_bytes")


def parse_strategies(text):
    """`ddp,zero1` -> ["ddp", "zero1"]; unknown names are an error."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in STRATEGIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            "%r: strategies are %s, comma-separated" % (text, ", ".join(STRATEGIES)))
    return names


def csv_row(strategy, world, steps, memory):
    """One CSV row from `steps`, a list of (forward, backward, optimizer,
    whole step) seconds per iteration, and `memory`, (peak, after set-up,
    before the step, after it) bytes or None."""
    n = len(steps)
    total = [s[3] for s in steps]
    mean = sum(total) / n
    sd = (sum((t - mean) ** 2 for t in total) / n) ** 0.5
    parts = [sum(s[i] for s in steps) / n for i in range(3)]
    return "%s,%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%s" % (
        strategy, world, n, mean, sd, parts[0], parts[1], parts[2],
        ",".join(["" if memory is None else "%d" % b for b in (memory or [None] * 4)]))


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="shard_train.py",
        description="Time training steps under DDP, ZeRO-1 (ZeroRedundancyOptimizer) and "
        "FSDP2 (run under torchrun); writes one CSV row per strategy.")
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    parser.add_argument("--strategy", type=parse_strategies, default=list(STRATEGIES),
                        help="strategies to run, in order [ddp,zero1,fsdp]")
    pl.add_model_arguments(parser)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0,
                        help="DDP's bucket_cap_mb [25]")
    parser.add_argument("--rounds", type=pl.positive_int, default=1,
                        help="run the profile and every strategy this many times in turn [1]")
    parser.add_argument("--profile-out", default=None,
                        help="also write the layer profile (profile_layers.py's CSV), "
                        "measured in the same rounds")
    parser.add_argument("-o", "--out", required=True, help="CSV to write (rank 0)")
    parser.add_argument("--force", action="store_true", help="overwrite --out")
    args = parser.parse_args(argv)
    pl.check_model_arguments(parser, args, "cuda" if args.backend == "nccl" else "cpu")
    if os.environ.get("RANK", "0") == "0" and os.path.exists(args.out) and not args.force:
        parser.error("--out %s already exists (pass --force to overwrite it)" % args.out)
    return args


# --------------------------------------------------------------------------
# Training (torch from here on)


def wrap(torch, strategy, model, device, args):
    """The model and optimizer of `strategy`."""
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block)
        fully_shard(model, reshard_after_forward=True)
        return model, torch.optim.Adam(model.parameters(), lr=1e-4)
    ids = [device.index] if device.type == "cuda" else None
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids,
                                                    bucket_cap_mb=args.bucket_cap_mb)
    if strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=1e-4)
    else:
        opt = torch.optim.Adam(ddp.parameters(), lr=1e-4)
    return ddp, opt


def train(torch, strategy, args, device, rank, world):
    import torch.distributed as dist

    torch.manual_seed(args.seed)
    cfg = pl.CONFIGS[args.model]
    gpu = device.type == "cuda"
    if gpu:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    model = pl.build_model(cfg, not args.untied_head)
    model = model.to(device=device, dtype=pl.torch_dtype(torch, args.dtype))
    model.train()
    tokens = pl.random_tokens(torch, cfg, args.batch_size, args.seq_len, device, args.seed + rank)
    model, opt = wrap(torch, strategy, model, device, args)
    clock = pl.Clock(torch, device)
    moments = [torch.cuda.memory_allocated(device) - base] if gpu else []
    steps = []
    for it in range(args.warmup + args.iters):
        clock.sync()
        dist.barrier()
        start = clock.mark()
        loss = model(tokens)
        forward = clock.mark()
        loss.backward()
        backward = clock.mark()
        last = it == args.warmup + args.iters - 1
        if gpu and last:
            moments.append(torch.cuda.memory_allocated(device) - base)
        opt.step()
        if gpu and last:
            moments.append(torch.cuda.memory_allocated(device) - base)
        opt.zero_grad(set_to_none=True)
        end = clock.mark()
        clock.sync()
        if it < args.warmup:
            continue
        times = [clock.seconds(start, forward), clock.seconds(forward, backward),
                 clock.seconds(backward, end), clock.seconds(start, end)]
        steps.append(pl.ready_times_slowest_rank(torch, times, world))
    memory = None
    if gpu:
        mine = [float(torch.cuda.max_memory_allocated(device) - base)] + [float(m) for m in moments]
        mine = torch.tensor(mine, dtype=torch.float64, device=device)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        memory = [int(b) for b in mine.tolist()]
    return steps, memory


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.distributed as dist

    device, rank, world = torch_world.join(torch, "shard_train.py", args.backend, args.threads)
    profiler = None
    if args.profile_out:
        torch.manual_seed(args.seed)
        cfg = pl.CONFIGS[args.model]
        plain = pl.build_model(cfg, not args.untied_head)
        plain = plain.to(device=device, dtype=pl.torch_dtype(torch, args.dtype))
        plain.train()
        tokens = pl.random_tokens(torch, cfg, args.batch_size, args.seq_len, device,
                                  args.seed + rank)
        profiler = pl.Profiler(torch, plain, tokens, pl.Clock(torch, device), "layer", world)
    steps = {s: [] for s in args.strategy}
    memories = {}
    for _ in range(args.rounds):
        if profiler:
            profiler.run(args.warmup, args.iters)
            profiler.measure_sync_wait()
            for p in plain.parameters():  # its gradients are not the strategies'
                p.grad = None
        for strategy in args.strategy:
            done, memory = train(torch, strategy, args, device, rank, world)
            steps[strategy] += done
            if memory is not None and (strategy not in memories or memory[0] > memories[strategy][0]):
                memories[strategy] = memory  # the round with the highest peak
            if rank == 0:
                print("shard_train.py: " + csv_row(strategy, world, done, memory), flush=True)
    rows = [csv_row(s, world, steps[s], memories.get(s)) for s in args.strategy]
    if profiler:
        profiler.measure_gradient_copy()
        activations = profiler.measure_activations()
        transients = profiler.measure_backward_transients()
        profile_rows = profiler.extended_rows(pl.DTYPE_BYTES[args.dtype], args.batch_size,
                                              activations, transients)
        if rank == 0:
            comments = pl.profile_comments(
                torch, args, pl.CONFIGS[args.model], not args.untied_head, profiler,
                profile_rows, device, world, "shard_train.py",
                "%d rounds of %d warm-up and %d timed, each round before the strategies'"
                % (args.rounds, args.warmup, args.iters))
            pl.write_text_atomic(args.profile_out, pl.format_profile(profile_rows, comments), True)
    if rank == 0:
        comments = [
            "written by scripts/shard_train.py",
            "model: %s, batch %d x sequence %d, %s, Adam; %d round(s) of %d warm-up and %d timed "
            "steps each" % (args.model, args.batch_size, args.seq_len, args.dtype, args.rounds,
                            args.warmup, args.iters),
            "ranks: %d (%s), torch %d threads each; torch %s; python %s; %s"
            % (world, args.backend, torch.get_num_threads(), torch.__version__,
               platform.python_version(), platform.machine()),
            "date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "arguments: %s" % " ".join(sys.argv[1:]),
            "each iteration's times are the slowest rank's; step_sd_s over iterations",
        ]
        text = "".join("# %s\n" % c for c in comments) + CSV_HEADER + "\n"
        text += "".join(r + "\n" for r in rows)
        pl.write_text_atomic(args.out, text, args.force)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

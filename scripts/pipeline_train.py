#!/usr/bin/env python3
"""Measure what `collbench-analyze pipeline` predicts, on the CPU with gloo.

Run under `torchrun --nproc-per-node 2` (one process per pipeline stage).
A small transformer (a stack of nn.TransformerEncoderLayer, no dropout, an
MSE loss on the last stage) is profiled and then trained as a pipeline with
torch.distributed.pipelining, all in one job so the three inputs of the
model come from the same machine under the same load:

1. the layer profile (`--out-dir/profile.csv`): every layer's forward and
   backward time at each micro-batch size of the sweep, timed on all ranks
   at once (barrier each iteration, mean over ranks) with its output bytes,
   after one untimed forward and backward of the whole stack at the global
   batch has grown the allocator's heap as the stages' is;
2. the send/receive curve (`sendrecv.csv`, the course CSV format read as
   sendrecv): gloo send/recv ping-pong between ranks 0 and 1, half the
   round trip;
3. measured pipeline steps (`measured.csv`,
   `microbatches,throughput,schedule,split,others_cpu`): ScheduleGPipe and
   Schedule1F1B for each micro-batch count dividing the global batch,
   ScheduleInterleaved1F1B with `--chunks` model chunks per stage (equal
   chunks; counts that are a multiple of the stages), and the uneven split
   given by `--uneven` at `--uneven-microbatches`.

Other processes on the machine slow every one of these timings. Each unit
(the profile of one layer at one micro-batch size, the send/receive
curve, each pipeline run) is watched: the CPU time the whole machine spent
(/proc/stat, steal included) less the CPU time of this job's processes,
as a share of all cores over the unit's wall time, is the `others_cpu`
share. A unit where it exceeds `--others-max` is timed again, up to
`--retries` times (the share counts clock ticks, 1/100 s on most
kernels, so a unit of a few tenths of a second gets a coarse one, even
above 1); every attempt is kept in `load.csv`
(`unit,attempt,others_cpu,kept`) and each pipeline run's share in
measured.csv's `others_cpu` column (empty where /proc is not readable).

Only argument parsing runs without PyTorch; torch is imported in `run`.
"""
import argparse
import os
import sys
import time

from profile_layers import non_negative_int, positive_int


def positive_int_list(text):
    """A comma list of whole numbers of at least 1, e.g. `1,2,4`."""
    try:
        return [positive_int(part.strip()) for part in text.split(",")]
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError("%r: %s (a comma list of whole numbers, e.g. 1,2,4)"
                                         % (text, e))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=positive_int, default=8, help="encoder layers [8]")
    p.add_argument("--width", type=positive_int, default=256, help="model width [256]")
    p.add_argument("--heads", type=positive_int, default=4, help="attention heads [4]")
    p.add_argument("--seq-len", type=positive_int, default=64, help="tokens per sample [64]")
    p.add_argument("--global-batch", type=positive_int, default=32, help="samples per step [32]")
    p.add_argument("--microbatches", type=positive_int_list, default="1,2,4,8,16,32",
                   help="micro-batch counts to sweep [1,2,4,8,16,32]")
    p.add_argument("--uneven", type=positive_int_list, default="6,2", help="an uneven split to time [6,2]")
    p.add_argument("--uneven-microbatches", type=positive_int, default=8,
                   help="micro-batch count of the uneven run [8]")
    p.add_argument("--chunks", type=non_negative_int, default=2,
                   help="model chunks per stage of the interleaved runs; 0: none [2]")
    p.add_argument("--warmup", type=non_negative_int, default=2, help="untimed steps per run [2]")
    p.add_argument("--iters", type=positive_int, default=5, help="timed steps per run [5]")
    p.add_argument("--threads", type=positive_int, default=1, help="torch threads per rank [1]")
    p.add_argument("--others-max", type=float, default=0.05,
                   help="share of all cores other processes may use during a unit before it "
                        "is timed again [0.05]")
    p.add_argument("--retries", type=non_negative_int, default=2,
                   help="times a unit disturbed by other processes is timed again [2]")
    p.add_argument("--out-dir", required=True, help="folder for the three CSVs")
    args = p.parse_args(argv)
    bad = [m for m in args.microbatches + [args.uneven_microbatches] if args.global_batch % m]
    if bad:
        p.error("--microbatches / --uneven-microbatches %s: each must divide --global-batch %d"
                % (bad, args.global_batch))
    if args.width % args.heads:
        p.error("--width %d is not divisible by --heads %d (each head takes an equal part)"
                % (args.width, args.heads))
    if sum(args.uneven) != args.layers:
        p.error("--uneven %s does not add up to --layers %d" % (args.uneven, args.layers))
    ranks = os.environ.get("WORLD_SIZE", "")
    if ranks.isdigit() and len(args.uneven) != int(ranks):
        p.error("--uneven %s has %d stages; this job has %s ranks (one stage each)"
                % (",".join(map(str, args.uneven)), len(args.uneven), ranks))
    if ranks.isdigit() and args.uneven_microbatches < int(ranks):
        p.error("--uneven-microbatches %d: the uneven split runs 1F1B, which needs at least "
                "one micro-batch per stage (%s ranks)" % (args.uneven_microbatches, ranks))
    if not 0 <= args.others_max <= 1:
        p.error("--others-max %g is not a share of the cores between 0 and 1" % args.others_max)
    if args.retries < 0:
        p.error("--retries %d is not a count of 0 or more" % args.retries)
    return args


def machine_cpu_ticks(stat_text):
    """Busy clock ticks of the whole machine from /proc/stat's text (user,
    nice, system, irq, softirq and steal of the `cpu` line) and the number
    of cpuN lines."""
    lines = stat_text.splitlines()
    fields = [int(x) for x in lines[0].split()[1:]]
    busy = sum(fields[i] for i in (0, 1, 2, 5, 6, 7) if i < len(fields))
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return busy, cores


def process_cpu_ticks(stat_text):
    """utime + stime (all threads) from a /proc/PID/stat text; the command
    name in parentheses may hold spaces, so fields count from its end."""
    rest = stat_text[stat_text.rindex(")") + 2:].split()
    return int(rest[11]) + int(rest[12])


def others_share(machine_ticks, job_ticks, wall_s, cores, hz):
    """Share of all cores that processes outside the job used: (machine's
    busy ticks − the job's ticks) over wall time × cores, floored at 0."""
    if wall_s <= 0 or cores <= 0 or hz <= 0:
        return 0.0
    return max(0.0, (machine_ticks - job_ticks) / hz) / (wall_s * cores)


def time_sendrecv(torch, dist, rank, warmup, iters):
    """The send/receive curve between ranks 0 and 1 (others idle), as rows
    of the course CSV: half a round trip, 1 KiB to 16 MiB, `iters` timed
    after `warmup`."""
    curve = []
    for nbytes in [1 << p for p in range(10, 25)]:
        buf = torch.zeros(nbytes // 4)
        times = []
        for it in range(warmup + iters):
            dist.barrier()
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(buf, 1)
                dist.recv(buf, 1)
            elif rank == 1:
                dist.recv(buf, 0)
                dist.send(buf, 0)
            if it >= warmup:
                times.append((time.perf_counter() - t0) / 2)
        mean = sum(times) / len(times)
        sd = (sum((t - mean) ** 2 for t in times) / max(1, len(times) - 1)) ** 0.5
        curve.append("gloo,2,%d,%d,%.9e,%.9e" % (nbytes // 4, nbytes, mean, sd))
    return curve


def run(args):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                              ScheduleInterleaved1F1B)

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    layers = [nn.TransformerEncoderLayer(args.width, args.heads, 4 * args.width,
                                         dropout=0.0, batch_first=True)
              for _ in range(args.layers)]
    params = [sum(p.numel() for p in layer.parameters()) for layer in layers]
    sizes = sorted({args.global_batch // m for m in args.microbatches})

    def mean_over_ranks(values):
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t)
        return (t / world).tolist()

    # The job's own processes: every rank, and the launcher (once).
    job_stats = ["/proc/self/stat"] + (["/proc/%d/stat" % os.getppid()]
                                  if int(os.environ.get("LOCAL_RANK", rank)) == 0 else [])
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def ticks():
        """(machine busy ticks, cores, this rank's share of the job's ticks),
        or None where /proc cannot be read."""
        try:
            with open("/proc/stat", encoding="ascii") as f:
                busy, cores = machine_cpu_ticks(f.read())
            own = 0
            for path in job_stats:
                with open(path, encoding="ascii", errors="replace") as f:
                    own += process_cpu_ticks(f.read())
            return busy, cores, own
        except (OSError, ValueError, IndexError):
            return None

    load_rows = []

    def guarded(unit, measure):
        """Runs `measure` (collective) until other processes used at most
        --others-max of the cores during it or the retries are spent; the
        last result and its share (None: not readable)."""
        for attempt in range(args.retries + 1):
            before, t0 = ticks(), time.perf_counter()
            result = measure()
            after, wall = ticks(), time.perf_counter() - t0
            ok = before is not None and after is not None
            own = torch.tensor([after[2] - before[2] if ok else 0, 0 if ok else 1],
                               dtype=torch.float64)
            dist.all_reduce(own)
            share = torch.tensor([0.0])
            if rank == 0 and own[1] == 0:
                share[0] = others_share(after[0] - before[0], own[0].item(), wall,
                                        after[1], hz)
            dist.broadcast(share, 0)
            share = None if own[1] > 0 else share.item()
            last = share is None or share <= args.others_max or attempt == args.retries
            load_rows.append("%s,%d,%s,%d" % (unit, attempt, "" if share is None else
                                              "%.4f" % share, 1 if last else 0))
            if rank == 0 and not last:
                print("%s: other processes used %.1f %% of the cores; timed again" % (
                    unit, 100 * share), file=sys.stderr, flush=True)
            if last:
                return result, share

    # A fresh process has a small heap that glibc trims after each free, so
    # every timed layer step would page-fault its activations anew (at
    # micro-batch 16 some 1100-1300 faults a step; layers timed 4-9 % slow),
    # while the pipeline's stages, holding several micro-batches, run on a
    # grown heap. One untimed forward and backward of the whole stack at
    # the global batch grows it before anything is timed.
    x = torch.randn(args.global_batch, args.seq_len, args.width, requires_grad=True)
    y = x
    for layer in layers:
        y = layer(y)
    y.backward(torch.ones_like(y))
    del x, y
    for layer in layers:
        layer.zero_grad(set_to_none=True)

    # 1. The layer profile, every rank at once.
    def profile_layer(i, layer, b):
        fwd, bwd = [], []
        for it in range(args.warmup + args.iters):
            x = torch.randn(b, args.seq_len, args.width, requires_grad=True)
            dist.barrier()
            t0 = time.perf_counter()
            y = layer(x)
            t1 = time.perf_counter()
            y.backward(torch.ones_like(y))
            t2 = time.perf_counter()
            if it >= args.warmup:
                fwd.append(t1 - t0)
                bwd.append(t2 - t1)
        f, g = mean_over_ranks([sum(fwd) / len(fwd), sum(bwd) / len(bwd)])
        layer.zero_grad(set_to_none=True)
        out_bytes = b * args.seq_len * args.width * 4
        return "layer_%d,%d,%.9f,%.9f,,%d,%d" % (i, params[i], g, f, out_bytes, b)

    # Each layer at each size is its own unit, so a burst of other work
    # shows in the share of the one layer it slowed.
    rows = [guarded("profile layer_%d b=%d" % (i, b),
                    lambda i=i, layer=layer, b=b: profile_layer(i, layer, b))[0]
            for b in sizes for i, layer in enumerate(layers)]
    if rank == 0:
        write(os.path.join(args.out_dir, "profile.csv"),
              "# pipeline_train.py profile: %d layers, width %d, seq %d, torch %s, %d ranks\n"
              "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch\n"
              % (args.layers, args.width, args.seq_len, torch.__version__, world), rows)

    # 2. Send/receive between ranks 0 and 1 (others idle).
    def sendrecv_curve():
        return time_sendrecv(torch, dist, rank, args.warmup, 4 * args.iters)

    curve = guarded("sendrecv", sendrecv_curve)[0]
    if rank == 0:
        write(os.path.join(args.out_dir, "sendrecv.csv"),
              "backend,world_size,total_elements,total_bytes,average_time,stdev_time\n", curve)

    # 3. Pipeline steps.
    def step_time(schedule_class, m, split):
        # Model chunk g (of len(split)) runs on rank g mod world.
        mine = range(rank, len(split), world)
        mods = [nn.Sequential(*layers[sum(split[:g]):sum(split[:g + 1])]) for g in mine]
        # Shapes are inferred at the first step (torch >= 2.6).
        stages = [PipelineStage(mod, g, len(split), torch.device("cpu"))
                  for mod, g in zip(mods, mine)]
        loss = lambda out, target: nn.functional.mse_loss(out, target)  # noqa: E731
        if schedule_class is ScheduleInterleaved1F1B:
            schedule = schedule_class(stages, n_microbatches=m, loss_fn=loss)
        else:
            schedule = schedule_class(stages[0], n_microbatches=m, loss_fn=loss)
        x = torch.randn(args.global_batch, args.seq_len, args.width)
        target = torch.randn(args.global_batch, args.seq_len, args.width)
        times = []
        for it in range(args.warmup + args.iters):
            dist.barrier()
            t0 = time.perf_counter()
            one_step(schedule, rank, world, x, target)
            dist.barrier()
            if it >= args.warmup:
                times.append(time.perf_counter() - t0)
            for mod in mods:
                mod.zero_grad(set_to_none=True)
        return sum(times) / len(times)

    even = [args.layers // world + (1 if r < args.layers % world else 0) for r in range(world)]
    runs = []

    def timed_run(name, cls, m, split):
        label = "%s m=%d split %s" % (name, m, "-".join(map(str, split)))
        s, share = guarded(label, lambda: step_time(cls, m, split))
        runs.append("%d,%.3f,%s,%s,%s" % (m, args.global_batch / s, name,
                                          "-".join(map(str, split)),
                                          "" if share is None else "%.4f" % share))
        if rank == 0:
            print("%s: %.1f ms" % (label, s * 1e3), file=sys.stderr, flush=True)

    for name, cls in (("gpipe", ScheduleGPipe), ("1f1b", Schedule1F1B)):
        for m in args.microbatches:
            if cls is Schedule1F1B and m < world:
                continue  # torch's 1F1B needs at least one micro-batch per stage
            timed_run(name, cls, m, even)
    if args.chunks > 1:
        parts = world * args.chunks
        chunked = [args.layers // parts + (1 if g < args.layers % parts else 0)
                   for g in range(parts)]
        for m in args.microbatches:
            if m % world or m < world:
                continue  # Megatron's and torch's interleaved order: groups of `world`
            timed_run("interleaved", ScheduleInterleaved1F1B, m, chunked)
    timed_run("1f1b", Schedule1F1B, args.uneven_microbatches, args.uneven)
    if rank == 0:
        write(os.path.join(args.out_dir, "measured.csv"),
              "microbatches,throughput,schedule,split,others_cpu\n", runs)
        write(os.path.join(args.out_dir, "load.csv"), "unit,attempt,others_cpu,kept\n",
              load_rows)
    dist.destroy_process_group()


def one_step(schedule, rank, world, x, target):
    """One schedule step as this rank takes it: the first stage's rank feeds
    the batch, the last's the target (the losses kept), the others nothing."""
    if rank == 0:
        schedule.step(x)
    elif rank == world - 1:
        schedule.step(target=target, losses=[])
    else:
        schedule.step()


def write(path, header, rows):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(header + "".join(r + "\n" for r in rows))
    os.replace(tmp, path)


if __name__ == "__main__":
    run(parse_args(sys.argv[1:]))

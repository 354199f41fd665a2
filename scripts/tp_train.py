#!/usr/bin/env python3
"""Measure what `collbench-analyze plan` predicts, on the CPU with gloo: a
small GPT trained with tensor × pipeline × data parallelism.

Run under `torchrun --nproc-per-node 2`. The model is profile_layers.py's
GPT-2 (`--model`, untied head, no dropout), so the layer profiles
`profile_layers.py --tp K --untied-head` writes time exactly the modules
trained here. Each run of `--runs` is one configuration, written
`TPxPPxDP/M[/SCHEDULE]` (e.g. `2x1x1/1`, `1x2x1/4/1f1b`: degrees, then
micro-batches per step and replica):

- tensor parallelism: each rank holds its shard of every block
  (profile_layers.build_model with tp), and Megatron's two conjugate
  operators are real `dist.all_reduce` calls: `copy` (identity forward,
  all-reduce of the gradient in backward) before each column-parallel
  linear, `reduce` (all-reduce forward, identity backward) after each
  row-parallel one; both ranks see the same samples;
- pipeline parallelism: torch.distributed.pipelining, the blocks split
  equally, the embedding on the first stage and the final LayerNorm, head
  and loss on the last (Megatron's split), ScheduleGPipe or Schedule1F1B;
- data parallelism: DistributedDataParallel (25 MiB buckets,
  gradient_as_bucket_view), each rank its own samples, no_sync for all
  micro-batches but the last.

A step is the forward and backward of the global batch's micro-batches
(and the gradient reduction), from a barrier to a barrier; no optimizer
step (plan does not model it). After `--warmup` untimed steps, `--iters`
timed ones; the run's step time is their median. Written to
`--out-dir/measured.csv`:

    tp,pp,dp,microbatches,microbatch,schedule,step_s,steps_s,others_cpu

(`microbatch` samples per micro-batch; `steps_s` every timed step, `;`
between). With `--sendrecv` the job first times gloo send/receive between
the two ranks (half a ping-pong round trip) into `sendrecv.csv`, the
course CSV `collbench-analyze plan --sendrecv` reads.

With `--profile-sizes` and `--profile-tps` the job first profiles the
model as profile_layers.py does (its Profiler: forward and gradient-ready
times per layer group, activations, output bytes) at each tensor-parallel
degree and micro-batch size, in the same job as the runs so that the
machine's load drifts less between profile and steps: both ranks at once
(each iteration the slowest rank's) into `profile-intrain-tpK.csv`, and
rank 0 alone while rank 1 waits into `profile-intrain-alone-tpK.csv`.

Other processes slow these timings: each run (and the curve) is timed
again, up to `--retries` times, while other processes used more than
`--others-max` of the cores during it (pipeline_train.py's check, from
/proc); every attempt is in `load.csv` (`unit,attempt,others_cpu,kept`).

Only argument parsing and the pure helpers run without PyTorch.
"""
import argparse
import os
import statistics
import sys
import time

import profile_layers as pl
from pipeline_train import (machine_cpu_ticks, others_share, positive_int_list,
                            process_cpu_ticks, time_sendrecv)

SCHEDULES = ("gpipe", "1f1b")


def parse_run(text):
    """`TPxPPxDP/M[/SCHEDULE]` as a dict (tp, pp, dp, microbatches,
    schedule); the schedule is gpipe unless given, "-" without stages.
    Raises ValueError with what is accepted."""
    accepted = "runs are TPxPPxDP/M[/SCHEDULE], e.g. 2x1x1/1 or 1x2x1/4/1f1b"
    parts = text.strip().split("/")
    if len(parts) not in (2, 3):
        raise ValueError("%r: %s" % (text, accepted))
    degrees = parts[0].split("x")
    try:
        tp, pp, dp = (int(d) for d in degrees)
        m = int(parts[1])
    except ValueError:
        raise ValueError("%r: %s" % (text, accepted)) from None
    if min(tp, pp, dp, m) < 1:
        raise ValueError("%r: degrees and micro-batches are 1 or more (%s)" % (text, accepted))
    schedule = parts[2] if len(parts) == 3 else "gpipe"
    if schedule not in SCHEDULES:
        raise ValueError("%r: schedule %r is not one of %s" % (text, schedule, ", ".join(SCHEDULES)))
    if pp == 1:
        schedule = "-"
    return {"tp": tp, "pp": pp, "dp": dp, "microbatches": m, "schedule": schedule}


def check_run(run, world, global_batch, cfg):
    """Why `run` cannot be trained by this script at `world` ranks, or None."""
    tp, pp, dp, m = run["tp"], run["pp"], run["dp"], run["microbatches"]
    if tp * pp * dp != world:
        return "tp x pp x dp = %d, but the job has %d ranks" % (tp * pp * dp, world)
    if sorted((tp, pp, dp))[1] > 1:
        return "more than one degree above 1 (this script parallelises one axis at a time)"
    if global_batch % (dp * m):
        return "dp x micro-batches = %d does not divide --global-batch %d" % (dp * m, global_batch)
    if cfg.heads % tp or cfg.intermediate % tp:
        return "tp %d does not divide the %d heads and FFN %d" % (tp, cfg.heads, cfg.intermediate)
    if pp > 1 and cfg.layers % pp:
        return "pp %d does not divide the %d blocks" % (pp, cfg.layers)
    if run["schedule"] == "1f1b" and m < pp:
        return "1f1b needs at least one micro-batch per stage"
    return None


def median(values):
    return statistics.median(values)


def measured_row(run, global_batch, times, share):
    """One line of measured.csv."""
    microbatch = global_batch // (run["dp"] * run["microbatches"])
    return "%d,%d,%d,%d,%d,%s,%.6f,%s,%s" % (
        run["tp"], run["pp"], run["dp"], run["microbatches"], microbatch, run["schedule"],
        median(times), ";".join("%.6f" % t for t in times),
        "" if share is None else "%.4f" % share)


MEASURED_HEADER = "tp,pp,dp,microbatches,microbatch,schedule,step_s,steps_s,others_cpu\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="gpt2-mini", choices=sorted(
        n for n, c in pl.CONFIGS.items() if c.kind == "gpt2"), help="GPT-2 shape [gpt2-mini]")
    p.add_argument("--seq-len", type=pl.positive_int, default=128, help="tokens per sample [128]")
    p.add_argument("--global-batch", type=pl.positive_int, default=8,
                   help="samples per step over all replicas [8]")
    p.add_argument("--runs", default="2x1x1/1,1x2x1/1,1x2x1/2,1x2x1/4,1x1x2/1",
                   help="configurations, comma-separated TPxPPxDP/M[/SCHEDULE] "
                        "[2x1x1/1,1x2x1/1,1x2x1/2,1x2x1/4,1x1x2/1]")
    p.add_argument("--profile-sizes", type=positive_int_list, default=None,
                   help="micro-batch sizes to profile in this job, e.g. 2,4,8 [none]")
    p.add_argument("--profile-tps", type=positive_int_list, default=None,
                   help="tensor-parallel degrees to profile in this job, e.g. 1,2 [none]")
    p.add_argument("--sendrecv", action="store_true",
                   help="time the send/receive curve first (sendrecv.csv)")
    p.add_argument("--warmup", type=pl.non_negative_int, default=3, help="untimed steps [3]")
    p.add_argument("--iters", type=pl.positive_int, default=10, help="timed steps [10]")
    p.add_argument("--threads", type=pl.positive_int, default=1, help="torch threads per rank [1]")
    p.add_argument("--others-max", type=float, default=0.05,
                   help="share of all cores other processes may use during a run before it "
                        "is timed again [0.05]")
    p.add_argument("--retries", type=pl.non_negative_int, default=2,
                   help="times a disturbed run is timed again [2]")
    p.add_argument("--out-dir", required=True, help="folder for the CSVs")
    args = p.parse_args(argv)
    cfg = pl.CONFIGS[args.model]
    if (args.profile_sizes is None) != (args.profile_tps is None):
        p.error("--profile-sizes and --profile-tps go together (the profile's sizes and degrees)")
    for tp in args.profile_tps or []:
        try:
            pl.check_tp(cfg, tp)
        except ValueError as e:
            p.error("--profile-tps %d: %s" % (tp, e))
    if args.seq_len > cfg.positions:
        p.error("--seq-len %d: %s has %d positions" % (args.seq_len, args.model, cfg.positions))
    try:
        args.runs = [parse_run(r) for r in args.runs.split(",")]
    except ValueError as e:
        p.error("--runs %s" % e)
    world = os.environ.get("WORLD_SIZE", "")
    for run in args.runs:
        why = check_run(run, int(world) if world.isdigit() else
                        run["tp"] * run["pp"] * run["dp"], args.global_batch, cfg)
        if why:
            p.error("--runs %dx%dx%d/%d: %s" % (run["tp"], run["pp"], run["dp"],
                                                run["microbatches"], why))
    if not 0 <= args.others_max <= 1:
        p.error("--others-max %g is not a share of the cores between 0 and 1" % args.others_max)
    return args


# --------------------------------------------------------------------------
# torch from here on


def tp_operators(torch, dist, group):
    """Megatron's f (`copy`) and g (`reduce`) over `group`, as autograd
    functions, in an object profile_layers.build_model takes."""

    class Copy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            grad = grad.contiguous()
            dist.all_reduce(grad, group=group)
            return grad

    class Reduce(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x = x.contiguous()
            dist.all_reduce(x, group=group)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Operators:
        copy = staticmethod(Copy.apply)
        reduce = staticmethod(Reduce.apply)

    return Operators()


def loss_of(F, logits, tokens):
    """profile_layers' GPT-2 loss: next-token cross-entropy on the tokens."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten())


def run(args):
    import torch
    import torch.distributed as dist
    from torch import nn
    import torch.nn.functional as F

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(args.threads)
    cfg = pl.CONFIGS[args.model]
    os.makedirs(args.out_dir, exist_ok=True)

    job_stats = ["/proc/self/stat"] + (["/proc/%d/stat" % os.getppid()]
                                       if int(os.environ.get("LOCAL_RANK", rank)) == 0 else [])
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def ticks():
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
        """pipeline_train.py's check: `measure` (collective) again while
        other processes used more than --others-max of the cores."""
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
                share[0] = others_share(after[0] - before[0], own[0].item(), wall, after[1], hz)
            dist.broadcast(share, 0)
            share = None if own[1] > 0 else share.item()
            last = share is None or share <= args.others_max or attempt == args.retries
            load_rows.append("%s,%d,%s,%d" % (unit, attempt, "" if share is None else
                                              "%.4f" % share, 1 if last else 0))
            if rank == 0 and not last:
                print("%s: other processes used %.1f %% of the cores; timed again"
                      % (unit, 100 * share), file=sys.stderr, flush=True)
            if last:
                return result, share

    def sendrecv_curve():
        return time_sendrecv(torch, dist, rank, args.warmup, 4 * args.iters)

    if args.sendrecv:
        curve = guarded("sendrecv", sendrecv_curve)[0]
        if rank == 0:
            write(os.path.join(args.out_dir, "sendrecv.csv"),
                  "backend,world_size,total_elements,total_bytes,average_time,stdev_time\n",
                  curve)

    def tokens_for(seed, batch):
        return pl.random_tokens(torch, cfg, batch, args.seq_len, torch.device("cpu"), seed)

    def profile_rows(tp, b, together):
        """profile_layers' rows of the model at degree `tp` and size `b`:
        both ranks at once (`together`), or rank 0 alone while rank 1
        waits (None on rank 1)."""
        torch.manual_seed(0)
        model = pl.build_model(cfg, tied=False, tp=tp)
        pl.check_parameter_counts(model, cfg, False, tp)
        model.train()
        if not together and rank != 0:
            dist.barrier()
            return None
        tokens = tokens_for(1 + rank, b)
        profiler = pl.Profiler(torch, model, tokens, pl.Clock(torch, torch.device("cpu")),
                               "layer", world if together else 1)
        profiler.run(args.warmup, args.iters)
        rows = profiler.extended_rows(4, b, profiler.measure_activations())
        if not together:
            dist.barrier()
        return rows

    if args.profile_sizes:
        for together, prefix in ((True, "profile-intrain-tp"), (False, "profile-intrain-alone-tp")):
            for tp in args.profile_tps:
                rows = []
                for b in args.profile_sizes:
                    unit = "%s%d b=%d" % (prefix, tp, b)
                    rows += guarded(unit, lambda: profile_rows(tp, b, together))[0] or []
                if rank == 0:
                    comments = [
                        "collbench layer profile written by scripts/tp_train.py",
                        "model: %s, untied head, sequence %d, fp32, torch %s" % (
                            args.model, args.seq_len, torch.__version__),
                        "ranks: %s" % ("%d processes profiling at once, each iteration the "
                                       "slowest rank's" % world if together else
                                       "rank 0 alone while the other ranks wait"),
                        "iterations: %d warm-up, %d timed per size; means over the timed ones"
                        % (args.warmup, args.iters),
                        "tensor parallelism: tp %d, each block one rank's shard, timed "
                        "without its all-reduces; tp_allreduces 2 per block" % tp,
                    ]
                    pl.write_text_atomic(os.path.join(args.out_dir, "%s%d.csv" % (prefix, tp)),
                                         pl.format_profile(rows, comments, tp), True)

    def timed(step, zero):
        times = []
        for it in range(args.warmup + args.iters):
            zero()
            dist.barrier()
            t0 = time.perf_counter()
            step()
            dist.barrier()
            if it >= args.warmup:
                times.append(time.perf_counter() - t0)
        return times

    def run_flat(r):
        """tp or dp (or neither): every rank runs the whole step."""
        torch.manual_seed(0)
        comm = tp_operators(torch, dist, None) if r["tp"] > 1 else None
        model = pl.build_model(cfg, tied=False, tp=r["tp"], tp_comm=comm)
        pl.check_parameter_counts(model, cfg, False, r["tp"])
        model.train()
        m = r["microbatches"]
        per_replica = args.global_batch // r["dp"]
        # Tensor-parallel ranks see the same samples, replicas their own.
        tokens = tokens_for(1 + (rank if r["dp"] > 1 else 0), per_replica).chunk(m)
        if r["dp"] > 1:
            ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)
        else:
            ddp = model

        def step():
            for k, mb in enumerate(tokens):
                if r["dp"] > 1 and k < m - 1:
                    with ddp.no_sync():
                        (ddp(mb) / m).backward()
                else:
                    (ddp(mb) / m).backward()

        return timed(step, lambda: model.zero_grad(set_to_none=True))

    def run_pipeline(r):
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

        torch.manual_seed(0)
        model = pl.build_model(cfg, tied=False)
        per = cfg.layers // r["pp"]
        mine = list(model.blocks[rank * per:(rank + 1) * per])
        first, last = rank == 0, rank == world - 1

        class Stage(nn.Module):
            def __init__(self):
                super().__init__()
                if first:
                    self.wte, self.wpe = model.wte, model.wpe
                self.blocks = nn.ModuleList(mine)
                if last:
                    self.ln_f, self.lm_head = model.ln_f, model.lm_head

            def forward(self, x):
                if first:
                    x = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
                for block in self.blocks:
                    x = block(x)
                if last:
                    x = self.lm_head(self.ln_f(x))
                return x

        stage_module = Stage()
        stage = PipelineStage(stage_module, rank, world, torch.device("cpu"))
        cls = ScheduleGPipe if r["schedule"] == "gpipe" else Schedule1F1B
        schedule = cls(stage, n_microbatches=r["microbatches"],
                       loss_fn=lambda out, target: loss_of(F, out, target))
        tokens = tokens_for(1, args.global_batch)

        def step():
            if first:
                schedule.step(tokens)
            elif last:
                schedule.step(target=tokens, losses=[])
            else:
                schedule.step()

        return timed(step, lambda: stage_module.zero_grad(set_to_none=True))

    rows = []
    for r in args.runs:
        label = "%dx%dx%d/%d%s" % (r["tp"], r["pp"], r["dp"], r["microbatches"],
                                   "" if r["schedule"] == "-" else "/" + r["schedule"])
        measure = (lambda r=r: run_pipeline(r)) if r["pp"] > 1 else (lambda r=r: run_flat(r))
        times, share = guarded(label, measure)
        # Every rank's step is timed between the same barriers; rank 0's
        # times are the job's.
        rows.append(measured_row(r, args.global_batch, times, share))
        if rank == 0:
            print("%s: median %.1f ms (%s)" % (label, 1e3 * median(times),
                                               " ".join("%.1f" % (1e3 * t) for t in times)),
                  file=sys.stderr, flush=True)
    if rank == 0:
        write(os.path.join(args.out_dir, "measured.csv"), MEASURED_HEADER, rows)
        write(os.path.join(args.out_dir, "load.csv"), "unit,attempt,others_cpu,kept\n",
              load_rows)
    dist.destroy_process_group()


def write(path, header, rows):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(header + "".join(r + "\n" for r in rows))
    os.replace(tmp, path)


if __name__ == "__main__":
    run(parse_args(sys.argv[1:]))

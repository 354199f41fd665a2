#!/usr/bin/env python3
"""Records a training job's collectives as PyTorch traces them, per rank, for
`collbench-analyze trace` (and `collbench replay`).

Run under torchrun, one process per rank:

    torchrun --nproc-per-node 2 scripts/record_trace.py --backend gloo \\
        --strategy ddp --model gpt2-tiny --batch-size 2 --seq-len 64 \\
        --warmup 1 --iters 2 --out-dir traces/ddp

Trains scripts/profile_layers.py's transformer with one strategy, as
scripts/shard_train.py wraps it (`ddp`: DistributedDataParallel, `zero1`:
DDP with ZeroRedundancyOptimizer, `fsdp`: FSDP2 fully_shard per block), or
`pipeline`: a two-stage GPipe of the same blocks split in half, activations
and gradients sent with send/recv in --microbatches micro-batches. After
--warmup untimed steps, --iters steps run under torch.profiler
(record_shapes=True, which the reader needs for sizes on gloo) and the flight
recorder. Each rank writes to --out-dir:

- `kineto_rank<R>.json`: torch.profiler's Chrome trace (its metadata and
  collective events only, unless --full-trace);
- `flight_rank<R>.pkl` and `flight_rank<R>.json`: the flight recorder's dump
  (torch's `_dump_fr_trace` / `_dump_fr_trace_json` for the backend, without
  stack traces), holding every collective since the group was made;
- rank 0 also writes `torch-version.txt`.
"""

import argparse
import json
import os
import sys

import profile_layers as pl

STRATEGIES = ["ddp", "zero1", "fsdp", "pipeline"]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="record_trace.py",
        description="Record torch.profiler traces and flight-recorder dumps of a training "
        "job's collectives (run under torchrun).")
    parser.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    parser.add_argument("--strategy", choices=STRATEGIES, required=True)
    pl.add_model_arguments(parser)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0,
                        help="DDP's bucket_cap_mb [25]")
    parser.add_argument("--microbatches", type=pl.positive_int, default=4,
                        help="micro-batches per step of --strategy pipeline [4]")
    parser.add_argument("--full-trace", action="store_true",
                        help="keep every profiler event (by default the Chrome trace keeps its "
                        "metadata and the collectives' events only: c10d:: operators, "
                        "record_param_comms and the backend's annotations)")
    parser.add_argument("--out-dir", required=True, help="folder for the traces")
    parser.add_argument("--force", action="store_true",
                        help="overwrite traces already in --out-dir")
    args = parser.parse_args(argv)
    pl.check_model_arguments(parser, args, "cuda" if args.backend == "nccl" else "cpu")
    if args.strategy == "pipeline" and pl.CONFIGS[args.model].kind != "gpt2":
        parser.error("--strategy pipeline splits a GPT-2: --model %s is not one (accepted: gpt2-*)"
                     % args.model)
    if args.strategy == "pipeline" and args.batch_size % args.microbatches:
        parser.error("--batch-size %d is not a multiple of --microbatches %d"
                     % (args.batch_size, args.microbatches))
    return args


def pipeline_step(torch, dist, model, tokens, rank, microbatches):
    """One GPipe step of a GPT-2 over two ranks: rank 0 runs the embeddings
    and the first half of the blocks, rank 1 the rest, the final LayerNorm,
    the head and the loss; activations go forward and their gradients back
    with send/recv, one micro-batch at a time."""
    import torch.nn.functional as F

    half = len(model.blocks) // 2
    chunks = tokens.chunk(microbatches)
    if rank == 0:
        outs = []
        for chunk in chunks:
            positions = torch.arange(chunk.shape[1], device=chunk.device)
            x = model.wte(chunk) + model.wpe(positions)
            for block in model.blocks[:half]:
                x = block(x)
            dist.send(x.detach().contiguous(), 1)
            outs.append(x)
        for x in outs:
            grad = torch.empty_like(x)
            dist.recv(grad, 1)
            x.backward(grad)
    else:
        # All forwards, then all backwards: a stage's sends wait for the
        # other's receives, so interleaving them would deadlock.
        pending = []
        for chunk in chunks:
            x = torch.empty(chunk.shape[0], chunk.shape[1], model.wte.weight.shape[1],
                            dtype=model.wte.weight.dtype, device=chunk.device)
            dist.recv(x, 0)
            x.requires_grad_(True)
            h = x
            for block in model.blocks[half:]:
                h = block(h)
            logits = model.lm_head(model.ln_f(h))
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), chunk[:, 1:].flatten())
            pending.append((x, loss))
        for x, loss in pending:
            loss.backward()
            dist.send(x.grad.contiguous(), 0)


def is_kept(event):
    """Whether an event is one `collbench-analyze trace` reads, or metadata."""
    name = event.get("name", "")
    return (event.get("ph") == "M"
            or name == "record_param_comms"
            or "Collective name" in event.get("args", {})
            or name.startswith("c10d::")
            or (event.get("cat", "").endswith("user_annotation")
                and name.split(":")[0] in ("gloo", "nccl", "mpi", "ucc", "xccl")))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "20000")
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    import shard_train
    import torch_world

    device, rank, world = torch_world.join(torch, "record_trace.py", args.backend, args.threads)
    os.makedirs(args.out_dir, exist_ok=True)
    names = ["kineto_rank%d.json" % rank, "flight_rank%d.pkl" % rank, "flight_rank%d.json" % rank]
    paths = [os.path.join(args.out_dir, n) for n in names]
    if not args.force:
        for path in paths:
            if os.path.exists(path):
                raise SystemExit("record_trace.py: %s already exists (pass --force)" % path)
    if args.strategy == "pipeline" and world != 2:
        raise SystemExit("record_trace.py: --strategy pipeline runs on 2 ranks, not %d" % world)

    torch.manual_seed(args.seed)
    cfg = pl.CONFIGS[args.model]
    model = pl.build_model(cfg, not args.untied_head).to(device=device,
                                                        dtype=pl.torch_dtype(torch, args.dtype))
    model.train()
    # The pipeline's two stages see the same batch; data parallelism one per rank.
    seed = args.seed if args.strategy == "pipeline" else args.seed + rank
    tokens = pl.random_tokens(torch, cfg, args.batch_size, args.seq_len, device, seed)
    if args.strategy == "pipeline":
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)

        def step():
            pipeline_step(torch, dist, model, tokens, rank, args.microbatches)
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        wrapped, opt = shard_train.wrap(torch, args.strategy, model, device, args)

        def step():
            wrapped(tokens).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    dist.barrier()
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, record_shapes=True) as prof:
        for _ in range(args.iters):
            step()
        dist.barrier()
    prof.export_chrome_trace(paths[0])
    # No machine paths in what is kept: the trace's own name is its file's.
    with open(paths[0]) as f:
        trace = json.load(f)
    trace["traceName"] = names[0]
    if not args.full_trace:
        trace["traceEvents"] = [e for e in trace["traceEvents"] if is_kept(e)]
    with open(paths[0], "w") as f:
        json.dump(trace, f)
    c10d = torch._C._distributed_c10d
    with open(paths[1], "wb") as f:
        f.write(c10d._dump_fr_trace(includeStackTraces=False, backend=args.backend))
    with open(paths[2], "wb") as f:
        f.write(c10d._dump_fr_trace_json(backend=args.backend))
    if rank == 0:
        with open(os.path.join(args.out_dir, "torch-version.txt"), "w") as f:
            f.write("torch %s\nbackend %s, %d ranks\ncommand: record_trace.py %s\n"
                    % (torch.__version__, args.backend, world, " ".join(sys.argv[1:])))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

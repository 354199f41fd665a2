#!/usr/bin/env python3
"""Measure each layer group's gradient time in a transformer's backward pass.

Builds GPT-2 (small, medium, large, xl) or BERT-base from configurations
written below (plain torch.nn modules, nothing downloaded), runs warm-up and
then timed forward/backward passes on random tokens, and times the backward
pass group by group from autograd hooks: CUDA events on a GPU, a monotonic
clock on the CPU. Writes the layer profile `collbench-analyze ddp --profile`
reads:

    # provenance comment lines (model, device, torch, date, arguments)
    name,params,grad_time_s,dtype_bytes
    embedding,39383808,0.0012,4
    block_0,7087872,0.0041,4
    ...

With `--granularity layer` (the default) the profile also has the columns
the sharded and pipeline models read (`collbench-analyze fsdp`, `zero`):

    name,params,grad_time_s,dtype_bytes,fwd_time_s,activation_bytes,output_bytes,microbatch,bwd_transient_bytes,param_tensors

`fwd_time_s` is the mean time from the group's input being ready in forward
to its output (the next group's input; the loss for the last group);
`activation_bytes` what the group's autograd nodes save for backward in one
untimed forward pass (each tensor storage counted once, in the group that
first saves it; parameters left out); `output_bytes` the group's output
tensor (empty for the last group, whose output is the loss); `microbatch`
the batch size it was measured at. `bwd_transient_bytes` is, on CUDA, the
most memory allocated during the group's backward interval (the same
interval as its `grad_time_s`; the first, from the start of backward, is
the last group's, where the loss's gradient lives) above the larger of the
allocated levels at the interval's start and end, from one untimed
backward pass (torch.cuda.max_memory_allocated, its peak reset at every
group boundary): what backward holds there beyond saved activations and
gradients, such as the gradient over the vocabulary. On the CPU torch
keeps no allocator statistics and the column is empty. `param_tensors` is
how many parameter tensors the group holds (ZeroRedundancyOptimizer
broadcasts each on its own). Per-parameter rows leave the six empty.

Rows are in parameter registration (forward) order. `grad_time_s` of a group
is the mean time from the previous group's gradients being ready (in backward
order; for the first, from the start of backward) to its own, so the column
sums to the backward compute time and its prefix sums, taken backwards, are
the moments DDP sees gradients become ready. A group is ready when the
gradient of its input activation and of all its own parameters exist.

GPT-2 ties the LM head to the token embedding (as the original does): the
tied weight belongs to `embedding`, where it is registered, and becomes ready
last; the `lm_head` row keeps its compute time with 0 parameters of its own.
`--untied-head` gives the head its own weight. BERT-base carries a masked-LM
head (transform + LayerNorm + decoder bias, decoder tied to the word
embedding) and no pooler, whose parameters would get no gradient. Dropout is
left out: it changes little and makes runs less repeatable.

With `--tp K` the transformer blocks are the rank-local shard at
tensor-parallel degree K, as Megatron-LM splits them: heads/K attention
heads and FFN hidden/K, the QKV and first MLP linear column-parallel, the
output projections row-parallel (their bias whole); one process times its
shard with no communication (the trainer, scripts/tp_train.py, builds the
same shard with real all-reduces). The embedding, final LayerNorm and head
stay whole (replicated on every rank of the group). Two columns follow
the others: `tp` (K) and `tp_allreduces` (2 for a block: one after its
attention and one after its MLP in forward, as many in backward; 0 for the
replicated rows), which `collbench-analyze plan --profile` reads; `params`
is one rank's shard. `--tp 1` is the whole model with the two columns.

With `--granularity param` each row is one parameter instead (DDP buckets
parameters, so this is the finer, exact input to the model).

Under `torchrun --nproc-per-node N` every rank profiles its own copy of the
model at the same time (a barrier starts each iteration on all ranks, no
gradients are exchanged), and each iteration's ready times are the slowest
rank's, as DDP's all-reduces wait for the slowest rank. Rank 0 writes the
profile. Use this on CPUs: ranks that share a machine share its cores,
caches, memory bandwidth and clock boost, so one process profiled alone on
an idle machine computes faster than each rank of the DDP job does. With
`--device cuda`, rank r uses GPU LOCAL_RANK.

Only the pure helpers at the top run without PyTorch; torch is imported when
the model is built, so CI can byte-compile and unit-test this file without it.

Example (the GPU profile committed under results/profiles/):
    python3 scripts/profile_layers.py --model gpt2-large --batch-size 4 \\
        --seq-len 1024 --dtype fp32 --device cuda -o gpt2-large.csv
"""

import argparse
import datetime
import os
import platform
import sys
import time
from dataclasses import dataclass

# --------------------------------------------------------------------------
# Pure helpers (no torch)


@dataclass(frozen=True)
class ModelConfig:
    """A transformer's shape. `kind` is "gpt2" (pre-LayerNorm decoder with a
    final LayerNorm) or "bert" (post-LayerNorm encoder with an MLM head)."""

    kind: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    positions: int
    intermediate: int
    token_types: int = 0


# Shapes from the GPT-2 paper/release (vocabulary 50257, context 1024) and
# BERT-base (vocabulary 30522 of the uncased model, 512 positions, 2 token
# types). `gpt2-tiny` is for smoke tests only.
CONFIGS = {
    "gpt2-tiny": ModelConfig("gpt2", 2, 64, 2, 1000, 128, 256),
    # Small enough to train on two CPU cores (the sharding validation).
    "gpt2-mini": ModelConfig("gpt2", 4, 256, 4, 8192, 256, 1024),
    "gpt2-small": ModelConfig("gpt2", 12, 768, 12, 50257, 1024, 3072),
    "gpt2-medium": ModelConfig("gpt2", 24, 1024, 16, 50257, 1024, 4096),
    "gpt2-large": ModelConfig("gpt2", 36, 1280, 20, 50257, 1024, 5120),
    "gpt2-xl": ModelConfig("gpt2", 48, 1600, 25, 50257, 1024, 6400),
    "bert-base": ModelConfig("bert", 12, 768, 12, 30522, 512, 3072, 2),
}

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def expected_group_params(cfg, tied=True, tp=1):
    """(group name, parameter count) in registration order, from the shapes
    alone; the built model is checked against it. At tensor-parallel degree
    `tp` a block holds one rank's shard: the column-parallel linears (QKV,
    the MLP's first) a 1/tp slice of their weight and bias, the row-parallel
    ones (the two output projections) a 1/tp slice of their weight and the
    whole bias; LayerNorms whole."""
    check_tp(cfg, tp)
    d, inner = cfg.hidden, cfg.intermediate
    # LayerNorm: weight + bias. Linear(a, b): a*b + b.
    layer_norm = 2 * d
    attention = (d * 3 * d // tp + 3 * d // tp) + (d // tp * d + d)
    mlp = (d * inner // tp + inner // tp) + (inner // tp * d + d)
    block = 2 * layer_norm + attention + mlp
    groups = []
    if cfg.kind == "gpt2":
        groups.append(("embedding", cfg.vocab * d + cfg.positions * d))
        groups += [("block_%d" % i, block) for i in range(cfg.layers)]
        groups.append(("ln_f", layer_norm))
        groups.append(("lm_head", 0 if tied else cfg.vocab * d))
    elif cfg.kind == "bert":
        embedding = (cfg.vocab + cfg.positions + cfg.token_types) * d + layer_norm
        groups.append(("embedding", embedding))
        groups += [("block_%d" % i, block) for i in range(cfg.layers)]
        head = (d * d + d) + layer_norm + cfg.vocab + (0 if tied else cfg.vocab * d)
        groups.append(("head", head))
    else:
        raise ValueError("unknown model kind %r" % cfg.kind)
    return groups


def check_tp(cfg, tp):
    """Raises ValueError unless degree `tp` splits `cfg`'s heads and FFN
    hidden size into equal whole shards."""
    if tp < 1 or cfg.heads % tp or cfg.intermediate % tp:
        raise ValueError("tensor-parallel degree %d does not divide the %d heads and the FFN "
                         "hidden size %d into equal shards" % (tp, cfg.heads, cfg.intermediate))


def tp_columns(names, tp):
    """Per row of `names` (layer groups), the (tp, tp_allreduces) pair:
    2 all-reduces for a transformer block (`block_N`: after its attention
    and after its MLP, in forward, and as many in backward), 0 for the
    replicated rows (embedding, final LayerNorm, head)."""
    return [(tp, 2 if name.startswith("block_") else 0) for name in names]


def ready_deltas(done_s):
    """Per-item gradient times from the moments items became ready.

    `done_s` holds, in registration order, each item's ready time in seconds
    after the start of backward. Backward visits items in reverse order; an
    item's time is how long after the previous item (in backward order) it
    became ready, never negative (an item that finished early counts as
    ready together with its predecessor). Returns times in registration
    order; they sum to the last ready time."""
    deltas = [0.0] * len(done_s)
    previous = 0.0
    for i in reversed(range(len(done_s))):
        ready = max(done_s[i], previous)
        deltas[i] = ready - previous
        previous = ready
    return deltas


def backward_transients(items, start_level, events):
    """Per-item transient bytes of one backward pass, from the allocator's
    levels recorded at every gradient-ready hook.

    `events` are the hook calls in the order they ran, each (item,
    allocated bytes then, most bytes allocated since the previous call or,
    for the first, since backward started at `start_level`). As in
    ready_deltas, an item is ready at its last call but never before the
    item after it (registration order); its interval runs from the
    previous ready moment in backward order (the start of backward for the
    first) to its own, and an item with no call of its own has an empty
    one. An item's transient is the highest peak within its interval above
    the larger of the levels at the interval's start and end, never
    negative; 0 for an empty interval. Returns registration order."""
    last = [-1] * items
    for k, (item, _, _) in enumerate(events):
        last[item] = k
    transients = [0] * items
    previous = -1  # the previous ready moment's event; -1: the start of backward
    for i in reversed(range(items)):
        ready = max(last[i], previous)
        if ready > previous:
            start = start_level if previous < 0 else events[previous][1]
            peak = max(peak for _, _, peak in events[previous + 1:ready + 1])
            transients[i] = max(0, peak - max(start, events[ready][1]))
        previous = ready
    return transients


def mean(values):
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


EXTRA_COLUMNS = ("fwd_time_s", "activation_bytes", "output_bytes", "microbatch",
                 "bwd_transient_bytes", "param_tensors")
TP_COLUMNS = ("tp", "tp_allreduces")


def format_profile(rows, comments, tp=None):
    """The profile CSV text. `rows` are (name, params, grad_time_s,
    dtype_bytes), optionally followed by the EXTRA_COLUMNS (None for an
    empty field, as are the ones a row leaves off; written when any row has
    them); `comments` become `# ` lines before the header. With `tp` (the
    degree the rows were measured at) the TP_COLUMNS follow the EXTRA_COLUMNS
    (which are then written, empty where a row has none), from tp_columns."""
    if tp is not None and any(len(r) <= 4 for r in rows):
        raise ValueError("the tp columns need the layer columns (fwd_time_s, output_bytes...) "
                         "of every row: profile with --granularity layer")
    extended = any(len(r) > 4 for r in rows)
    lines = ["# " + c for c in comments]
    lines.append(",".join(("name", "params", "grad_time_s", "dtype_bytes")
                          + (EXTRA_COLUMNS if extended else ())
                          + (TP_COLUMNS if tp is not None else ())))
    tp_values = tp_columns([r[0] for r in rows], tp) if tp is not None else None
    for k, row in enumerate(rows):
        name, params, seconds, dtype_bytes = row[:4]
        if "," in name or '"' in name or "\n" in name:
            raise ValueError("layer name %r cannot be written unquoted" % name)
        line = "%s,%d,%.9g,%d" % (name, params, seconds, dtype_bytes)
        if extended:
            width = len(EXTRA_COLUMNS)
            extra = (tuple(row[4:]) + (None,) * width)[:width]
            line += "".join("," + ("" if v is None else
                                   "%.9g" % v if isinstance(v, float) else "%d" % v)
                            for v in extra)
        if tp_values is not None:
            line += ",%d,%d" % tp_values[k]
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_text_atomic(path, text, force):
    """Writes `text` to `path` through a temporary file and a rename; refuses
    to replace an existing file unless `force`."""
    if os.path.exists(path) and not force:
        raise FileExistsError("%s already exists (pass --force to overwrite it)" % path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def whole_number_at_least(text, low, rule):
    """`text` as an int of at least `low`; `rule` says what is accepted."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text)
    if value < low:
        raise argparse.ArgumentTypeError("%r %s" % (text, rule))
    return value


def positive_int(text):
    return whole_number_at_least(text, 1, "must be at least 1")


def non_negative_int(text):
    return whole_number_at_least(text, 0, "must not be negative")


def add_model_arguments(parser):
    """The model flags shared with ddp_bucket_sweep.py."""
    parser.add_argument("--model", required=True, choices=sorted(CONFIGS),
                        help="model to build (gpt2-tiny is for smoke tests)")
    parser.add_argument("--batch-size", type=positive_int, default=4,
                        help="sequences per step (per process) [4]")
    parser.add_argument("--seq-len", type=positive_int, default=1024,
                        help="tokens per sequence (at most the model's positions) [1024]")
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="fp32",
                        help="parameter and activation type [fp32]")
    parser.add_argument("--untied-head", action="store_true",
                        help="give the LM head its own weight instead of the embedding's")
    parser.add_argument("--warmup", type=non_negative_int, default=3,
                        help="untimed iterations first [3]")
    parser.add_argument("--iters", type=positive_int, default=10,
                        help="timed iterations [10]")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="CPU threads for torch (torch.set_num_threads) [torch's default]")
    parser.add_argument("--seed", type=int, default=0, help="random seed [0]")


def check_model_arguments(parser, args, device_type):
    """Errors that depend on several flags."""
    cfg = CONFIGS[args.model]
    if args.seq_len > cfg.positions:
        parser.error("--seq-len %d: %s has %d positions" % (args.seq_len, args.model, cfg.positions))
    if device_type == "cpu" and args.dtype == "fp16":
        parser.error("--dtype fp16 is not supported on the CPU; use bf16 or fp32")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="profile_layers.py",
        description="Measure per-layer-group gradient times of GPT-2 / BERT-base "
        "and write the layer profile CSV of `collbench-analyze ddp --profile`.",
    )
    add_model_arguments(parser)
    parser.add_argument("--device", default="cuda",
                        help="cuda, cuda:N or cpu [cuda]")
    parser.add_argument("--granularity", choices=["layer", "param"], default="layer",
                        help="one row per layer group or per parameter [layer]")
    parser.add_argument("--tp", type=positive_int, default=None,
                        help="time the rank-local shard of each block at this tensor-parallel "
                        "degree and write the tp and tp_allreduces columns "
                        "(`collbench-analyze plan`); 1: the whole model [no tp columns]")
    parser.add_argument("-o", "--out", required=True, help="profile CSV to write")
    parser.add_argument("--force", action="store_true", help="overwrite --out")
    args = parser.parse_args(argv)
    device_type = args.device.split(":")[0]
    if device_type not in ("cuda", "cpu"):
        parser.error("--device %r: expected cuda, cuda:N or cpu" % args.device)
    check_model_arguments(parser, args, device_type)
    if args.tp is not None:
        if args.granularity != "layer":
            parser.error("--tp %d needs --granularity layer (the tp columns are per layer group)"
                         % args.tp)
        try:
            check_tp(CONFIGS[args.model], args.tp)
        except ValueError as e:
            parser.error("--tp %d: %s of %s" % (args.tp, e, args.model))
    if os.path.exists(args.out) and not args.force:
        parser.error("--out %s already exists (pass --force to overwrite it)" % args.out)
    return args


# --------------------------------------------------------------------------
# The models (torch from here on)


def torch_dtype(torch, name):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def build_model(cfg, tied=True, tp=1, tp_comm=None):
    """A GPT-2 or BERT-base `nn.Module` with `.groups()` -> [(name, [modules])]
    in registration order and `forward(tokens, mark=None) -> loss`. `mark(g,
    x)`, when given, is called with the input activation of every group g > 0.

    At tensor-parallel degree `tp` each block is one rank's shard (Megatron's
    split, see expected_group_params). `tp_comm`, when given, supplies
    Megatron's two conjugate operators as functions of a tensor: `copy(x)`
    (identity forward, all-reduce of the gradient in backward; at the input
    of each column-parallel linear) and `reduce(x)` (all-reduce forward,
    identity backward; at the output of each row-parallel one, before its
    bias). Without it both are the identity: the shard's compute alone."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    check_tp(cfg, tp)
    copy = tp_comm.copy if tp_comm else (lambda x: x)
    reduce = tp_comm.reduce if tp_comm else (lambda x: x)

    class RowParallelLinear(nn.Module):
        """Linear(inputs, outputs) holding 1/tp of the inputs' columns of the
        weight and the whole bias, added once after the reduction."""

        def __init__(self, inputs, outputs):
            super().__init__()
            part = nn.Linear(inputs // tp, outputs)
            self.weight, self.bias = part.weight, part.bias

        def forward(self, x):
            if tp == 1:  # nothing to reduce: the fused linear, as nn.Linear
                return F.linear(x, self.weight, self.bias)
            return reduce(F.linear(x, self.weight)) + self.bias

    class Attention(nn.Module):
        def __init__(self, causal):
            super().__init__()
            self.causal = causal
            # Column-parallel: this rank's heads' Q, K and V.
            self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden // tp)
            self.proj = RowParallelLinear(cfg.hidden, cfg.hidden)

        def forward(self, x):
            b, t, _ = x.shape
            h, d = cfg.heads // tp, cfg.hidden // tp
            q, k, v = self.qkv(copy(x)).split(d, dim=2)
            q, k, v = (y.view(b, t, h, d // h).transpose(1, 2) for y in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

    class Mlp(nn.Module):
        def __init__(self, approximate):
            super().__init__()
            self.fc = nn.Linear(cfg.hidden, cfg.intermediate // tp)
            self.proj = RowParallelLinear(cfg.intermediate, cfg.hidden)
            self.approximate = approximate

        def forward(self, x):
            return self.proj(F.gelu(self.fc(copy(x)), approximate=self.approximate))

    class GptBlock(nn.Module):
        # Pre-LayerNorm, as GPT-2.
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.hidden)
            self.attn = Attention(causal=True)
            self.ln_2 = nn.LayerNorm(cfg.hidden)
            self.mlp = Mlp("tanh")

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class BertBlock(nn.Module):
        # Post-LayerNorm, as BERT.
        def __init__(self):
            super().__init__()
            self.attn = Attention(causal=False)
            self.ln_1 = nn.LayerNorm(cfg.hidden)
            self.mlp = Mlp("none")
            self.ln_2 = nn.LayerNorm(cfg.hidden)

        def forward(self, x):
            x = self.ln_1(x + self.attn(x))
            return self.ln_2(x + self.mlp(x))

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
            self.wpe = nn.Embedding(cfg.positions, cfg.hidden)
            self.blocks = nn.ModuleList(GptBlock() for _ in range(cfg.layers))
            self.ln_f = nn.LayerNorm(cfg.hidden)
            self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
            if tied:
                self.lm_head.weight = self.wte.weight

        def groups(self):
            return ([("embedding", [self.wte, self.wpe])]
                    + [("block_%d" % i, [b]) for i, b in enumerate(self.blocks)]
                    + [("ln_f", [self.ln_f]), ("lm_head", [self.lm_head])])

        def forward(self, tokens, mark=None):
            mark = mark or (lambda g, x: None)
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.wte(tokens) + self.wpe(positions)
            for i, block in enumerate(self.blocks):
                mark(1 + i, x)
                x = block(x)
            mark(1 + len(self.blocks), x)
            x = self.ln_f(x)
            mark(2 + len(self.blocks), x)
            logits = self.lm_head(x)
            # Next-token loss on the same random tokens (shifted by one).
            return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten())

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(cfg.vocab, cfg.hidden)
            self.position = nn.Embedding(cfg.positions, cfg.hidden)
            self.token_type = nn.Embedding(cfg.token_types, cfg.hidden)
            self.ln_embedding = nn.LayerNorm(cfg.hidden)
            self.blocks = nn.ModuleList(BertBlock() for _ in range(cfg.layers))
            self.transform = nn.Linear(cfg.hidden, cfg.hidden)
            self.ln_head = nn.LayerNorm(cfg.hidden)
            self.decoder = nn.Linear(cfg.hidden, cfg.vocab)
            if tied:
                self.decoder.weight = self.word.weight

        def groups(self):
            return ([("embedding", [self.word, self.position, self.token_type, self.ln_embedding])]
                    + [("block_%d" % i, [b]) for i, b in enumerate(self.blocks)]
                    + [("head", [self.transform, self.ln_head, self.decoder])])

        def forward(self, tokens, mark=None):
            mark = mark or (lambda g, x: None)
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            types = torch.zeros_like(tokens)
            x = self.word(tokens) + self.position(positions) + self.token_type(types)
            x = self.ln_embedding(x)
            for i, block in enumerate(self.blocks):
                mark(1 + i, x)
                x = block(x)
            mark(1 + len(self.blocks), x)
            x = self.ln_head(F.gelu(self.transform(x)))
            logits = self.decoder(x)
            # Masked-LM loss, predicting every position (no masking: the
            # compute is the same as predicting a masked subset of them).
            return F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())

    return Gpt2() if cfg.kind == "gpt2" else Bert()


def group_parameters(model):
    """[(name, [parameters])] in registration order, each parameter in the
    first group that registers it (so a tied weight counts once)."""
    seen = set()
    groups = []
    for name, modules in model.groups():
        own = []
        for module in modules:
            for p in module.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    own.append(p)
        groups.append((name, own))
    return groups


def check_parameter_counts(model, cfg, tied, tp=1):
    """The built model must have the parameters the formula says."""
    got = [(name, sum(p.numel() for p in params)) for name, params in group_parameters(model)]
    want = expected_group_params(cfg, tied, tp)
    if got != want:
        raise RuntimeError("built model's parameter counts %r differ from the formula %r" % (got, want))
    registered = sum(p.numel() for p in model.parameters())
    if registered != sum(n for _, n in want):
        raise RuntimeError("model.parameters() holds %d parameters, groups %d"
                           % (registered, sum(n for _, n in want)))


def random_tokens(torch, cfg, batch, seq_len, device, seed):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, cfg.vocab, (batch, seq_len), generator=generator)
    return tokens.to(device)


# --------------------------------------------------------------------------
# Timing


class Clock:
    """Marks moments on the device's timeline: CUDA events recorded on the
    current stream, or the monotonic clock on the CPU."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, start, end):
        """Seconds from mark `start` to mark `end` (after `sync()`)."""
        if self.cuda:
            return start.elapsed_time(end) / 1e3
        return end - start

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def add_ready_hook(param, callback):
    """Calls `callback()` once the parameter's gradient is accumulated
    (torch >= 2.1), or when it is computed on older releases."""
    if hasattr(param, "register_post_accumulate_grad_hook"):
        return param.register_post_accumulate_grad_hook(lambda p: callback())
    return param.register_hook(lambda grad: callback())


def ready_times_slowest_rank(torch, values, world):
    """The element-wise maximum of `values` (floats) over the `world` ranks of
    the default process group; `values` itself for a process alone. The
    tensor lives where the group's backend reduces: the current GPU for
    nccl (which has no CPU tensors), the CPU otherwise."""
    if world <= 1:
        return values
    import torch.distributed as dist

    on_gpu = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else None
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def start_ranks(torch, args):
    """Under torchrun (WORLD_SIZE set): joins a gloo process group, used only
    to start iterations together and take the slowest rank's times, and
    returns (rank, world size, device); otherwise (0, 1, --device)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, torch.device(args.device)
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(args.device)
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.set_device(device)
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size(), device


def barrier(world):
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


class Profiler:
    """Times each item's gradient-ready moment in a model's backward pass:
    one row per layer group (`granularity` "layer") or per parameter
    ("param"). `run(iters)` records `iters` iterations; `rows(dtype_bytes)`
    gives the profile rows from all iterations recorded so far."""

    def __init__(self, torch, model, tokens, clock, granularity, world):
        self.torch, self.model, self.tokens, self.clock = torch, model, tokens, clock
        self.granularity, self.world = granularity, world
        groups = group_parameters(model)
        if granularity == "layer":
            self.items = [(name, sum(p.numel() for p in params)) for name, params in groups]
            self.tensors = [len(params) for _, params in groups]
            owner = {id(p): g for g, (_, params) in enumerate(groups) for p in params}
        else:
            names = {id(p): n for n, p in model.named_parameters()}
            params = [p for _, ps in groups for p in ps]
            self.items = [(names[id(p)], p.numel()) for p in params]
            self.tensors = [1] * len(params)
            owner = {id(p): i for i, p in enumerate(params)}
        self.owner = owner
        self.marks = {}  # item index -> list of clock marks of this iteration
        self.forward_s, self.backward_s, self.per_item = [], [], []
        # Layer groups only: clock marks where each group's forward starts
        # (this iteration), each timed iteration's forward time per group,
        # and each group's output bytes (the next group's input).
        self.forward_marks = {}
        self.per_item_forward = []
        self.output_bytes = {}
        self.copy_s = None  # see measure_gradient_copy
        # measure_sync_wait's samples, pooled over its calls: the slowest
        # rank's plain and synced steps, and one-element all-reduces alone.
        self.sync = {"plain_s": [], "synced_s": [], "syncs": 0, "all_reduce_s": []}
        # Whether the DDP runs this profile serves use gradient_as_bucket_view
        # (None: not known; the header then gives both forms of the flag).
        self.bucket_view = None

    def measure_gradient_copy(self, iters=5):
        """Times copying every gradient once, parameter by parameter, into
        one flat buffer: what DDP does when each gradient is ready (into its
        bucket) and again after the last all-reduce (back into .grad), unless
        gradient_as_bucket_view=True. All ranks at once; keeps the median of
        the slowest rank's times in `copy_s`."""
        torch, clock = self.torch, self.clock
        params = list(self.model.parameters())
        sizes = [p.numel() for p in params]
        src = torch.ones(sum(sizes), dtype=params[0].dtype, device=params[0].device)
        dst = torch.empty_like(src)
        times = []
        for it in range(1 + iters):
            clock.sync()
            barrier(self.world)
            start = clock.mark()
            offset = 0
            for n in sizes:
                dst[offset:offset + n].copy_(src[offset:offset + n])
                offset += n
            end = clock.mark()
            clock.sync()
            if it:
                times.append(ready_times_slowest_rank(torch, [clock.seconds(start, end)],
                                                      self.world)[0])
        self.copy_s = sorted(times)[len(times) // 2]

    def measure_sync_wait(self, pairs=10, warmup=2):
        """What a blocking collective at each block boundary costs beyond
        its own transfer: the time ranks wait for each other, having
        drifted apart since they last met. FSDP2 on the CPU meets there
        (its all-gather before each block's forward and backward, its
        reduce-scatter after the backward, all blocking calls). Times
        whole steps of the plain model without and with a one-element
        all-reduce at each of those points, in alternating pairs, every
        step started on all ranks at once and kept as the slowest rank's;
        then the one-element all-reduce alone, back to back. Pools the
        samples in `sync` (see sync_wait). Only with two or more ranks on
        the CPU: on a GPU the collectives do not block the training
        thread this way."""
        torch = self.torch
        blocks = getattr(self.model, "blocks", None)
        if self.world < 2 or self.clock.cuda or not blocks:
            return
        import torch.distributed as dist

        one = torch.zeros(1)
        synced = {"on": False, "count": 0}

        def meet(*_):
            if synced["on"]:
                dist.all_reduce(one)
                synced["count"] += 1

        hooks = []
        for block in blocks:
            hooks += [block.register_forward_pre_hook(meet),
                      block.register_full_backward_pre_hook(meet),
                      block.register_full_backward_hook(meet)]

        def step(with_syncs):
            synced["on"], synced["count"] = with_syncs, 0
            barrier(self.world)
            start = time.perf_counter()
            self.model(self.tokens).backward()
            self.model.zero_grad(set_to_none=True)
            return ready_times_slowest_rank(torch, [time.perf_counter() - start], self.world)[0]

        try:
            for it in range(warmup + pairs):
                plain, with_syncs = step(False), step(True)
                if it >= warmup:
                    self.sync["plain_s"].append(plain)
                    self.sync["synced_s"].append(with_syncs)
                    self.sync["syncs"] = synced["count"]
        finally:
            synced["on"] = False
            for h in hooks:
                h.remove()
        calls = 100
        barrier(self.world)
        start = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(one)
        self.sync["all_reduce_s"].append(
            ready_times_slowest_rank(torch, [time.perf_counter() - start], self.world)[0] / calls)

    def _record(self, item):
        self.marks.setdefault(item, []).append(self.clock.mark())

    def _mark_input(self, group, x):
        if self.granularity != "layer":
            return
        # Group `group` starts its forward here, on the output of the one before.
        self.forward_marks[group] = self.clock.mark()
        self.output_bytes[group - 1] = x.numel() * x.element_size()
        # The gradient of a group's input exists once the group's backward is done.
        if x.requires_grad:
            x.register_hook(lambda grad: self._record(group))

    def measure_activations(self):
        """Bytes each layer group saves for backward, from one untimed
        forward pass: every tensor autograd saves, by storage (a storage
        saved twice, or a view of one saved before, counts once, in the
        group that saved it first), parameters left out."""
        torch, model = self.torch, self.model
        param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
        seen = set()
        saved = [0] * len(self.items)
        current = [0]

        def pack(t):
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key not in seen and key not in param_storages:
                seen.add(key)
                saved[current[0]] += storage.nbytes()
            return t

        def mark(group, x):
            current[0] = group
            self._mark_input(group, x)

        model.zero_grad(set_to_none=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = model(self.tokens, mark)
        del loss
        self.forward_marks.clear()
        return saved

    def measure_backward_transients(self):
        """Per layer group, the bytes its backward interval holds above the
        levels at the interval's two ends (backward_transients), from one
        untimed forward and backward pass on CUDA; None on the CPU, where
        torch keeps no allocator statistics, and per parameter."""
        if not self.clock.cuda or self.granularity != "layer":
            return None
        torch, model, cuda = self.torch, self.model, self.torch.cuda
        device = self.tokens.device
        events = []

        def record(item):
            # The caching allocator counts a tensor's bytes when the host
            # allocates or frees it (the stream orders reuse; nothing waits
            # for kernels), and keeps its peak on the host too, so reading
            # and resetting them in a hook needs no synchronisation: they
            # are the levels of the work issued so far.
            events.append((item, cuda.memory_allocated(device),
                           cuda.max_memory_allocated(device)))
            cuda.reset_peak_memory_stats(device)

        def mark(group, x):
            # A group is also ready once its input's gradient exists.
            if x.requires_grad:
                x.register_hook(lambda grad: record(group))

        hooks = [add_ready_hook(p, (lambda i: lambda: record(i))(self.owner[id(p)]))
                 for p in model.parameters()]
        try:
            model.zero_grad(set_to_none=True)
            loss = model(self.tokens, mark)
            start = cuda.memory_allocated(device)
            cuda.reset_peak_memory_stats(device)
            loss.backward()
            del loss
        finally:
            for h in hooks:
                h.remove()
        model.zero_grad(set_to_none=True)
        return backward_transients(len(self.items), start, events)

    def run(self, warmup, iters):
        """`warmup` untimed, then `iters` timed iterations, every one started
        on all ranks at once; each timed one keeps the slowest rank's times."""
        model, clock, items = self.model, self.clock, self.items
        hooks = [add_ready_hook(p, (lambda i: lambda: self._record(i))(self.owner[id(p)]))
                 for p in model.parameters()]
        try:
            for it in range(warmup + iters):
                model.zero_grad(set_to_none=True)
                self.marks.clear()
                self.forward_marks.clear()
                clock.sync()
                barrier(self.world)
                start = clock.mark()
                loss = model(self.tokens, self._mark_input)
                middle = clock.mark()
                loss.backward()
                end = clock.mark()
                clock.sync()
                if it < warmup:
                    continue
                missing = [items[i][0] for i in range(len(items))
                           if i not in self.marks and items[i][1] > 0]
                if missing:
                    raise RuntimeError("no gradient-ready time for %s" % ", ".join(missing))
                done = [max((clock.seconds(middle, m) for m in self.marks.get(i, [])), default=0.0)
                        for i in range(len(items))]
                # Each group's forward: from its start to the next group's
                # (the first from the pass's start, the last to the loss).
                forward = []
                if self.granularity == "layer":
                    bounds = ([start] + [self.forward_marks[g] for g in range(1, len(items))]
                              + [middle])
                    forward = [clock.seconds(a, b) for a, b in zip(bounds, bounds[1:])]
                # The slowest rank's times (this rank's own when profiling alone).
                slowest = ready_times_slowest_rank(
                    self.torch,
                    [clock.seconds(start, middle), clock.seconds(middle, end)] + done + forward,
                    self.world)
                self.forward_s.append(slowest[0])
                self.backward_s.append(slowest[1])
                self.per_item.append(ready_deltas(slowest[2:2 + len(items)]))
                if forward:
                    self.per_item_forward.append(slowest[2 + len(items):])
        finally:
            for h in hooks:
                h.remove()

    def rows(self, dtype_bytes):
        return [(name, params, mean(it[i] for it in self.per_item), dtype_bytes)
                for i, (name, params) in enumerate(self.items)]

    def extended_rows(self, dtype_bytes, microbatch, activations, transients=None):
        """`rows` with the EXTRA_COLUMNS; per-parameter rows leave them
        empty. `activations`: measure_activations()'s bytes, or None;
        `transients`: measure_backward_transients()'s, or None."""
        if self.granularity != "layer" or not self.per_item_forward:
            return self.rows(dtype_bytes)
        return [row + (mean(it[i] for it in self.per_item_forward),
                       activations[i] if activations else None,
                       self.output_bytes.get(i), microbatch,
                       transients[i] if transients is not None else None,
                       self.tensors[i])
                for i, row in enumerate(self.rows(dtype_bytes))]


def profile_comments(torch, args, cfg, tied, profiler, rows, device, world, script, how):
    """The provenance header of a profile CSV. `how` is the line saying how
    the iterations were run."""
    if device.type == "cuda":
        device_name = torch.cuda.get_device_name(device)
    else:
        device_name = "%s cpu, %d torch threads" % (platform.machine(), torch.get_num_threads())
    return [
        "collbench layer profile written by scripts/%s" % script,
        "model: %s (%s; layers %d, hidden %d, heads %d, vocab %d, %s head), %d parameters"
        % (args.model, cfg.kind, cfg.layers, cfg.hidden, cfg.heads, cfg.vocab,
           "tied" if tied else "untied", sum(n for _, n in profiler.items)),
        "input: batch %d x sequence %d, %s, random tokens (seed %d)"
        % (args.batch_size, args.seq_len, args.dtype, args.seed),
        "device: %s (%s); torch %s; python %s"
        % (device, device_name, torch.__version__, platform.python_version()),
        "date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "arguments: %s" % " ".join(sys.argv[1:]),
        "iterations: %s; means over the timed ones" % how,
        "ranks: %s" % ("1 process, alone" if world == 1 else
                       "%d processes profiling at once (torchrun), each iteration the slowest rank's times"
                       % world),
        "forward_s mean %.6g; backward_s mean %.6g; sum of grad_time_s %.6g"
        % (mean(profiler.forward_s), mean(profiler.backward_s), sum(r[2] for r in rows)),
        "grad_time_s: time from the previous row's gradients being ready (backward order) to this row's",
    ] + ([] if profiler.copy_s is None
         else [gradient_copy_comment(rows, profiler.copy_s, profiler.bucket_view)]) + (
        [] if not profiler.sync["plain_s"] else [sync_wait_comment(profiler.sync)])


def sync_wait(sync):
    """The wait per blocking call from measure_sync_wait's samples: what
    the syncs add to a step beyond their own all-reduces, per sync,
    (synced - plain - syncs x all-reduce) / syncs, from the means. May be
    negative when the drift is below the noise."""
    n = sync["syncs"]
    return (mean(sync["synced_s"]) - mean(sync["plain_s"]) - n * mean(sync["all_reduce_s"])) / n


def sync_wait_comment(sync):
    """The header line giving the measured wait per blocking call, with
    the numbers it comes from and the flag that passes it to the model."""
    wait = sync_wait(sync)
    return ("sync wait: %.6g s per blocking call (steps of the plain model with %d syncs at "
            "block boundaries, before each block's forward and before and after its "
            "backward: %.6g s against %.6g s without, %d pairs, the slowest rank's; "
            "%.6g s each one-element all-reduce alone): collbench-analyze fsdp "
            "--comm-streams blocking --sync-wait-s %.4g"
            % (wait, sync["syncs"], mean(sync["synced_s"]), mean(sync["plain_s"]),
               len(sync["plain_s"]), mean(sync["all_reduce_s"]), max(wait, 0.0)))


def gradient_copy_comment(rows, copy_s, bucket_view=None):
    """The header line giving the measured gradient copy speed, and the
    flags that pass it to the model: for DDP runs with
    gradient_as_bucket_view (`bucket_view` True), without (False), or both
    forms when not known (None)."""
    nbytes = sum(row[1] * row[3] for row in rows)
    gbps = nbytes / copy_s / 1e9
    flag = "--grad-copy-gbps %.4g" % gbps
    if bucket_view is None:
        model = ("collbench-analyze ddp %s (add --grad-as-bucket-view for runs with "
                 "gradient_as_bucket_view=True)" % flag)
    elif bucket_view:
        model = "collbench-analyze ddp %s --grad-as-bucket-view" % flag
    else:
        model = "collbench-analyze ddp %s" % flag
    return ("gradient copy: %d bytes in %.6g s, %.4g GB/s (every rank at once); DDP scales "
            "gradients into its buckets and copies them back unless "
            "gradient_as_bucket_view=True: %s" % (nbytes, copy_s, gbps, model))


def profile(args):
    import torch

    rank, world, device = start_ranks(torch, args)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("profile_layers.py: --device %s but torch sees no CUDA device" % args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = CONFIGS[args.model]
    tied = not args.untied_head
    tp = args.tp or 1
    model = build_model(cfg, tied, tp)
    check_parameter_counts(model, cfg, tied, tp)
    model = model.to(device=device, dtype=torch_dtype(torch, args.dtype))
    model.train()
    # Every rank gets different tokens, as in data-parallel training.
    tokens = random_tokens(torch, cfg, args.batch_size, args.seq_len, device, args.seed + rank)
    profiler = Profiler(torch, model, tokens, Clock(torch, device), args.granularity, world)
    profiler.run(args.warmup, args.iters)
    profiler.measure_gradient_copy()
    profiler.measure_sync_wait()
    activations = profiler.measure_activations() if args.granularity == "layer" else None
    rows = profiler.extended_rows(DTYPE_BYTES[args.dtype], args.batch_size, activations,
                                  profiler.measure_backward_transients())
    comments = profile_comments(torch, args, cfg, tied, profiler, rows, device, world,
                                "profile_layers.py",
                                "%d warm-up, %d timed" % (args.warmup, args.iters))
    if args.tp is not None:
        comments.append("tensor parallelism: tp %d, each block one rank's shard (heads/%d, FFN "
                        "hidden/%d; QKV and the MLP's first linear column-parallel, output "
                        "projections row-parallel) timed without its all-reduces; embedding, "
                        "final LayerNorm and head whole; tp_allreduces 2 per block"
                        % (tp, tp, tp))
    return format_profile(rows, comments, args.tp)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    text = profile(args)
    if os.environ.get("RANK", "0") == "0":
        write_text_atomic(args.out, text, args.force)
        print("profile_layers.py: wrote %s" % args.out)
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

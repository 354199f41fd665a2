#!/usr/bin/env python3
"""Write SYNTHETIC collbench reports of NCCL-like collective curves, for
examples and tests of the models (`collbench-analyze plan`, `predict`);
they are not measurements, and each says so in its `tool.name`.

Each curve is t(S) = alpha + S * factor / busbw (the bus-bandwidth factor
of the collective: 2(n-1)/n for all-reduce, (n-1)/n for all-gather and
reduce-scatter, 1 for send/receive), at every power of two from 8 B to
1 GiB, with alpha and busbw per layout: inside one node (NVLink-like) or
across nodes (NIC-bound), alpha growing with the ranks.

    python3 scripts/synthetic_curves.py OUTDIR [--gpus-per-node 8]
        [--intra-gbps 360] [--inter-gbps 45] [--alpha-us 8] [--hop-us 6]

writes OUTDIR/{all_reduce,all_gather,reduce_scatter}-{N}r{K}n.json for one
node of every power of two up to --gpus-per-node ranks and for 2 nodes of
--gpus-per-node ranks, and sendrecv-2r1n.json and sendrecv-2r2n.json.
"""
import argparse
import json
import math
import os

FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}


def curve(collective, ranks, nodes, args):
    """(bytes, time in us) at every power of two from 8 B to 1 GiB."""
    inter = nodes > 1
    busbw = args.inter_gbps if inter else args.intra_gbps
    steps = max(1, ranks - 1)
    alpha = args.alpha_us + args.hop_us * math.log2(max(2, ranks)) + (20.0 if inter else 0.0)
    if collective == "sendrecv":
        alpha = args.alpha_us + (10.0 if inter else 0.0)
        steps = 1
    rows = []
    for k in range(3, 31):
        size = 1 << k
        seconds = alpha * 1e-6 + size * FACTOR[collective](ranks) / (busbw * 1e9)
        rows.append((size, seconds * 1e6, steps))
    return rows


def report(collective, ranks, nodes, args):
    """One collbench report (schema version 1) of the curve."""
    results = []
    for size, us, _ in curve(collective, ranks, nodes, args):
        algbw = size / (us * 1e-6) / 1e9
        results.append({
            "collective": collective, "placement": "out", "dtype": "f32",
            "op": "sum" if collective in ("all_reduce", "reduce_scatter") else None,
            "root": None, "bytes": size, "count": size // 4, "chunk_bytes": None,
            "chunks": None,
            "time_us": {"mean": round(us, 3), "min": None, "p50": None, "p95": None,
                        "p99": None, "max": None, "stddev": None},
            "wall_time_us": None, "algbw_gbps": round(algbw, 6),
            "busbw_gbps": round(algbw * FACTOR[collective](ranks), 6), "per_rank": [],
            "skew_us": None, "slowest_rank": None, "iteration_max_us": None,
            "samples_us": None, "wrong_elements": None,
        })
    return {
        "schema_version": 1,
        "tool": {
            "name": f"synthetic: NCCL-like {collective} curve, {ranks} ranks on {nodes} node(s) "
                    f"(scripts/synthetic_curves.py), not a measurement",
            "version": None, "git_commit": None, "git_dirty": None, "rustc": None,
            "profile": None, "features": [],
        },
        "run": {"started_at": None, "finished_at": None, "argv": [], "status": "complete",
                "error": None},
        "config": {"benchmark": collective, "backend": "nccl", "dtype": "f32",
                   "op": None, "root": None, "placements": ["out"], "timing": "events",
                   "warmup_iters": None, "iters": None, "check_iters": None, "blocking": None},
        "environment": {"world_size": ranks, "nodes": nodes, "nccl_version": None,
                        "cuda_driver_version": None, "mpi_library": None, "ranks": [],
                        "env": {}},
        "results": results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--intra-gbps", type=float, default=360.0)
    parser.add_argument("--inter-gbps", type=float, default=45.0)
    parser.add_argument("--alpha-us", type=float, default=8.0)
    parser.add_argument("--hop-us", type=float, default=6.0)
    args = parser.parse_args()
    if args.gpus_per_node < 2 or args.gpus_per_node & (args.gpus_per_node - 1):
        parser.error(f"--gpus-per-node {args.gpus_per_node}: give a power of two, 2 or more")
    os.makedirs(args.outdir, exist_ok=True)
    layouts = []
    n = 2
    while n <= args.gpus_per_node:
        layouts.append((n, 1))
        n *= 2
    layouts.append((2 * args.gpus_per_node, 2))
    written = []
    for collective in ("all_reduce", "all_gather", "reduce_scatter"):
        for ranks, nodes in layouts:
            written.append((collective, ranks, nodes))
    written += [("sendrecv", 2, 1), ("sendrecv", 2, 2)]
    for collective, ranks, nodes in written:
        path = os.path.join(args.outdir, f"{collective}-{ranks}r{nodes}n.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(report(collective, ranks, nodes, args), out)
            out.write("\n")
    print(f"wrote {len(written)} synthetic reports to {args.outdir}")


if __name__ == "__main__":
    main()

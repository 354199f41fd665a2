"""Joining the torchrun process group the benchmark scripts share: the
device for a backend, torch's thread count, and the rank and world size."""

import os
import sys


def join(torch, script, backend, threads):
    """Under torchrun: sets `threads` torch threads (when given), picks the
    device (GPU LOCAL_RANK for nccl, the CPU for gloo), joins the `backend`
    process group and returns (device, rank, world size). `script` names
    the caller in errors."""
    import torch.distributed as dist

    if "RANK" not in os.environ:
        raise SystemExit("%s: run me under torchrun (RANK is not set)" % script)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if threads:
        torch.set_num_threads(threads)
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise SystemExit("%s: --backend nccl but torch sees no CUDA device" % script)
        gpus = torch.cuda.device_count()
        device = torch.device("cuda", local_rank % gpus)
        torch.cuda.set_device(device)
        share_gpus(os.environ, int(os.environ.get("LOCAL_WORLD_SIZE", "1")), gpus, script)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    return device, dist.get_rank(), dist.get_world_size()


def share_gpus(env, local_ranks, gpus, script):
    """More ranks on this node than GPUs: NCCL refuses two ranks of one
    communicator on one GPU of one host, and accepts them as separate
    hosts, so each rank gets its own NCCL_HOSTID (as scripts/gpu-smoke.sh
    does for collbench); NCCL then talks over its network transport, slowly.
    Memory per rank stays what it would be; step times do not (the ranks
    share the GPU's compute). Returns whether it did anything."""
    if local_ranks <= gpus or "NCCL_HOSTID" in env:
        return False
    env["NCCL_HOSTID"] = "%s-rank-%s" % (env.get("HOSTNAME", "host"), env.get("RANK", "0"))
    if env.get("LOCAL_RANK", "0") == "0":
        print("%s: %d ranks share %d GPU(s): each rank its own NCCL_HOSTID; step times "
              "include the ranks' contention for the GPU" % (script, local_ranks, gpus),
              file=sys.stderr)
    return True

"""Joining the torchrun process group the benchmark scripts share: the
device for a backend, torch's thread count, and the rank and world size."""

import os


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
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    return device, dist.get_rank(), dist.get_world_size()

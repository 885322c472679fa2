"""The device and process group of a run, from the environment.

``torchrun --nproc_per_node K`` sets ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``; with K > 1 this
joins the process group (NCCL on CUDA, gloo on CPU) and training runs DistributedDataParallel.
On CUDA the forward passes run under bf16 autocast, attention through fused SDPA kernels.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from spt_theory.training.runtime import Runtime
from spt_theory.util.files import InputError

DEVICES = ("auto", "cpu", "cuda")


def runtime_from_env(device: str = "auto") -> Runtime:
    """The :class:`~spt_theory.training.runtime.Runtime` of this process; joins the process group if any."""
    if device not in DEVICES:
        raise InputError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is available to this torch build")
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if cuda:
        target = torch.device("cuda", local_rank)
        torch.cuda.set_device(target)
    else:
        target = torch.device("cpu")
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    return Runtime(target, autocast=cuda, rank=rank, world_size=world_size)


def shutdown() -> None:
    """Leave the process group (if one was joined)."""
    if dist.is_initialized():
        dist.destroy_process_group()

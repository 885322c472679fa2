"""Where a stage computes: the device, bf16 autocast and data parallelism (:class:`Runtime`)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn


@dataclass(frozen=True)
class Runtime:
    """Where :func:`train_stage` computes.  The default (one CPU process, fp32) is the plain loop.

    ``autocast``: forward passes under bf16 autocast (CUDA).  ``world_size`` > 1: this process is
    rank ``rank`` of a data-parallel group (``torch.distributed`` already initialised).
    """

    device: torch.device = torch.device("cpu")
    autocast: bool = False
    rank: int = 0
    world_size: int = 1

    @property
    def main(self) -> bool:
        """Whether this process writes files and shows progress."""
        return self.rank == 0

    def autocast_context(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16) if self.autocast else nullcontext()

    def shard(self, index: torch.Tensor) -> torch.Tensor:
        """This rank's share of a global batch, by DistributedSampler's rule: wrap around to a
        multiple of ``world_size``, then every ``world_size``-th index starting at ``rank``."""
        if self.world_size == 1:
            return index
        padded = len(index) + (-len(index) % self.world_size)
        return index[torch.arange(padded) % len(index)][self.rank::self.world_size]

    def wrap(self, module: nn.Module) -> nn.Module:
        """``module`` under DistributedDataParallel when data-parallel (gradients averaged over ranks)."""
        if self.world_size == 1:
            return module
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids, broadcast_buffers=False)

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over ranks (``value`` itself in one process)."""
        if self.world_size == 1:
            return value
        total = value.clone()
        dist.all_reduce(total)
        return total / self.world_size

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

"""The benchmark's cases (:class:`BenchSize` and the named sizes) and its FLOP model
(:func:`forward_flops`, :func:`train_step_flops`), which the escape race and the GPU script also count with."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import torch

from spt_theory.core.model import ModelConfig
from spt_theory.training.loop import epoch_batches
from synthetic.listops import sample_trees, tree_length

BF16_DENSE_PEAK_TFLOPS = {"H200": 989.0, "A100": 312.0}
"""Dense (no sparsity) bf16 Tensor Core peaks by device-name substring.  H200: NVIDIA H200 Tensor
Core GPU datasheet, "BF16 Tensor Core 1,979 TFLOPS" (SXM, quoted with sparsity) / 2; A100: NVIDIA
A100 datasheet, "BF16 Tensor Core 312 TFLOPS" (dense)."""


def forward_flops(n: int, d_model: int, d_ff: int, layers: int = 1, out_per_token: int = 0) -> float:
    """Matmul FLOPs of one sequence's forward pass at length ``n``: per layer the Q, K, V and
    output projections 2 n 4 d^2, the MLP 2 n 2 d d_ff, QK^T and AV 2 * 2 n^2 d (summed over
    heads); plus a per-token output layer of ``out_per_token`` features (the SPT decoder)."""
    d = d_model
    return float(layers * (2 * n * (4 * d * d + 2 * d * d_ff) + 4 * n * n * d) + 2 * n * d * out_per_token)


def train_step_flops(widths, d_model: int, d_ff: int, layers: int = 1, out_per_token: int = 0) -> float:
    """FLOPs of one training step over sequences of (padded) lengths ``widths``: backward is
    twice the forward, so 3x :func:`forward_flops` per sequence."""
    return 3.0 * sum(forward_flops(n, d_model, d_ff, layers, out_per_token) for n in widths)


def listops_lengths(count: int, min_len: int, max_len: int, seed: int = 0) -> list[int]:
    """Lengths of ``count`` ListOps trees (``min_len < length < max_len``) from the generator."""
    trees = itertools.islice(sample_trees(random.Random(seed), min_len, max_len), count)
    return [tree_length(tree) for tree in trees]


@dataclass(frozen=True)
class BenchSize:
    name: str
    n: int
    d_model: int
    n_heads: int
    d_ff: int
    batch: int
    vocab: int = 16
    layers: int = 1
    min_len: int | None = None
    """Variable lengths: ListOps trees with ``min_len < length < n``, padded per batch to its
    longest, padded keys masked (None: every sequence ``n`` long, no mask)."""
    batches: int = 1
    """Batches one pass cycles through (one length-sorted bucket cut into batches)."""
    classes: int = 2

    @property
    def masked(self) -> bool:
        return self.min_len is not None

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab_size=self.vocab + 1, recon_classes=self.vocab, max_len=self.n,
                           d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff, n_layers=self.layers,
                           n_classes=self.classes)

    def lengths(self, seed: int = 0) -> torch.Tensor:
        """Real lengths of the ``batch * batches`` sequences of a pass."""
        count = self.batch * self.batches
        if self.min_len is None:  # not masked
            return torch.full((count,), self.n, dtype=torch.int64)
        return torch.tensor(listops_lengths(count, self.min_len, self.n, seed))

    def pass_indices(self, lengths: torch.Tensor, seed: int = 0) -> list[torch.Tensor]:
        """The batches of a pass: one length-sorted bucket when lengths vary, as training cuts them."""
        generator = torch.Generator().manual_seed(seed)
        return epoch_batches(len(lengths), self.batch, generator, lengths if self.masked else None)

    def widths(self, seed: int = 0) -> list[int]:
        """Padded width of each batch of a pass."""
        lengths = self.lengths(seed)
        return [int(lengths[index].max()) for index in self.pass_indices(lengths, seed)]

    def step_flops(self, out_per_token: int = 0, widths: list[int] | None = None) -> float:
        """Matmul FLOPs of one forward + backward training step, the mean over a pass's batches."""
        widths = self.widths() if widths is None else widths
        steps = [train_step_flops([w] * self.batch, self.d_model, self.d_ff, self.layers, out_per_token)
                 for w in widths]
        return sum(steps) / len(steps)


SYNTHETIC = BenchSize("synthetic", n=100, d_model=64, n_heads=4, d_ff=256, batch=256)
LRA_LIKE = BenchSize("lra_like", n=1024, d_model=128, n_heads=4, d_ff=512, batch=16)
LRA_MASKED = BenchSize("lra_masked", n=500, min_len=125, d_model=128, n_heads=4, d_ff=512, batch=16,
                       batches=4, vocab=16, classes=10)
"""ListOps-like on the CPU: lengths 125-500 (ListOps' 500-2000 / 4), width 128."""
LISTOPS_GPU = BenchSize("listops", n=2000, min_len=500, d_model=512, n_heads=8, d_ff=2048, batch=32,
                        batches=8, vocab=16, classes=10)
PATHFINDER_GPU = BenchSize("pathfinder", n=1024, d_model=128, n_heads=8, d_ff=128, batch=32, batches=4,
                           vocab=256, classes=2)
LISTOPS_TINY = BenchSize("listops", n=40, min_len=5, d_model=16, n_heads=2, d_ff=32, batch=4, batches=2,
                         vocab=16, classes=10)
PATHFINDER_TINY = BenchSize("pathfinder", n=1024, d_model=16, n_heads=2, d_ff=32, batch=2, batches=1,
                            vocab=256, classes=2)
LRA_SIZES = {"cpu": (LRA_MASKED,), "cuda": (LISTOPS_GPU, PATHFINDER_GPU), "tiny": (LISTOPS_TINY, PATHFINDER_TINY)}
"""The ``--lra`` cases by device (``tiny``: the GPU script's CPU test sizes, shapes as its runs)."""

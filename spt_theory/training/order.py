"""What a stage draws from its seed: the stage seeds of a run (:func:`stage_seed`), the keyed
generators of its batch order and masks (:func:`keyed_generator`), and the batches of an epoch
(:func:`epoch_batches`, with length bucketing); :func:`spt_theory.training.loop.train_stage` reads them."""

from __future__ import annotations

import torch

STAGES_PER_SEED = 1000
"""Stage seeds per run seed: a run's stages never share a seed with another run's (stages < 1000)."""


def stage_seed(seed: int, stage: int = 0) -> int:
    """The seed of stage ``stage`` (0, 1, ...) of a run seeded ``seed``: ``seed * 1000 + stage``,
    the one rule every runner uses (walk runs, the LRA runner, the plateau grid, the GPU ensembles);
    what :func:`~spt_theory.training.loop.train_stage` draws a stage's init, batch order and masks from.

    >>> stage_seed(3), stage_seed(3, 1)
    (3000, 3001)
    """
    return seed * STAGES_PER_SEED + stage


def keyed_generator(*keys: int) -> torch.Generator:
    """A torch generator seeded by a hash of ``keys`` (e.g. seed, stream, epoch): the batch order
    of an epoch is ``keyed_generator(seed, 1, epoch)``, the masks of a step ``keyed_generator(seed, 2, step)``."""
    seed = 0
    for key in keys:
        seed = (seed * 1_000_003 + key) % (2**63 - 1)
    return torch.Generator().manual_seed(seed)


BUCKET_BATCHES = 50
"""Batches per length bucket (:func:`epoch_batches`)."""


def epoch_batches(n: int, batch_size: int, generator: torch.Generator,
                  lengths: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The batches of one epoch over examples 0..n-1, each example exactly once.

    Without ``lengths``: consecutive slices of a random permutation.  With ``lengths`` (length
    bucketing): the permutation is cut into buckets of ``BUCKET_BATCHES * batch_size`` examples,
    each bucket is sorted by length (stable) and sliced into batches, and the batches are put in
    a random order; a batch then holds examples of similar length, so cutting it to its longest
    leaves little padding.  Both draw only from ``generator``, and both give ceil(n / batch_size)
    batches.
    """
    order = torch.randperm(n, generator=generator)
    if lengths is None:
        return list(order.split(batch_size))
    batches = []
    for bucket in order.split(BUCKET_BATCHES * batch_size):
        batches += bucket[torch.argsort(lengths[bucket], stable=True)].split(batch_size)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]

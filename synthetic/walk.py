"""The walk-direction task: a binary label carried by the joint law of neighbouring tokens.

Every single (token, position) pair has the same law in both classes (each ``x_i`` is uniform,
lemma T7), so no mean-pooled per-token feature differs in class mean; the classes differ in the joint
law of pairs ``(x_i, x_j)`` at small ``|i - j|`` (and hence in nonlinear statistics of the bag of
(token, position) pairs, claim E1b).

Vocabulary ``V`` tokens, length ``n``, label ``y`` uniform in {0, 1}, step ``s = +1`` if ``y = 1``
and ``s = -1`` if ``y = 0``.  ``x_0`` is uniform; for ``i >= 1``, with probability ``p`` the walk
steps, ``x_i = x_{i-1} + s (mod V)``, otherwise ``x_i`` is a fresh uniform token.  Hence

    P(x | y) = (1/V) * prod_{i=1}^{n-1} [ p * 1{x_i = x_{i-1} + s (mod V)} + (1 - p) / V ].

Reversing a class-1 sequence gives a class-0 sequence of the same probability, so the token
histogram carries no information about ``y`` (lemma T6, ``proofs/T6_bag_invariance.md``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import overload

import torch

MAX_LENGTH = 4096
"""The longest walk a run may ask for: attention over n positions holds batch x heads x n^2 scores
(n = 4096, batch 64, 4 heads: 17 GB in float32); longer is refused before anything is allocated."""


def check_walk(vocab: int, length: int, p: float) -> None:
    """ValueError unless ``vocab >= 2``, ``2 <= length <= MAX_LENGTH`` and ``0 <= p <= 1``."""
    if vocab < 2:
        raise ValueError(f"vocab must be >= 2, got {vocab}")
    if not 2 <= length <= MAX_LENGTH:
        raise ValueError(f"length must be >= 2 and <= {MAX_LENGTH} (the limit: the attention of one batch "
                         f"grows as length^2), got {length}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")


@dataclass(frozen=True)
class WalkData:
    """The walk-direction data set (the design's defaults): task parameters ``vocab`` (V),
    ``length`` (n), ``p``, and split sizes.  The training split is drawn with seed
    ``2 data_seed``, the test split with ``2 data_seed + 1``.  Its fields enter the cache keys of
    every walk run (:func:`spt_theory.walk.experiments.stage_key`): never rename one."""

    vocab: int = 16
    length: int = 100
    p: float = 0.5
    n_train: int = 8000
    n_test: int = 2000
    data_seed: int = 0

    def __post_init__(self):
        check_walk(self.vocab, self.length, self.p)

    def splits(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x_train, y_train, x_test, y_test)``."""
        x_tr, y_tr = generate_walk(self.vocab, self.length, self.p, self.n_train, 2 * self.data_seed)
        x_te, y_te = generate_walk(self.vocab, self.length, self.p, self.n_test, 2 * self.data_seed + 1)
        return x_tr, y_tr, x_te, y_te


@dataclass(frozen=True)
class PretrainData:
    """Another sequence source for SPT (claim X5); finetuning still uses the walk task.

    ``source``: ``walk`` (the walk generator, step probability ``p``, one direction per sequence),
    ``symmetric`` (with probability ``p`` step by +1 or -1, drawn independently at every step: no
    direction to learn, but the same local correlations) or ``uniform`` (i.i.d. uniform tokens: no
    neighbour structure at all, the negative control of X5).  ``permutation_seed``: relabel every
    token by one fixed random permutation of 0..V-1 (token neighbourhoods scrambled, positions
    kept).  ``shuffle_positions``: permute the positions of every sequence independently (token
    counts kept, neighbour structure destroyed: the second negative control).  The sequences use
    their own seeds (``data_seed``), distinct from the walk data's.  Its fields enter the cache keys
    of the X5 runs: never rename one.
    """

    source: str = "walk"
    vocab: int = 16
    length: int = 100
    p: float = 0.5
    n_train: int = 8000
    data_seed: int = 7
    permutation_seed: int | None = None
    shuffle_positions: bool = False

    def __post_init__(self):
        if self.source not in ("walk", "symmetric", "uniform"):
            raise ValueError(f"source must be 'walk', 'symmetric' or 'uniform', got {self.source!r}")

    def sequences(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, y)``: ``n_train`` sequences of the source (``y`` is meaningless for SPT)."""
        gen_seed = 1000 + 2 * self.data_seed
        if self.source == "walk":
            x, y = generate_walk(self.vocab, self.length, self.p, self.n_train, gen_seed)
        elif self.source == "symmetric":
            x, y = symmetric_walk(self.vocab, self.length, self.p, self.n_train, gen_seed)
        else:  # p = 0: every token fresh, i.e. i.i.d. uniform
            x, y = generate_walk(self.vocab, self.length, 0.0, self.n_train, gen_seed)
        if self.permutation_seed is not None:
            perm = torch.randperm(self.vocab, generator=torch.Generator().manual_seed(self.permutation_seed))
            x = perm[x]
        if self.shuffle_positions:
            order = torch.rand(x.shape, generator=torch.Generator().manual_seed(gen_seed + 1)).argsort(dim=1)
            x = x.gather(1, order)
        return x, y


def generate_walk(vocab: int, length: int, p: float, size: int, seed: int,
                  labels: torch.Tensor | None = None, leak: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``size`` sequences of the walk-direction task, vectorised over the batch.

    Returns ``(x, y)``: ``x`` int64 of shape (size, length) with entries in [0, vocab), ``y`` int64
    of shape (size,).  Deterministic in ``seed``.  ``labels`` fixes the labels instead of sampling.
    ``leak`` > 0 is a negative control: each fresh token of a class-1 sequence is replaced by
    token 0 with that probability, so the token counts do carry the label.

    Vectorisation: let ``r(i)`` be the last position ``<= i`` that drew a fresh token (position 0
    always does).  Unrolling the recurrence, ``x_i = u_{r(i)} + s * (i - r(i)) (mod V)``, and
    ``r`` is a running maximum over positions, so no Python loop over the sequence is needed.
    """
    check_walk(vocab, length, p)
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (size,), generator=gen) if labels is None else labels.long()
    fresh_tokens = torch.randint(0, vocab, (size, length), generator=gen)
    steps = torch.rand(size, length, generator=gen) < p
    if leak > 0:
        leaked = (torch.rand(size, length, generator=gen) < leak) & (y == 1).unsqueeze(1)
        fresh_tokens = torch.where(leaked, 0, fresh_tokens)
    position, last_fresh = last_fresh_positions(steps)
    s = (2 * y - 1).unsqueeze(1)
    x = (fresh_tokens.gather(1, last_fresh) + s * (position - last_fresh)) % vocab
    return x, y


def last_fresh_positions(steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(i, r(i))`` per position, ``r(i)`` = the last position ``<= i`` that drew a fresh token.

    ``steps[:, i]`` says position ``i`` stepped from ``i - 1``; position 0 is always fresh (its
    entry is set to False in place).  ``r`` is a running maximum of the fresh positions.
    """
    steps[:, 0] = False
    position = torch.arange(steps.shape[1]).expand_as(steps)
    return position, torch.where(steps, 0, position).cummax(dim=1).values


def symmetric_walk(vocab: int, length: int, p: float, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Walks whose every step is +1 or -1 independently (with probability ``p`` a step, otherwise a
    fresh uniform token): the local correlations of the walk task with no direction to learn.  ``y``
    is a random label carrying no information (a source for SPT on other data, claim X5).
    Vectorised like :func:`generate_walk`: ``x_i = u_{r(i)} + C_i - C_{r(i)} (mod V)`` with ``C``
    the running sum of the signs."""
    check_walk(vocab, length, p)
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (size,), generator=gen)
    fresh_tokens = torch.randint(0, vocab, (size, length), generator=gen)
    steps = torch.rand(size, length, generator=gen) < p
    signs = 2 * torch.randint(0, 2, (size, length), generator=gen) - 1
    _, last_fresh = last_fresh_positions(steps)
    walked = torch.where(steps, signs, 0).cumsum(dim=1)
    x = (fresh_tokens.gather(1, last_fresh) + walked - walked.gather(1, last_fresh)) % vocab
    return x, y


def token_histogram(x: torch.Tensor, vocab: int) -> torch.Tensor:
    """Counts of each token per sequence, shape (batch, vocab): the input of a bag-of-tokens model."""
    hist = torch.zeros(x.shape[0], vocab, dtype=torch.float32)
    return hist.scatter_add_(1, x, torch.ones_like(x, dtype=torch.float32))


@overload
def sequence_probability(x: tuple[int, ...], y: int, vocab: int, p: Fraction, leak: Fraction | int = 0) -> Fraction:
    ...


@overload
def sequence_probability(x: tuple[int, ...], y: int, vocab: int, p: float, leak: Fraction | float = 0) -> float:
    ...


@overload
def sequence_probability(x: tuple[int, ...], y: int, vocab: int, p: Fraction | float,
                         leak: Fraction | float = 0) -> Fraction | float:
    ...


def sequence_probability(x: tuple[int, ...], y: int, vocab: int, p: Fraction | float,
                         leak: Fraction | float = 0) -> Fraction | float:
    """Exact ``P(x | y)`` of the generator (a ``Fraction`` when ``p`` is one).

    ``leak`` > 0 is the law of ``generate_walk(..., leak=leak)``: a class-1 fresh token (``x_0``
    included) is token 0 with probability ``leak + (1 - leak) / V``, any other with ``(1 - leak) / V``,
    so ``P(x | 1) = f(x_0) prod_{i>=1} [p 1{x_i = x_{i-1} + 1} + (1 - p) f(x_i)]``.
    """
    s = 1 if y == 1 else -1
    if leak and y == 1:
        def fresh_law(v: int):
            return (1 - leak) / vocab + (leak if v == 0 else 0)

        prob = fresh_law(x[0])
        for prev, cur in zip(x, x[1:]):
            prob *= (p if cur == (prev + s) % vocab else 0) + (1 - p) * fresh_law(cur)
        return prob
    fresh = (1 - p) / vocab if isinstance(p, Fraction) else (1.0 - p) / vocab
    prob = Fraction(1, vocab) if isinstance(p, Fraction) else 1.0 / vocab
    for prev, cur in zip(x, x[1:]):
        prob *= (p if cur == (prev + s) % vocab else 0) + fresh
    return prob


def histogram_distributions(vocab: int, length: int, p: Fraction) -> dict[int, dict[tuple[int, ...], Fraction]]:
    """Exact class-conditional distribution of the token histogram, by full enumeration.

    Returns ``{y: {histogram: probability}}`` over all ``vocab ** length`` sequences.
    """
    dist: dict[int, dict[tuple[int, ...], Fraction]] = {0: {}, 1: {}}
    for x in itertools.product(range(vocab), repeat=length):
        hist = tuple(x.count(v) for v in range(vocab))
        for y in (0, 1):
            dist[y][hist] = dist[y].get(hist, Fraction(0)) + sequence_probability(x, y, vocab, p)
    return dist

r"""Random problem instances of the theory checks: scores, values, losses and masks (lemmas T1-T5, X4).

An :class:`Instance` is one idealised attention problem of the lemmas: scores ``S`` (n x n), values
``V`` (n x d), a pooled loss ``l``, a per-row loss ``l_i`` (:class:`RowLoss`: binary CE, 3-class CE or
squared error of a linear read-out) and a mask of reconstructed rows.  :func:`random_instances` draws
them over sizes, loss kinds, value scales and row offsets; :func:`uniform_bilinear_point` adds a
factored ``S = H M H^T`` at uniform attention (T4).  The autograd side is
:mod:`spt_theory.analysis.lemma_harness`.  ``proofs/README.md``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

LOSS_KINDS = ("bce", "ce", "mse")
"""Per-row losses: binary CE of a linear logit, 3-class CE of a linear head, squared error."""


@dataclass(frozen=True)
class RowLoss:
    r"""``l_i(y_i)`` for each row ``y_i`` of ``Y``: called on ``Y`` [rows, d], returns the losses [rows].

    ``bce``: ``BCE(w^T y_i + c, t_i)``; ``ce``: ``CE(W y_i + c, t_i)`` over 3 classes;
    ``mse``: ``||y_i - t_i||^2 / 2``.

    Parameters
    ----------
    kind : {"bce", "ce", "mse"}
        The loss.
    weight : Tensor [d] (bce), [3, d] (ce) or empty (mse), float64
        The linear head ``w`` or ``W``.
    bias : Tensor [] (bce), [3] (ce) or empty (mse), float64
        ``c``.
    target : Tensor [rows] (bce: float 0/1; ce: long) or [rows, d] (mse)
        ``t_i``.

    References
    ----------
    proofs/README.md (notation: ``l`` any differentiable function).

    Examples
    --------
    >>> loss = RowLoss("mse", torch.empty(0), torch.empty(0), torch.zeros(2, 1))
    >>> loss(torch.tensor([[1.0], [2.0]])).tolist()
    [0.5, 2.0]
    """

    kind: str
    weight: Tensor
    bias: Tensor
    target: Tensor

    def __call__(self, Y: Tensor) -> Tensor:
        if self.kind == "bce":
            return F.binary_cross_entropy_with_logits(Y @ self.weight + self.bias, self.target, reduction="none")
        if self.kind == "ce":
            return F.cross_entropy(Y @ self.weight.T + self.bias, self.target, reduction="none")
        return 0.5 * ((Y - self.target) ** 2).sum(dim=-1)


def random_row_loss(kind: str, rows: int, d: int, gen: torch.Generator, scale: float = 1.0) -> RowLoss:
    r"""A random :class:`RowLoss` for ``rows`` rows of width ``d`` whose entries are ``O(scale)``.

    Head weights are ``N(0, 1) / scale`` so logits stay O(1) (a saturated logit has an exactly zero
    gradient, which would make the check vacuous); MSE targets are ``N(0, scale^2)``.

    Parameters
    ----------
    kind : {"bce", "ce", "mse"}
        The loss (:data:`LOSS_KINDS`).
    rows, d : int
        Rows of ``Y`` and their width.
    gen : torch.Generator
        The draws' generator.
    scale : float
        Size of the outputs the loss will read.

    Returns
    -------
    RowLoss
        float64 weights.

    Raises
    ------
    ValueError
        An unknown ``kind``.

    References
    ----------
    proofs/README.md (Tolerances).
    """
    f64 = torch.float64
    if kind == "bce":
        return RowLoss(kind, torch.randn(d, generator=gen, dtype=f64) / scale,
                       torch.randn((), generator=gen, dtype=f64), torch.randint(0, 2, (rows,), generator=gen).to(f64))
    if kind == "ce":
        return RowLoss(kind, torch.randn(3, d, generator=gen, dtype=f64) / scale,
                       torch.randn(3, generator=gen, dtype=f64), torch.randint(0, 3, (rows,), generator=gen))
    if kind == "mse":
        return RowLoss(kind, torch.empty(0, dtype=f64), torch.empty(0, dtype=f64),
                       scale * torch.randn(rows, d, generator=gen, dtype=f64))
    raise ValueError(f"unknown loss kind {kind!r} (have {', '.join(LOSS_KINDS)})")


@dataclass(frozen=True)
class Instance:
    r"""One idealised attention problem: scores, values, the pooled loss (1 row), the per-row losses, a mask.

    Parameters
    ----------
    S : Tensor [n, n], float64
        Scores.
    V : Tensor [n, d], float64
        Values.
    pooled_loss : RowLoss
        ``l`` of the supervised readout (``z`` or ``y_r``), one row.
    row_losses : RowLoss
        ``l_i`` of the reconstruction loss, ``n`` rows.
    masked : Tensor [n], bool
        The reconstructed rows.

    Notes
    -----
    The lemmas' setting: the readout of ``A V`` fed straight into the loss.  ``model.py`` puts a
    residual, LayerNorms and an MLP in between; claims T2b, T4b and T7 measure what carries over.

    References
    ----------
    proofs/README.md (notation, Scope).
    """

    S: Tensor
    V: Tensor
    pooled_loss: RowLoss
    row_losses: RowLoss
    masked: Tensor


def random_instance(gen: torch.Generator, *, n: int, d: int, kind: str, value_scale: float = 1.0,
                    offsets: Tensor | None = None, spread: float = 0.0, mask_rate: float = 0.15) -> Instance:
    r"""An :class:`Instance` with ``S = r 1^T + spread * X``, ``X`` standard normal: uniform iff ``spread = 0``.

    ``r`` are the row offsets (default 0), ``V = value_scale * N(0, 1)``; at least one row is
    masked.  The losses are built for outputs of size ``value_scale`` (:func:`random_row_loss`).

    Parameters
    ----------
    gen : torch.Generator
        The draws' generator.
    n, d : int
        Tokens and value width.
    kind : {"bce", "ce", "mse"}
        The losses' kind.
    value_scale : float
        Scale of ``V``.
    offsets : Tensor [n] or None
        Row offsets ``r``.
    spread : float
        Size of the non-constant part of ``S``.
    mask_rate : float
        Probability that a row is masked (one random row always is).

    Returns
    -------
    Instance
        float64 tensors.

    References
    ----------
    proofs/README.md (uniform attention: ``S_ij = r_i``).

    Examples
    --------
    >>> inst = random_instance(torch.Generator().manual_seed(0), n=4, d=3, kind="ce")
    >>> inst.S.shape, inst.V.shape, bool(inst.masked.any()), bool((inst.S == inst.S[:, :1]).all())
    (torch.Size([4, 4]), torch.Size([4, 3]), True, True)
    """
    f64 = torch.float64
    r = torch.zeros(n, dtype=f64) if offsets is None else offsets.to(f64)
    S = r.unsqueeze(1).expand(n, n) + spread * torch.randn(n, n, generator=gen, dtype=f64)
    V = value_scale * torch.randn(n, d, generator=gen, dtype=f64)
    masked = torch.rand(n, generator=gen) < mask_rate
    masked[torch.randint(0, n, (), generator=gen)] = True
    return Instance(S, V, random_row_loss(kind, 1, d, gen, value_scale),
                    random_row_loss(kind, n, d, gen, value_scale), masked)


def random_instances(count: int, seed: int, *, spread: float = 0.0, min_n: int = 2, max_n: int = 64,
                     max_d: int = 16) -> Iterator[Instance]:
    r"""``count`` instances over every loss kind, value scales 1 and 1e3, row offsets 0, O(1) and O(1e6).

    Parameters
    ----------
    count, seed : int
        How many, and the seed of their sizes and draws.
    spread : float
        As in :func:`random_instance` (0: uniform attention).
    min_n, max_n : int
        Range of ``n``.
    max_d : int
        ``d`` is drawn from ``[1, max_d]``.

    Returns
    -------
    Iterator[Instance]
        The instances, the same for the same arguments.

    References
    ----------
    proofs/README.md (Tolerances: measured errors over random instances).
    """
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for index in range(count):
        n, d = rng.randint(min_n, max_n), rng.randint(1, max_d)
        offset_scale = (0.0, 1.0, 1e6)[index % 3]
        yield random_instance(gen, n=n, d=d, kind=LOSS_KINDS[index % len(LOSS_KINDS)],
                              value_scale=(1.0, 1e3)[(index // 3) % 2],
                              offsets=offset_scale * torch.randn(n, generator=gen, dtype=torch.float64),
                              spread=spread)


def readout_row(n: int, index: int) -> int:
    r"""The read-out row of the ``index``-th X4 instance: cycles over the CLS row 0, the last row ``n - 1``
    and an interior row ``n // 2``.

    Parameters
    ----------
    n : int
        Tokens.
    index : int
        The instance's index.

    Returns
    -------
    int
        ``r``.

    References
    ----------
    proofs/X4_readout_blindness.md.

    Examples
    --------
    >>> [readout_row(10, i) for i in range(4)]
    [0, 9, 5, 0]
    """
    return (0, n - 1, n // 2)[index % 3]


def uniform_bilinear_point(inst: Instance, dh: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    r"""A point ``(H, M)`` with ``M != 0`` and uniform attention: ``S = H M H^T`` has constant rows.

    ``H``'s last column is ``1`` and ``M = u e_dh^T``, so ``S = (H u) 1^T``.

    Parameters
    ----------
    inst : Instance
        Gives ``n``.
    dh : int
        Columns of ``H``.
    gen : torch.Generator
        The draws' generator.

    Returns
    -------
    H : Tensor [n, dh], float64
        Random, last column ones.
    M : Tensor [dh, dh], float64
        Zero but for a random last column.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> H, M = uniform_bilinear_point(random_instance(gen, n=4, d=2, kind="mse"), 3, gen)
    >>> S = H @ M @ H.T
    >>> bool((S == S[:, :1]).all()), bool(M.any())
    (True, True)
    """
    n = inst.S.shape[0]
    H = torch.cat([torch.randn(n, dh - 1, generator=gen, dtype=torch.float64),
                   torch.ones(n, 1, dtype=torch.float64)], dim=1)
    M = torch.zeros(dh, dh, dtype=torch.float64)
    M[:, -1] = torch.randn(dh, generator=gen, dtype=torch.float64)
    return H, M

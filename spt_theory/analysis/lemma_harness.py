r"""The test harness of the theory checks: random problem instances, autograd score gradients, errors.

An :class:`Instance` is one idealised attention problem of the lemmas: scores ``S`` (n x n),
values ``V`` (n x d), a per-row loss ``l_i`` (:class:`RowLoss`: binary CE, 3-class CE or squared
error of a linear read-out) and a mask of reconstructed rows.  :func:`sup_autograd` and
:func:`rec_autograd` give ``dL/dS`` of the supervised loss ``l((1/n) 1^T A V)`` and of the
reconstruction loss ``sum_{i masked} l_i(y_i)``, ``Y = A V``, and :func:`row_autograd` of a
single-token readout ``l(y_r)`` (lemma X4), by float64 autograd, for the lemmas T1-T5 and X4
(:mod:`spt_theory.checks.theory`, :mod:`spt_theory.analysis.lemma_measures`), T2b, T4b
(:mod:`spt_theory.checks.bridge`) and the tests
``tests/theory/test_theory*.py`` to hold against the closed forms in :mod:`spt_theory.theory` (``gradients``,
``patterns``, ``blind_directions``, ``rank_one``, ``readout``).

Error measure.  A score gradient comes out of the softmax backward
``dL/dS = A o U - A o ((A o U) 1) 1^T`` (``U = dL/dA``), whose float64 rounding error is a few
``n * eps * ||A o U||_F`` (eps = 2.2e-16, n <= 64).  Errors are therefore reported relative to
``||A o U||_F`` (:func:`relative_error`), not to ``||dL/dS||_F``, which can vanish by cancellation.
A correct closed form then agrees to ~1e-14; any wrong term shows up at O(1).  The threshold
``TOLERANCE = 1e-10`` leaves four orders of magnitude for rounding and none for a wrong formula.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from spt_theory.core.cpu import intra_op_threads
from spt_theory.theory import gradients

TOLERANCE = 1e-10
"""Largest float64 relative error accepted (see module docstring)."""

LOSS_KINDS = ("bce", "ce", "mse")
"""Per-row losses: binary CE of a linear logit, 3-class CE of a linear head, squared error."""


def single_threaded():
    """Run torch on one intra-op thread inside the block (or decorated function), then restore.

    The theory checks use tensors of at most a few thousand entries, for which intra-op threads
    only add synchronisation: on a busy 2-core machine they made these checks ~60x slower.
    (Through :func:`spt_theory.core.cpu.intra_op_threads`, so later training keeps its speed.)
    """
    return intra_op_threads(1)


# --------------------------------------------------------------------------- problem instances

@dataclass(frozen=True)
class RowLoss:
    r"""``l_i(y_i)`` for each row ``y_i`` of ``Y`` (shape ``rows x d``), returned as a vector.

    ``bce``: ``BCE(w^T y_i + c, t_i)``; ``ce``: ``CE(W y_i + c, t_i)`` over 3 classes;
    ``mse``: ``||y_i - t_i||^2 / 2``.
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
    """A random :class:`RowLoss` for ``rows`` rows of width ``d`` whose entries are ``O(scale)``.

    Head weights are ``N(0, 1) / scale`` so logits stay O(1) (a saturated logit has an exactly zero
    gradient, which would make the check vacuous); MSE targets are ``N(0, scale^2)``.
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
    """Scores ``S``, values ``V``, the pooled loss ``l`` (1 row), the per-row losses, a mask."""

    S: Tensor
    V: Tensor
    pooled_loss: RowLoss
    row_losses: RowLoss
    masked: Tensor


def random_instance(gen: torch.Generator, *, n: int, d: int, kind: str, value_scale: float = 1.0,
                    offsets: Tensor | None = None, spread: float = 0.0, mask_rate: float = 0.15) -> Instance:
    r"""``S = r 1^T + spread * X`` (``X`` standard normal): uniform attention iff ``spread = 0``.

    ``r`` are the row offsets (default 0), ``V = value_scale * N(0, 1)``; at least one row is
    masked.  The losses are built for outputs of size ``value_scale`` (:func:`random_row_loss`).
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
    """``count`` instances over n in [min_n, max_n], d in [1, max_d], every loss kind, value scales
    1 and 1e3, row offsets 0, O(1) and O(1e6)."""
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
    """The read-out row of the ``index``-th X4 instance: cycles over the CLS row 0, the last row
    ``n - 1`` and an interior row."""
    return (0, n - 1, n // 2)[index % 3]


# --------------------------------------------------------------------------- autograd

@dataclass(frozen=True)
class ScoreGradient:
    """Autograd results: ``dL/dS``, the loss gradient at the readout (``grad l(z)`` or rows
    ``g_i``), the loss, and the scale ``||A o dL/dA||_F`` of the softmax backward."""

    grad_S: Tensor
    grad_readout: Tensor
    loss: Tensor
    scale: Tensor


def softmax_backward_scale(A: Tensor, grad_A: Tensor) -> Tensor:
    r"""``||A o dL/dA||_F``, computed as ``m ||X / m||_F`` (``m = max |X|``) so that it does not underflow
    to 0 for tiny gradients (saturated logits give entries ~1e-240, whose squares underflow)."""
    X = A.detach() * grad_A
    m = X.abs().max()
    return m * (X / m).norm() if float(m) > 0 else m


def _leaf(X: Tensor) -> Tensor:
    return X.detach().clone().requires_grad_(True)


def _gradients(S: Tensor, readout: Callable[[Tensor], Tensor], loss: Callable[[Tensor], Tensor],
               *sources: Tensor) -> tuple[ScoreGradient, list[Tensor]]:
    """Autograd of ``loss(readout(A))``, ``A = softmax(S)`` (``S`` requires grad): the
    :class:`ScoreGradient`, and the gradients of the ``sources`` ``S`` was computed from."""
    A = gradients.attention(S)
    out = readout(A)
    value = loss(out)
    grad_S, grad_A, grad_out, *grad_sources = torch.autograd.grad(value, (S, A, out, *sources))
    return ScoreGradient(grad_S, grad_out, value.detach(), softmax_backward_scale(A, grad_A)), grad_sources


def _pooled(inst: Instance, row: int | None) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    r"""The readout and loss of ``inst``'s pooled loss: ``l(z)``, ``z = (1/n) 1^T A V`` (mean
    pooling, ``row`` None) or ``l(y_r)``, ``y_r`` = row ``r`` of ``A V`` (a CLS or last-token readout)."""
    readout = (lambda A: A.mean(dim=0) @ inst.V) if row is None else (lambda A: A[row] @ inst.V)
    return readout, lambda z: inst.pooled_loss(z.unsqueeze(0))[0]


def sup_autograd(inst: Instance, S: Tensor | None = None) -> ScoreGradient:
    r"""Autograd of ``L_sup(S) = l(z)``, ``z = (1/n) 1^T A V``, at ``S`` (default ``inst.S``)."""
    return _gradients(_leaf(inst.S if S is None else S), *_pooled(inst, None))[0]


def row_autograd(inst: Instance, r: int, S: Tensor | None = None) -> ScoreGradient:
    r"""Autograd of ``L_row(S) = l(y_r)``, ``y_r`` = row ``r`` of ``A V`` (lemma X4), at ``S``
    (default ``inst.S``)."""
    return _gradients(_leaf(inst.S if S is None else S), *_pooled(inst, r))[0]


def rec_autograd(inst: Instance) -> ScoreGradient:
    r"""Autograd of ``L_rec(S) = sum_{i masked} l_i(y_i)``, ``Y = A V``."""
    return _gradients(_leaf(inst.S), lambda A: A @ inst.V, lambda Y: (inst.row_losses(Y) * inst.masked).sum())[0]


def relative_error(actual: Tensor, expected: Tensor, scale: Tensor) -> float:
    """``||actual - expected||_F / scale`` (the absolute error when ``scale`` is 0)."""
    err = float((actual - expected).norm())
    return err / float(scale) if float(scale) > 0 else err


def bilinear_autograd(H: Tensor, M: Tensor, inst: Instance) -> tuple[Tensor, ScoreGradient]:
    r"""``dL_sup/dM`` for ``S = H M H^T`` by autograd, and the score-level gradient at that ``S``."""
    return _bilinear_gradients(H, M, inst, None)


def row_bilinear_autograd(H: Tensor, M: Tensor, inst: Instance, r: int) -> tuple[Tensor, ScoreGradient]:
    r"""``dL_row/dM`` for ``S = H M H^T`` by autograd (lemma X4), and the score-level gradient."""
    return _bilinear_gradients(H, M, inst, r)


def _bilinear_gradients(H: Tensor, M: Tensor, inst: Instance, row: int | None) -> tuple[Tensor, ScoreGradient]:
    M = _leaf(M)
    gradient, (grad_M,) = _gradients(H @ M @ H.T, *_pooled(inst, row), M)
    return grad_M, gradient


def uniform_bilinear_point(inst: Instance, dh: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    r"""``H`` (``n x dh``) whose last column is ``1``, and ``M = u e_dh^T``: ``S = (H u) 1^T`` has
    constant rows, i.e. uniform attention with non-zero scores and ``M != 0``."""
    n = inst.S.shape[0]
    H = torch.cat([torch.randn(n, dh - 1, generator=gen, dtype=torch.float64),
                   torch.ones(n, 1, dtype=torch.float64)], dim=1)
    M = torch.zeros(dh, dh, dtype=torch.float64)
    M[:, -1] = torch.randn(dh, generator=gen, dtype=torch.float64)
    return H, M

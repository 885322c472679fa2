r"""The test harness of the theory checks: autograd score gradients and their errors.

An :class:`~spt_theory.analysis.lemma_instances.Instance` is one idealised attention problem of the
lemmas (scores ``S``, values ``V``, losses, a mask of reconstructed rows; drawn by
:mod:`spt_theory.analysis.lemma_instances`).  :func:`sup_autograd`
and :func:`rec_autograd` give ``dL/dS`` of the supervised loss ``l((1/n) 1^T A V)`` and of the
reconstruction loss ``sum_{i masked} l_i(y_i)``, ``Y = A V``, and :func:`row_autograd` of a
single-token readout ``l(y_r)`` (lemma X4), by float64 autograd, for the lemmas T1-T5 and X4
(:mod:`spt_theory.checks.theory`, :mod:`spt_theory.analysis.lemma_measures`), T2b, T4b
(:mod:`spt_theory.checks.bridge`) and the tests ``tests/theory/test_theory*.py`` to hold against
the closed forms in :mod:`spt_theory.theory` (``gradients``, ``patterns``, ``blind_directions``,
``rank_one``, ``readout``).

Error measure.  A score gradient comes out of the softmax backward
``dL/dS = A o U - A o ((A o U) 1) 1^T`` (``U = dL/dA``), whose float64 rounding error is a few
``n * eps * ||A o U||_F`` (eps = 2.2e-16, n <= 64).  Errors are therefore reported relative to
``||A o U||_F`` (:func:`relative_error`), not to ``||dL/dS||_F``, which can vanish by cancellation.
A correct closed form then agrees to ~1e-14; any wrong term shows up at O(1).  The threshold
``TOLERANCE = 1e-10`` leaves four orders of magnitude for rounding and none for a wrong formula.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from spt_theory.analysis.lemma_instances import Instance
from spt_theory.core.cpu import intra_op_threads
from spt_theory.theory import gradients

TOLERANCE = 1e-10
"""Largest float64 relative error accepted (see module docstring)."""


def single_threaded():
    r"""Run torch on one intra-op thread inside the block (or decorated function), then restore.

    The theory checks use tensors of at most a few thousand entries, for which intra-op threads
    only add synchronisation: on a busy 2-core machine they made these checks ~60x slower.
    (Through :func:`spt_theory.core.cpu.intra_op_threads`, so later training keeps its speed.)

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager, also usable as a decorator (``@single_threaded()``).

    References
    ----------
    proofs/README.md (the checks it speeds up).

    Examples
    --------
    >>> before = torch.get_num_threads()
    >>> with single_threaded():
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    return intra_op_threads(1)


# --------------------------------------------------------------------------- autograd

@dataclass(frozen=True)
class ScoreGradient:
    r"""Autograd results at one point.

    Parameters
    ----------
    grad_S : Tensor [n, n]
        ``dL/dS``.
    grad_readout : Tensor [d] or [n, d]
        ``grad l(z)`` (or ``grad l(y_r)``), or the rows ``g_i`` of the reconstruction loss.
    loss : Tensor []
        The loss.
    scale : Tensor []
        ``||A o dL/dA||_F``, the scale of the softmax backward (:func:`softmax_backward_scale`).

    References
    ----------
    proofs/README.md (Tolerances).
    """

    grad_S: Tensor
    grad_readout: Tensor
    loss: Tensor
    scale: Tensor


def softmax_backward_scale(A: Tensor, grad_A: Tensor) -> Tensor:
    r"""``||A o dL/dA||_F``, the error scale of a score gradient, safe from underflow.

    Computed as ``m ||X / m||_F`` (``m = max |X|``) so that it does not underflow to 0 for tiny
    gradients (saturated logits give entries ~1e-240, whose squares underflow).

    Parameters
    ----------
    A : Tensor [n, n]
        Attention.
    grad_A : Tensor [n, n]
        ``dL/dA``.

    Returns
    -------
    Tensor []
        The scale (0 when ``A o dL/dA`` is 0).

    References
    ----------
    proofs/README.md (Tolerances, the softmax backward (SB)).

    Examples
    --------
    >>> A = torch.full((2, 2), 0.5, dtype=torch.float64)
    >>> round(float(softmax_backward_scale(A, torch.eye(2, dtype=torch.float64) * 1e-300) / 1e-300), 12)
    0.707106781187
    """
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
    r"""Autograd of ``L_sup(S) = l(z)``, ``z = (1/n) 1^T A V``, at ``S`` (default ``inst.S``).

    Parameters
    ----------
    inst : Instance
        The problem (its ``V`` and ``pooled_loss``).
    S : Tensor [n, n] or None
        The point.

    Returns
    -------
    ScoreGradient
        ``grad_readout`` is ``grad l(z)`` [d].

    References
    ----------
    proofs/T1_column_sums.md, proofs/T2_uniform_gradient.md.

    Examples
    --------
    At uniform attention autograd agrees with T2's closed form:

    >>> from spt_theory.analysis.lemma_instances import random_instance
    >>> from spt_theory.theory.gradients import sup_score_grad_uniform
    >>> inst = random_instance(torch.Generator().manual_seed(0), n=5, d=3, kind="bce")
    >>> auto = sup_autograd(inst)
    >>> relative_error(auto.grad_S, sup_score_grad_uniform(inst.V, auto.grad_readout), auto.scale) < TOLERANCE
    True
    """
    return _gradients(_leaf(inst.S if S is None else S), *_pooled(inst, None))[0]


def row_autograd(inst: Instance, r: int, S: Tensor | None = None) -> ScoreGradient:
    r"""Autograd of ``L_row(S) = l(y_r)``, ``y_r`` = row ``r`` of ``A V``, at ``S`` (default ``inst.S``).

    Parameters
    ----------
    inst : Instance
        The problem (its ``V`` and ``pooled_loss``).
    r : int
        The readout row.
    S : Tensor [n, n] or None
        The point.

    Returns
    -------
    ScoreGradient
        ``grad_readout`` is ``grad l(y_r)`` [d].

    References
    ----------
    proofs/X4_readout_blindness.md.
    """
    return _gradients(_leaf(inst.S if S is None else S), *_pooled(inst, r))[0]


def rec_autograd(inst: Instance) -> ScoreGradient:
    r"""Autograd of ``L_rec(S) = sum_{i masked} l_i(y_i)``, ``Y = A V``, at ``inst.S``.

    Parameters
    ----------
    inst : Instance
        The problem (its ``V``, ``row_losses`` and ``masked``).

    Returns
    -------
    ScoreGradient
        ``grad_readout`` holds the rows ``g_i`` [n, d] (0 at unmasked rows).

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    return _gradients(_leaf(inst.S), lambda A: A @ inst.V, lambda Y: (inst.row_losses(Y) * inst.masked).sum())[0]


def relative_error(actual: Tensor, expected: Tensor, scale: Tensor) -> float:
    r"""``||actual - expected||_F / scale`` (the absolute error when ``scale`` is 0).

    Parameters
    ----------
    actual, expected : Tensor
        Same shape.
    scale : Tensor []
        Usually :attr:`ScoreGradient.scale`.

    Returns
    -------
    float
        The error, held to :data:`TOLERANCE`.

    References
    ----------
    proofs/README.md (Tolerances).

    Examples
    --------
    >>> relative_error(torch.tensor([3.0, 4.0]), torch.zeros(2), torch.tensor(10.0))
    0.5
    """
    err = float((actual - expected).norm())
    return err / float(scale) if float(scale) > 0 else err


def bilinear_autograd(H: Tensor, M: Tensor, inst: Instance) -> tuple[Tensor, ScoreGradient]:
    r"""``dL_sup/dM`` for ``S = H M H^T`` by autograd, and the score-level gradient at that ``S``.

    Parameters
    ----------
    H : Tensor [n, dh]
        Token features.
    M : Tensor [dh, dh]
        The bilinear form.
    inst : Instance
        The problem (its ``V`` and ``pooled_loss``; its ``S`` is not read).

    Returns
    -------
    grad_M : Tensor [dh, dh]
        ``dL_sup/dM``.
    gradient : ScoreGradient
        At ``S = H M H^T``.

    Notes
    -----
    ``H`` is any matrix; in ``model.py`` it is ``[LN_1(E x + P), 1]`` and ``M`` comes factored as
    ``W_Q^T W_K / sqrt(d_h)`` per head (claim T4b).

    References
    ----------
    proofs/T4_rank_one_update.md.
    """
    return _bilinear_gradients(H, M, inst, None)


def row_bilinear_autograd(H: Tensor, M: Tensor, inst: Instance, r: int) -> tuple[Tensor, ScoreGradient]:
    r"""``dL_row/dM`` for ``S = H M H^T`` by autograd (lemma X4 (d)), and the score-level gradient.

    Parameters
    ----------
    H, M, inst
        As in :func:`bilinear_autograd`.
    r : int
        The readout row.

    Returns
    -------
    grad_M : Tensor [dh, dh]
        ``dL_row/dM``.
    gradient : ScoreGradient
        At ``S = H M H^T``.

    References
    ----------
    proofs/X4_readout_blindness.md (d).
    """
    return _bilinear_gradients(H, M, inst, r)


def _bilinear_gradients(H: Tensor, M: Tensor, inst: Instance, row: int | None) -> tuple[Tensor, ScoreGradient]:
    M = _leaf(M)
    gradient, (grad_M,) = _gradients(H @ M @ H.T, *_pooled(inst, row), M)
    return grad_M, gradient

r"""T3: directions ``L_sup`` is blind to at uniform attention, and how little it sees of a Toeplitz kernel.

At uniform attention ``<dL_sup/dS, P> = (1/n) (b - mean(b) 1)^T P^T 1`` (``b`` from
:func:`~spt_theory.theory.gradients.pooled_value_scores`): zero when every column of ``P`` sums to the
same; for a Toeplitz kernel only its ``2w`` boundary columns are seen, with a tight bound and the
largest cosine.  Notation (as in ``proofs/README.md``): ``n`` tokens, values ``V`` in R^{n x d} with
rows ``v_j``, scores ``S`` in R^{n x n}, attention ``A = softmax_rows(S)``, ``1`` the all-ones vector and
``<X, Y> = sum_ij X_ij Y_ij``.  Depends only on torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from spt_theory.theory.gradients import column_sums, pooled_value_scores
from spt_theory.theory.patterns import toeplitz_column_sum_deviation, toeplitz_kernel


def blind_projection(grad_S: Tensor, P: Tensor) -> Tensor:
    r"""``<grad_S, P> = sum_ij (grad_S)_ij P_ij``: the first-order change of the loss along ``P``.

    Parameters
    ----------
    grad_S : Tensor [..., n, n]
        A score gradient.
    P : Tensor [n, n] or [..., n, n]
        A score direction.

    Returns
    -------
    Tensor [...]
        The Frobenius inner product.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> blind_projection(torch.eye(2), torch.ones(2, 2)).item()
    2.0
    """
    return (grad_S * P).sum(dim=(-2, -1))


def predicted_blind_projection(V: Tensor, grad_z: Tensor, P: Tensor) -> Tensor:
    r"""T3: ``<dL_sup/dS, P> = (1/n) (b - mean(b) 1)^T P^T 1`` at uniform attention.

    Zero whenever all column sums ``P^T 1`` are equal (circulant or column-centred ``P``).

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``.
    P : Tensor [n, n]
        A score direction.

    Returns
    -------
    Tensor [...]
        The first-order change of ``L_sup`` along ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    A circulant direction is blind:

    >>> from spt_theory.theory.patterns import circulant_kernel
    >>> V, g = torch.randn(6, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    >>> abs(predicted_blind_projection(V, g, circulant_kernel(6, [1.0, 1.0]))) < 1e-12
    tensor(True)
    """
    b = pooled_value_scores(V, grad_z)
    centred = b - b.mean(dim=-1, keepdim=True)
    return (centred * column_sums(P)).sum(dim=-1) / V.shape[-2]


def toeplitz_boundary_projection(V: Tensor, grad_z: Tensor, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 for ``P = toeplitz_kernel(n, k)``: ``<dL_sup/dS, P> = -(1/n) (b - mean(b) 1)^T delta``.

    ``delta`` from :func:`toeplitz_column_sum_deviation`; the constant ``F`` of the column sums
    drops out because ``b - mean(b) 1`` sums to zero.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``.
    k : sequence of float or Tensor [w]
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor [...]
        The first-order change of ``L_sup`` along ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> V, g = torch.randn(7, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    >>> P = toeplitz_kernel(7, [1.0, 0.5])
    >>> torch.allclose(toeplitz_boundary_projection(V, g, [1.0, 0.5]), predicted_blind_projection(V, g, P))
    True
    """
    n = V.shape[-2]
    b = pooled_value_scores(V, grad_z)
    delta = toeplitz_column_sum_deviation(n, k).to(b.dtype)
    return -((b - b.mean(dim=-1, keepdim=True)) * delta).sum(dim=-1) / n


def stable_norm(x: Tensor) -> Tensor:
    r"""``||x||_2`` over the last dimension, as ``m ||x / m||`` with ``m = max |x_j|``.

    The plain sum of squares underflows to 0 for entries below ~1e-154 (a saturated loss gives
    such gradients).

    Parameters
    ----------
    x : Tensor [..., m]
        Vectors.

    Returns
    -------
    Tensor [...]
        Their Euclidean norms.

    References
    ----------
    proofs/T3_blind_directions.md (the bound it enters).

    Examples
    --------
    >>> stable_norm(torch.tensor([3e-200, 4e-200], dtype=torch.float64)).item()
    5e-200
    """
    m = x.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(m > 0, m, torch.ones_like(m))
    return (m * (x / safe).norm(dim=-1, keepdim=True)).squeeze(-1)


def toeplitz_projection_bound(V: Tensor, grad_z: Tensor, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 bound: ``|<dL_sup/dS, P>| <= (1/n) ||b - mean(b) 1|| ||delta - mean(delta) 1||``.

    Cauchy-Schwarz on ``<dL_sup/dS, P> = -(1/n) (b - mean(b) 1)^T (delta - mean(delta) 1)``;
    equality iff ``b - mean(b) 1`` is parallel to ``delta - mean(delta) 1``, so the bound is tight.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``.
    k : sequence of float or Tensor [w]
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor [...]
        The bound.

    References
    ----------
    proofs/T3_blind_directions.md.
    """
    n = V.shape[-2]
    b = pooled_value_scores(V, grad_z)
    delta = toeplitz_column_sum_deviation(n, k).to(b.dtype)
    return stable_norm(b - b.mean(dim=-1, keepdim=True)) * (delta - delta.mean()).norm() / n


def toeplitz_max_cosine(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""The largest ``|cos|`` between ``dL_sup/dS`` at uniform attention and ``P = toeplitz_kernel(n, k)``.

    ``||dL_sup/dS||_F = ||b - mean(b) 1|| / sqrt(n)``, so the tight bound of
    :func:`toeplitz_projection_bound` gives ``||delta - mean(delta) 1|| / (sqrt(n) ||P||_F)``,
    attained when ``b - mean(b) 1`` is parallel to ``delta - mean(delta) 1``.  For the band
    ``k = 1`` on offsets ``0..w`` this is at most ``sqrt(w (w+1) / 3) / n`` up to O(1/n^2).

    Parameters
    ----------
    n : int
        Tokens.
    k : sequence of float or Tensor [w]
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor [], float64
        The largest cosine.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> bool(toeplitz_max_cosine(100, [1.0, 1.0, 1.0]) <= (2 * 3 / 3) ** 0.5 / 100 * 1.01)
    True
    """
    delta = toeplitz_column_sum_deviation(n, k)
    return (delta - delta.mean()).norm() / (n ** 0.5 * toeplitz_kernel(n, k).norm())

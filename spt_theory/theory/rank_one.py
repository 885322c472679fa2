r"""T4: at uniform attention the gradient of the bilinear score matrix ``M`` (``S = H M H^T``) has rank one.

The chain rule from ``dL/dS`` to ``dL/dM``, T4's closed form, and the measures of how far a matrix
is from rank one (singular-value ratio, Eckart-Young distance, rank for a share of the energy).
Notation (as in ``proofs/README.md``): ``n`` tokens, values ``V`` in R^{n x d} with rows ``v_j``,
scores ``S`` in R^{n x n}, attention ``A = softmax_rows(S)``, ``1`` the all-ones vector and
``<X, Y> = sum_ij X_ij Y_ij``.  Depends only on torch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from spt_theory.theory.gradients import pooled_value_scores


def score_grad_to_bilinear(H: Tensor, grad_S: Tensor) -> Tensor:
    r"""T4 chain rule: for ``S = H M H^T``, ``dL/dM = H^T (dL/dS) H``.

    Parameters
    ----------
    H : Tensor [..., n, D]
        The layer's input rows (with a bias column where ``M`` is augmented).
    grad_S : Tensor [..., n, n]
        ``dL/dS``.

    Returns
    -------
    Tensor [..., D, D]
        ``dL/dM``.

    References
    ----------
    proofs/T4_rank_one_update.md.
    """
    return H.transpose(-1, -2).matmul(grad_S).matmul(H)


def sup_grad_M_uniform(H: Tensor, V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T4: at uniform attention ``dL_sup/dM = H^T G H = (1/n) (H^T 1) ((b - mean(b) 1)^T H)``.

    An outer product of two vectors (``G`` from T2), hence rank <= 1; a gradient step on ``M``
    changes ``S = H M H^T`` by the rank-one matrix ``H (dL/dM) H^T``.

    Parameters
    ----------
    H : Tensor [..., n, D]
        The layer's input rows.
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``.

    Returns
    -------
    Tensor [..., D, D]
        ``dL_sup/dM``, rank <= 1.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> H, V = torch.randn(5, 4, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    >>> int(torch.linalg.matrix_rank(sup_grad_M_uniform(H, V, torch.randn(3, dtype=torch.float64))))
    1
    """
    b = pooled_value_scores(V, grad_z)
    left = H.sum(dim=-2) / V.shape[-2]
    right = (b - b.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2)
    return left.unsqueeze(-1) * right.unsqueeze(-2)


def singular_value_ratio(X: Tensor) -> Tensor:
    r"""``sigma_2 / sigma_1`` of a matrix: 0 for rank one (NaN for the zero matrix).

    Parameters
    ----------
    X : Tensor [..., m, n]
        Matrices with ``min(m, n) >= 2``.

    Returns
    -------
    Tensor [...]
        The ratio.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> singular_value_ratio(torch.outer(torch.ones(3), torch.arange(3.0))).item() < 1e-7
    True
    """
    s = torch.linalg.svdvals(X)
    return s[..., 1] / s[..., 0]


def rank_one_distance(X: Tensor) -> Tensor:
    r"""Share of ``||X||_F`` outside its best rank-one approximation: ``sqrt(1 - sigma_1^2 / ||X||_F^2)``.

    0 for a rank-one matrix; the relative Frobenius error of the best rank-one approximation
    (Eckart-Young).  A banded proximity pattern of width ``w`` on ``n`` tokens has
    ``sigma_1 <= 2w + 1`` while ``||X||_F^2 ~ (2w + 1) n``, so it stays near 1.

    Parameters
    ----------
    X : Tensor [..., m, n]
        Matrices.

    Returns
    -------
    Tensor [...]
        The distance, in [0, 1].

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> round(rank_one_distance(torch.eye(4, dtype=torch.float64)).item(), 6)
    0.866025
    """
    s = torch.linalg.svdvals(X)
    return (1 - s[..., 0] ** 2 / (s ** 2).sum(dim=-1)).clamp(min=0).sqrt()


def rank_for_energy(X: Tensor, energy: float) -> int:
    r"""Smallest ``r`` with ``sum_{i<=r} sigma_i^2 >= energy ||X||_F^2``: rank-one steps needed.

    Parameters
    ----------
    X : Tensor [m, n]
        A matrix.
    energy : float
        The share of ``||X||_F^2`` to reach, in (0, 1].

    Returns
    -------
    int
        ``r``.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> rank_for_energy(torch.diag(torch.tensor([3.0, 1.0, 1.0])), 0.9)  # 9/11 < 0.9 <= 10/11
    2
    """
    s2 = torch.linalg.svdvals(X) ** 2
    return int((s2.cumsum(0) / s2.sum() < energy).sum()) + 1

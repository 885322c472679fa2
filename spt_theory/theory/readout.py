r"""X4: a single-token readout (CLS or last token) and what it sees of the scores at uniform attention.

The readout is one row of ``A V`` instead of the mean, ``L_row(S) = l(y_r)``, ``y_r = e_r^T A V``: a
CLS token (``r = 0``) or the last token (``r = n - 1``) of a 1-layer model.
``beta_j = grad l(y_r)^T v_j`` (no 1/n: nothing is averaged).  Notation (as in ``proofs/README.md``):
``n`` tokens, values ``V`` in R^{n x d} with rows ``v_j``, scores ``S`` in R^{n x n}, attention
``A = softmax_rows(S)``, ``1`` the all-ones vector and ``<X, Y> = sum_ij X_ij Y_ij``.  Depends only on
torch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from spt_theory.theory.gradients import attention, row_centre


def _row_value_scores(V: Tensor, grad_y: Tensor) -> Tensor:
    r"""``beta_j = grad l(y_r)^T v_j``, the gradient of ``L_row`` w.r.t. ``A_rj``."""
    return V.matmul(grad_y.unsqueeze(-1)).squeeze(-1)


def row_score_grad(S: Tensor, V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (a), any point: ``dL_row/dS = e_r (A_r o (beta - (A_r . beta) 1))^T``; every other row is 0.

    ``L_row`` reads only row ``r`` of ``A``, which depends only on row ``r`` of ``S``.

    Parameters
    ----------
    S : Tensor [..., n, n]
        Attention scores.
    V : Tensor [..., n, d]
        Values.
    grad_y : Tensor [..., d]
        ``grad l(y_r)`` at the readout row.
    r : int
        The readout position (0: CLS, ``n - 1``: last token).

    Returns
    -------
    Tensor [..., n, n]
        ``dL_row/dS``.

    References
    ----------
    proofs/X4_readout_blindness.md.
    """
    A_r = attention(S)[..., r, :]
    beta = _row_value_scores(V, grad_y)
    row = A_r * (beta - (A_r * beta).sum(dim=-1, keepdim=True))
    grad = torch.zeros_like(S)
    grad[..., r, :] = row
    return grad


def row_score_grad_uniform(V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (b): at uniform attention ``dL_row/dS = (1/n) e_r (beta - mean(beta) 1)^T``.

    Rank <= 1, one non-zero row, which sums to 0.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_y : Tensor [..., d]
        ``grad l(y_r)``.
    r : int
        The readout position.

    Returns
    -------
    Tensor [..., n, n]
        ``dL_row/dS`` at uniform attention.

    References
    ----------
    proofs/X4_readout_blindness.md.

    Examples
    --------
    >>> row_score_grad_uniform(torch.tensor([[1.0], [3.0]]), torch.tensor([1.0]), 0).tolist()
    [[-0.5, 0.5], [0.0, 0.0]]
    """
    beta = _row_value_scores(V, grad_y)
    n = V.shape[-2]
    grad = V.new_zeros(*V.shape[:-2], n, n)
    grad[..., r, :] = (beta - beta.mean(dim=-1, keepdim=True)) / n
    return grad


def predicted_row_projection(V: Tensor, grad_y: Tensor, P: Tensor, r: int) -> Tensor:
    r"""X4 (c): ``<dL_row/dS, P> = (1/n) (beta - mean(beta) 1)^T P_r`` at uniform attention.

    ``P_r`` is row ``r`` of ``P``: zero for every ``(V, l)`` iff ``P_r`` is constant.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_y : Tensor [..., d]
        ``grad l(y_r)``.
    P : Tensor [n, n]
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor [...]
        The first-order change of ``L_row`` along ``P``.

    References
    ----------
    proofs/X4_readout_blindness.md.
    """
    beta = _row_value_scores(V, grad_y)
    centred = beta - beta.mean(dim=-1, keepdim=True)
    return (centred * P[..., r, :]).sum(dim=-1) / V.shape[-2]


def row_projection_bound(V: Tensor, grad_y: Tensor, P: Tensor, r: int) -> Tensor:
    r"""X4 (c) bound: ``|<dL_row/dS, P>| <= (1/n) ||beta - mean(beta) 1|| ||P_r - mean(P_r) 1||``.

    Attained iff ``beta - mean(beta) 1`` is parallel to ``P_r - mean(P_r) 1``.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_y : Tensor [..., d]
        ``grad l(y_r)``.
    P : Tensor [n, n]
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor [...]
        The bound.

    References
    ----------
    proofs/X4_readout_blindness.md.
    """
    beta = _row_value_scores(V, grad_y)
    return ((beta - beta.mean(dim=-1, keepdim=True)).norm(dim=-1)
            * row_centre(P[..., r, :].unsqueeze(-2)).squeeze(-2).norm(dim=-1) / V.shape[-2])


def row_max_cosine(P: Tensor, r: int) -> Tensor:
    r"""The largest ``|cos(dL_row/dS, P)|`` at uniform attention: ``||P_r - mean(P_r) 1|| / ||P||_F``.

    For the band ``1{|i-j| <= w}`` on ``n`` tokens: ``sqrt(m (1 - m/n) / ((2w+1) n - w (w+1)))`` with
    ``m = w + 1`` at an end row (CLS ``r = 0``, last ``r = n-1``) and ``m = 2w + 1`` inside: about
    ``1/sqrt(n)``, against ``~ sqrt(w(w+1)/3) / n`` for mean pooling (T3).

    Parameters
    ----------
    P : Tensor [..., n, n]
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor [...]
        The largest cosine.

    References
    ----------
    proofs/X4_readout_blindness.md.

    Examples
    --------
    >>> from spt_theory.theory.patterns import band_mask
    >>> abs(row_max_cosine(band_mask(20, 2), 0).item() - band_row_max_cosine(20, 2, 0)) < 1e-12
    True
    """
    return row_centre(P[..., r, :].unsqueeze(-2)).squeeze(-2).norm(dim=-1) / P.flatten(-2).norm(dim=-1)


def band_row_max_cosine(n: int, width: int, r: int) -> float:
    r"""Closed form of :func:`row_max_cosine` for the band ``1{|i-j| <= width}``.

    ``sqrt(m (1 - m/n) / ((2w+1) n - w(w+1)))`` with ``m`` the number of ones in row ``r``
    (for ``n > width``).

    Parameters
    ----------
    n : int
        Tokens.
    width : int
        The band's half-width ``w``.
    r : int
        The readout position.

    Returns
    -------
    float
        The largest cosine.

    References
    ----------
    proofs/X4_readout_blindness.md.

    Examples
    --------
    >>> round(band_row_max_cosine(10, 1, 0), 6)  # m = 2: sqrt(2 (1 - 2/10) / (3 * 10 - 2))
    0.239046
    """
    m = min(r, width) + min(n - 1 - r, width) + 1
    return (m * (1 - m / n) / ((2 * width + 1) * n - width * (width + 1))) ** 0.5


def row_grad_M_uniform(H: Tensor, V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (d): with ``S = H M H^T``, at uniform attention ``dL_row/dM = (1/n) h_r ((beta - mean(beta) 1)^T H)``.

    Rank <= 1 like T4, but the left factor is the readout token's own ``h_r`` instead of the bag
    mean ``(1/n) H^T 1``: the update couples the query at ``r`` with individual keys.

    Parameters
    ----------
    H : Tensor [..., n, D]
        The layer's input rows.
    V : Tensor [..., n, d]
        Values.
    grad_y : Tensor [..., d]
        ``grad l(y_r)``.
    r : int
        The readout position.

    Returns
    -------
    Tensor [..., D, D]
        ``dL_row/dM``, rank <= 1.

    References
    ----------
    proofs/X4_readout_blindness.md, proofs/T4_rank_one_update.md.
    """
    beta = _row_value_scores(V, grad_y)
    right = (beta - beta.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2) / V.shape[-2]
    return H[..., r, :].unsqueeze(-1) * right.unsqueeze(-2)

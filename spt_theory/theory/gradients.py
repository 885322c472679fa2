r"""The score gradients of the two losses in closed form: T1 at any point, T2 and T5 at uniform attention.

Notation (as in ``proofs/README.md``): ``n`` tokens, values ``V`` in R^{n x d} with rows ``v_j``,
scores ``S`` in R^{n x n}, attention ``A = softmax_rows(S)``, ``1`` the all-ones vector and
``<X, Y> = sum_ij X_ij Y_ij``.  The supervised loss reads the mean-pooled output,

    L_sup(S) = l(z),    z = (1/n) 1^T A V,

the reconstruction loss reads the rows ``y_i`` of ``A V`` at masked positions,

    L_rec(S) = sum_{i masked} l_i(y_i).

"Uniform attention" means every row of ``S`` is constant (``A = 1 1^T / n``), the state of a
Transformer whose score matrix carries no token-pair information.  Every function accepts leading
batch dimensions on its tensor arguments.  The other closed forms build on these:
:mod:`~spt_theory.theory.patterns` (score directions), :mod:`~spt_theory.theory.blind_directions` (T3),
:mod:`~spt_theory.theory.rank_one` (T4), :mod:`~spt_theory.theory.readout` (X4).  Depends only on torch.
"""

from __future__ import annotations

import torch
from torch import Tensor


def attention(S: Tensor) -> Tensor:
    r"""Row-softmax attention ``A_ij = exp(S_ij) / sum_k exp(S_ik)``.

    Parameters
    ----------
    S : Tensor [..., n, n]
        Attention scores.

    Returns
    -------
    Tensor [..., n, n]
        ``A``, each row a probability vector.

    References
    ----------
    proofs/README.md (notation).

    Examples
    --------
    >>> attention(torch.zeros(3, 3)).sum(dim=-1).tolist()
    [1.0, 1.0, 1.0]
    """
    return torch.softmax(S, dim=-1)


def row_centre(X: Tensor) -> Tensor:
    r"""``X - (X 1) 1^T / n``: subtract each row's mean.

    Adding a constant to a row of ``S`` leaves ``softmax_rows(S)`` unchanged, so only the
    row-centred part of a score direction can matter.

    Parameters
    ----------
    X : Tensor [..., m, n]
        Any matrix (or batch of them).

    Returns
    -------
    Tensor [..., m, n]
        ``X`` with every row summing to zero.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> row_centre(torch.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[-1.0, 0.0, 1.0]]
    """
    return X - X.mean(dim=-1, keepdim=True)


def pooled_output(S: Tensor, V: Tensor) -> Tensor:
    r"""The mean-pooled attention output ``z = (1/n) 1^T A V = (1/n) c^T V``, ``c = A^T 1`` (T1).

    Parameters
    ----------
    S : Tensor [..., n, n]
        Attention scores.
    V : Tensor [..., n, d]
        Values, rows ``v_j``.

    Returns
    -------
    Tensor [..., d]
        ``z``.

    References
    ----------
    proofs/T1_column_sums.md.

    Examples
    --------
    At uniform attention ``z`` is the mean of the values:

    >>> pooled_output(torch.zeros(2, 2), torch.tensor([[1.0, 0.0], [3.0, 2.0]])).tolist()
    [2.0, 1.0]
    """
    return attention(S).mean(dim=-2).unsqueeze(-2).matmul(V).squeeze(-2)


def column_sums(A: Tensor) -> Tensor:
    r"""``c = A^T 1``: how much attention each token receives in total (T1).

    Parameters
    ----------
    A : Tensor [..., n, n]
        Attention (or any score pattern).

    Returns
    -------
    Tensor [..., n]
        The column sums ``c_j = sum_i A_ij``.

    References
    ----------
    proofs/T1_column_sums.md.

    Examples
    --------
    >>> column_sums(torch.tensor([[1.0, 0.0], [0.5, 0.5]])).tolist()
    [1.5, 0.5]
    """
    return A.sum(dim=-2)


def pooled_value_scores(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""``b_j = (1/n) grad l(z)^T v_j``: the gradient of ``L_sup`` with respect to the column sum ``c_j``.

    Since ``z = (1/n) c^T V``, ``dL_sup/dc_j = b_j``; T1-T4 are written in ``b``.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values, rows ``v_j``.
    grad_z : Tensor [..., d]
        ``grad l(z)``, the loss gradient at the pooled output.

    Returns
    -------
    Tensor [..., n]
        ``b``.

    References
    ----------
    proofs/T1_column_sums.md.

    Examples
    --------
    >>> pooled_value_scores(torch.tensor([[1.0], [3.0]]), torch.tensor([1.0])).tolist()
    [0.5, 1.5]
    """
    return V.matmul(grad_z.unsqueeze(-1)).squeeze(-1) / V.shape[-2]


def sup_score_grad(S: Tensor, V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T1 at any point: ``dL_sup/dS = A o (1 b^T - (A b) 1^T)``, ``b_j = (1/n) grad l(z)^T v_j``.

    Since ``z = (1/n) c^T V``, ``dL_sup/dA = 1 b^T`` (all rows equal: only column sums are seen);
    the softmax backward ``dL/dS_ij = A_ij (U_ij - sum_k A_ik U_ik)`` with ``U = 1 b^T`` gives the
    formula (``o`` is the entrywise product).

    Parameters
    ----------
    S : Tensor [..., n, n]
        Attention scores.
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``, the loss gradient at the pooled output.

    Returns
    -------
    Tensor [..., n, n]
        ``dL_sup/dS``; every row sums to zero.

    References
    ----------
    proofs/T1_column_sums.md.
    """
    A = attention(S)
    b = pooled_value_scores(V, grad_z).unsqueeze(-2)
    return A * (b - (A * b).sum(dim=-1, keepdim=True))


def sup_score_grad_uniform(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T2: at uniform attention ``dL_sup/dS = (1/n) 1 (b - mean(b) 1)^T``, ``b_j = (1/n) grad l(z)^T v_j``.

    All rows are equal (rank <= 1) and every row sums to zero.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    grad_z : Tensor [..., d]
        ``grad l(z)``.

    Returns
    -------
    Tensor [..., n, n]
        ``dL_sup/dS`` at ``A = 1 1^T / n``.

    References
    ----------
    proofs/T2_uniform_gradient.md.

    Examples
    --------
    >>> G = sup_score_grad_uniform(torch.tensor([[1.0], [3.0]]), torch.tensor([1.0]))
    >>> G.tolist()
    [[-0.25, 0.25], [-0.25, 0.25]]
    """
    b = pooled_value_scores(V, grad_z)
    n = V.shape[-2]
    row = (b - b.mean(dim=-1, keepdim=True)) / n
    return row.unsqueeze(-2).expand(*row.shape[:-1], n, n).contiguous()


def rec_score_grad_uniform(V: Tensor, G: Tensor, masked: Tensor) -> Tensor:
    r"""T5: at uniform attention ``dL_rec/dS = (1/n) (R - R 1 1^T / n)``, ``R_ij = g_i^T v_j``.

    Rows of ``R`` at unmasked positions are zero.  Unlike T2 the rows differ, one per masked token.

    Parameters
    ----------
    V : Tensor [..., n, d]
        Values.
    G : Tensor [..., n, d]
        Per-row loss gradients ``g_i = grad l_i(y_i)``.
    masked : Tensor [n], bool
        The masked positions.

    Returns
    -------
    Tensor [..., n, n]
        ``dL_rec/dS`` at uniform attention.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    R = (G * masked.unsqueeze(-1).to(G.dtype)).matmul(V.transpose(-1, -2))
    return row_centre(R) / V.shape[-2]

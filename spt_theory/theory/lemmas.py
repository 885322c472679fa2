r"""Closed forms of the exact theory (lemmas T1-T5; proofs in ``proofs/``).

Notation (as in ``proofs/README.md``): ``n`` tokens, values ``V`` in R^{n x d} with rows ``v_j``,
scores ``S`` in R^{n x n}, attention ``A = softmax_rows(S)``, ``1`` the all-ones vector and
``<X, Y> = sum_ij X_ij Y_ij``.  The supervised loss reads the mean-pooled output,

    L_sup(S) = l(z),    z = (1/n) 1^T A V,

the reconstruction loss reads the rows ``y_i`` of ``A V`` at masked positions,

    L_rec(S) = sum_{i masked} l_i(y_i).

"Uniform attention" means every row of ``S`` is constant (``A = 1 1^T / n``), the state of a
Transformer whose score matrix carries no token-pair information.  Every function accepts leading
batch dimensions on its tensor arguments unless it builds a pattern from ``n``.  Depends only on
torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def attention(S: Tensor) -> Tensor:
    r"""Row-softmax attention ``A_ij = exp(S_ij) / sum_k exp(S_ik)``."""
    return torch.softmax(S, dim=-1)


def row_centre(X: Tensor) -> Tensor:
    r"""``X - (X 1) 1^T / n``: subtract each row's mean.

    Adding a constant to a row of ``S`` leaves ``softmax_rows(S)`` unchanged, so only the
    row-centred part of a score direction can matter.
    """
    return X - X.mean(dim=-1, keepdim=True)


def pooled_output(S: Tensor, V: Tensor) -> Tensor:
    r"""The mean-pooled attention output ``z = (1/n) 1^T A V = (1/n) c^T V``, ``c = A^T 1`` (T1)."""
    return attention(S).mean(dim=-2).unsqueeze(-2).matmul(V).squeeze(-2)


def column_sums(A: Tensor) -> Tensor:
    r"""``c = A^T 1``: how much attention each token receives in total (T1)."""
    return A.sum(dim=-2)


def _pooled_value_scores(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""``b_j = (1/n) grad l(z)^T v_j``, the gradient of ``L_sup`` w.r.t. the column sum ``c_j``."""
    return V.matmul(grad_z.unsqueeze(-1)).squeeze(-1) / V.shape[-2]


def sup_score_grad(S: Tensor, V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T1 at any point: ``dL_sup/dS = A o (1 b^T - (A b) 1^T)``, ``b_j = (1/n) grad l(z)^T v_j``.

    Since ``z = (1/n) c^T V``, ``dL_sup/dA = 1 b^T`` (all rows equal: only column sums are seen);
    the softmax backward ``dL/dS_ij = A_ij (U_ij - sum_k A_ik U_ik)`` with ``U = 1 b^T`` gives the
    formula (``o`` is the entrywise product).
    """
    A = attention(S)
    b = _pooled_value_scores(V, grad_z).unsqueeze(-2)
    return A * (b - (A * b).sum(dim=-1, keepdim=True))


def sup_score_grad_uniform(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T2: at uniform attention ``dL_sup/dS = (1/n) 1 (b - mean(b) 1)^T``, ``b_j = (1/n) grad l(z)^T v_j``.

    All rows are equal (rank <= 1) and every row sums to zero.
    """
    b = _pooled_value_scores(V, grad_z)
    n = V.shape[-2]
    row = (b - b.mean(dim=-1, keepdim=True)) / n
    return row.unsqueeze(-2).expand(*row.shape[:-1], n, n).contiguous()


def rec_score_grad_uniform(V: Tensor, G: Tensor, masked: Tensor) -> Tensor:
    r"""T5: at uniform attention ``dL_rec/dS = (1/n) (R - R 1 1^T / n)``, ``R_ij = g_i^T v_j``.

    ``G`` holds the per-row loss gradients ``g_i = grad l_i(y_i)`` (shape ``n x d``); rows of ``R``
    at unmasked positions are zero (``masked`` is a boolean vector of length ``n``).  Unlike T2
    the rows differ, one per masked token.
    """
    R = (G * masked.unsqueeze(-1).to(G.dtype)).matmul(V.transpose(-1, -2))
    return row_centre(R) / V.shape[-2]


def blind_projection(grad_S: Tensor, P: Tensor) -> Tensor:
    r"""``<grad_S, P> = sum_ij (grad_S)_ij P_ij``: the first-order change of the loss along ``P``."""
    return (grad_S * P).sum(dim=(-2, -1))


def predicted_blind_projection(V: Tensor, grad_z: Tensor, P: Tensor) -> Tensor:
    r"""T3: ``<dL_sup/dS, P> = (1/n) (b - mean(b) 1)^T P^T 1`` at uniform attention.

    Zero whenever all column sums ``P^T 1`` are equal (circulant or column-centred ``P``).
    """
    b = _pooled_value_scores(V, grad_z)
    centred = b - b.mean(dim=-1, keepdim=True)
    return (centred * column_sums(P)).sum(dim=-1) / V.shape[-2]


def _offsets(n: int, circular: bool) -> Tensor:
    """``|i - j|``, or the circular distance ``min(|i - j|, n - |i - j|)``, as an ``n x n`` tensor."""
    i = torch.arange(n)
    dist = (i.unsqueeze(1) - i.unsqueeze(0)).abs()
    return torch.minimum(dist, n - dist) if circular else dist


def _kernel_at(k: Sequence[float] | Tensor, offsets: Tensor) -> Tensor:
    """``k[offset]``, and 0 where the offset lies beyond the kernel's support."""
    k = torch.as_tensor(k, dtype=torch.float64)
    padded = torch.cat([k, k.new_zeros(max(int(offsets.max()) + 1 - k.numel(), 0))])
    return padded[offsets]


def circulant_kernel(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""``P_ij = k(min(|i-j|, n-|i-j|))`` (``k[m]`` for offset ``m``, 0 beyond ``len(k)``).

    Circulant, so every column sums to ``sum_i k(dist(i, 0))``: blind to ``L_sup`` (T3).
    """
    return _kernel_at(k, _offsets(n, circular=True))


def toeplitz_kernel(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""``P_ij = k(|i-j|)`` (``k[m]`` for offset ``m``, 0 beyond ``len(k)``)."""
    return _kernel_at(k, _offsets(n, circular=False))


def band_mask(n: int, width: int) -> Tensor:
    r"""``B_ij = 1{|i-j| <= width}`` in float64: the band a proximity-biased attention fills."""
    return (_offsets(n, circular=False) <= width).to(torch.float64)


def toeplitz_column_sum_deviation(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 boundary term: ``delta_j = F - c_j = T(j) + T(n-1-j)`` for ``P = toeplitz_kernel(n, k)``.

    With ``F = k(0) + 2 sum_{m=1}^{n-1} k(m)`` and the tail ``T(m) = sum_{r=m+1}^{n-1} k(r)``,
    column ``j`` (0-based) sums to ``c_j = F - T(j) - T(n-1-j)``: a kernel of width ``w`` has
    ``delta_j = 0`` for ``w <= j <= n-1-w``; only the ``2w`` boundary columns deviate.
    """
    values = _kernel_at(k, torch.arange(n))
    tail = values.flip(0).cumsum(0).flip(0) - values  # T(m) = sum_{r > m} k(r)
    return tail + tail.flip(0)


def toeplitz_boundary_projection(V: Tensor, grad_z: Tensor, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 for ``P = toeplitz_kernel(n, k)``: ``<dL_sup/dS, P> = -(1/n) (b - mean(b) 1)^T delta``.

    ``delta`` from :func:`toeplitz_column_sum_deviation`; the constant ``F`` of the column sums
    drops out because ``b - mean(b) 1`` sums to zero.
    """
    n = V.shape[-2]
    b = _pooled_value_scores(V, grad_z)
    delta = toeplitz_column_sum_deviation(n, k).to(b.dtype)
    return -((b - b.mean(dim=-1, keepdim=True)) * delta).sum(dim=-1) / n


def stable_norm(x: Tensor) -> Tensor:
    r"""``||x||_2`` over the last dimension, as ``m ||x / m||`` with ``m = max |x_j|``: the plain sum of
    squares underflows to 0 for entries below ~1e-154 (a saturated loss gives such gradients)."""
    m = x.abs().amax(dim=-1, keepdim=True)
    safe = torch.where(m > 0, m, torch.ones_like(m))
    return (m * (x / safe).norm(dim=-1, keepdim=True)).squeeze(-1)


def toeplitz_projection_bound(V: Tensor, grad_z: Tensor, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 bound: ``|<dL_sup/dS, P>| <= (1/n) ||b - mean(b) 1|| ||delta - mean(delta) 1||``.

    Cauchy-Schwarz on ``<dL_sup/dS, P> = -(1/n) (b - mean(b) 1)^T (delta - mean(delta) 1)``;
    equality iff ``b - mean(b) 1`` is parallel to ``delta - mean(delta) 1``, so the bound is tight.
    """
    n = V.shape[-2]
    b = _pooled_value_scores(V, grad_z)
    delta = toeplitz_column_sum_deviation(n, k).to(b.dtype)
    return stable_norm(b - b.mean(dim=-1, keepdim=True)) * (delta - delta.mean()).norm() / n


def toeplitz_max_cosine(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""The largest ``|cos|`` between ``dL_sup/dS`` at uniform attention and ``P = toeplitz_kernel(n, k)``.

    ``||dL_sup/dS||_F = ||b - mean(b) 1|| / sqrt(n)``, so the tight bound of
    :func:`toeplitz_projection_bound` gives ``||delta - mean(delta) 1|| / (sqrt(n) ||P||_F)``,
    attained when ``b - mean(b) 1`` is parallel to ``delta - mean(delta) 1``.  For the band
    ``k = 1`` on offsets ``0..w`` this is at most ``sqrt(w (w+1) / 3) / n`` up to O(1/n^2).
    """
    delta = toeplitz_column_sum_deviation(n, k)
    return (delta - delta.mean()).norm() / (n ** 0.5 * toeplitz_kernel(n, k).norm())


def proximity_directions(n: int, max_offset: int, circular: bool) -> Tensor:
    r"""Orthonormal basis ``(K, n, n)`` of the proximity subspace, ``K = max_offset``.

    Direction ``k`` starts from the symmetric pattern ``1{dist(i, j) = k}`` (``dist = |i-j|``, or
    ``min(|i-j|, n-|i-j|)`` if ``circular``), is row-centred (row-constant score changes leave the
    softmax unchanged) and the ``K`` patterns are orthonormalised in ``<X, Y>`` by Gram-Schmidt in
    order of offset, each oriented so that ``<D_k, pattern_k> > 0`` (raising scores at offset
    ``k`` has a positive coordinate).
    """
    limit = n // 2 if circular else n - 1
    if not 1 <= max_offset <= limit:
        raise ValueError(f"max_offset must be in [1, {limit}] for n={n}, got {max_offset}")
    dist = _offsets(n, circular)
    patterns = torch.stack([(dist == k).to(torch.float64) for k in range(1, max_offset + 1)])
    q, r = torch.linalg.qr(row_centre(patterns).reshape(max_offset, n * n).T)
    return (q * torch.sign(torch.diagonal(r))).T.reshape(max_offset, n, n)


def proximity_coordinates(grad_S: Tensor, directions: Tensor) -> Tensor:
    r"""``<grad_S, D_k>`` for each direction: shape ``(..., K)``."""
    return torch.einsum("...ij,kij->...k", grad_S, directions.to(grad_S.dtype))


def proximity_share(grad_S: Tensor, directions: Tensor) -> Tensor:
    r"""``||proj_span(D) grad_S||_F / ||grad_S||_F`` in [0, 1] (NaN for a zero gradient).

    ``directions`` must be orthonormal (as :func:`proximity_directions` returns), so the projection's
    norm is the norm of the coordinates ``<grad_S, D_k>``.
    """
    coords = proximity_coordinates(grad_S, directions)
    return coords.norm(dim=-1) / grad_S.flatten(-2).norm(dim=-1)


def score_grad_to_bilinear(H: Tensor, grad_S: Tensor) -> Tensor:
    r"""T4 chain rule: for ``S = H M H^T``, ``dL/dM = H^T (dL/dS) H``."""
    return H.transpose(-1, -2).matmul(grad_S).matmul(H)


def sup_grad_M_uniform(H: Tensor, V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T4: at uniform attention ``dL_sup/dM = H^T G H = (1/n) (H^T 1) ((b - mean(b) 1)^T H)``.

    An outer product of two vectors (``G`` from T2), hence rank <= 1; a gradient step on ``M``
    changes ``S = H M H^T`` by the rank-one matrix ``H (dL/dM) H^T``.
    """
    b = _pooled_value_scores(V, grad_z)
    left = H.sum(dim=-2) / V.shape[-2]
    right = (b - b.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2)
    return left.unsqueeze(-1) * right.unsqueeze(-2)


def singular_value_ratio(X: Tensor) -> Tensor:
    r"""``sigma_2 / sigma_1`` of a matrix: 0 for rank one (NaN for the zero matrix)."""
    s = torch.linalg.svdvals(X)
    return s[..., 1] / s[..., 0]


def rank_one_distance(X: Tensor) -> Tensor:
    r"""Share of ``||X||_F`` outside its best rank-one approximation: ``sqrt(1 - sigma_1^2 / ||X||_F^2)``.

    0 for a rank-one matrix; the relative Frobenius error of the best rank-one approximation
    (Eckart-Young).  A banded proximity pattern of width ``w`` on ``n`` tokens has
    ``sigma_1 <= 2w + 1`` while ``||X||_F^2 ~ (2w + 1) n``, so it stays near 1.
    """
    s = torch.linalg.svdvals(X)
    return (1 - s[..., 0] ** 2 / (s ** 2).sum(dim=-1)).clamp(min=0).sqrt()


def rank_for_energy(X: Tensor, energy: float) -> int:
    r"""Smallest ``r`` with ``sum_{i<=r} sigma_i^2 >= energy ||X||_F^2``: rank-one steps needed."""
    s2 = torch.linalg.svdvals(X) ** 2
    return int((s2.cumsum(0) / s2.sum() < energy).sum()) + 1


# --------------------------------------------------------------------------- X4: single-row readout
# X4 (proofs/X4_readout_blindness.md): the readout is one row of A V instead of the mean,
# L_row(S) = l(y_r), y_r = e_r^T A V: a CLS token (r = 0) or the last token (r = n - 1) of a
# 1-layer model.  beta_j = grad l(y_r)^T v_j (no 1/n: nothing is averaged).


def _row_value_scores(V: Tensor, grad_y: Tensor) -> Tensor:
    r"""``beta_j = grad l(y_r)^T v_j``, the gradient of ``L_row`` w.r.t. ``A_rj``."""
    return V.matmul(grad_y.unsqueeze(-1)).squeeze(-1)


def row_score_grad(S: Tensor, V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (a), any point: ``dL_row/dS = e_r (A_r o (beta - (A_r . beta) 1))^T``; every other row is 0.

    ``L_row`` reads only row ``r`` of ``A``, which depends only on row ``r`` of ``S``.
    """
    A_r = attention(S)[..., r, :]
    beta = _row_value_scores(V, grad_y)
    row = A_r * (beta - (A_r * beta).sum(dim=-1, keepdim=True))
    grad = torch.zeros_like(S)
    grad[..., r, :] = row
    return grad


def row_score_grad_uniform(V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (b): at uniform attention ``dL_row/dS = (1/n) e_r (beta - mean(beta) 1)^T``: rank <= 1, one
    non-zero row, which sums to 0."""
    beta = _row_value_scores(V, grad_y)
    n = V.shape[-2]
    grad = V.new_zeros(*V.shape[:-2], n, n)
    grad[..., r, :] = (beta - beta.mean(dim=-1, keepdim=True)) / n
    return grad


def predicted_row_projection(V: Tensor, grad_y: Tensor, P: Tensor, r: int) -> Tensor:
    r"""X4 (c): ``<dL_row/dS, P> = (1/n) (beta - mean(beta) 1)^T P_r`` at uniform attention
    (``P_r`` = row ``r`` of ``P``): zero for every ``(V, l)`` iff ``P_r`` is constant."""
    beta = _row_value_scores(V, grad_y)
    centred = beta - beta.mean(dim=-1, keepdim=True)
    return (centred * P[..., r, :]).sum(dim=-1) / V.shape[-2]


def row_projection_bound(V: Tensor, grad_y: Tensor, P: Tensor, r: int) -> Tensor:
    r"""X4 (c) bound: ``|<dL_row/dS, P>| <= (1/n) ||beta - mean(beta) 1|| ||P_r - mean(P_r) 1||``,
    attained iff ``beta - mean(beta) 1`` is parallel to ``P_r - mean(P_r) 1``."""
    beta = _row_value_scores(V, grad_y)
    return ((beta - beta.mean(dim=-1, keepdim=True)).norm(dim=-1)
            * row_centre(P[..., r, :].unsqueeze(-2)).squeeze(-2).norm(dim=-1) / V.shape[-2])


def row_max_cosine(P: Tensor, r: int) -> Tensor:
    r"""The largest ``|cos(dL_row/dS, P)|`` at uniform attention: ``||P_r - mean(P_r) 1|| / ||P||_F``.

    For the band ``1{|i-j| <= w}`` on ``n`` tokens: ``sqrt(m (1 - m/n) / ((2w+1) n - w (w+1)))`` with
    ``m = w + 1`` at an end row (CLS ``r = 0``, last ``r = n-1``) and ``m = 2w + 1`` inside: about
    ``1/sqrt(n)``, against ``~ sqrt(w(w+1)/3) / n`` for mean pooling (T3).
    """
    return row_centre(P[..., r, :].unsqueeze(-2)).squeeze(-2).norm(dim=-1) / P.flatten(-2).norm(dim=-1)


def band_row_max_cosine(n: int, width: int, r: int) -> float:
    r"""Closed form of :func:`row_max_cosine` for the band ``1{|i-j| <= width}``: ``m`` = number of
    ones in row ``r``, ``sqrt(m (1 - m/n) / ((2w+1) n - w(w+1)))`` (for ``n > width``)."""
    m = min(r, width) + min(n - 1 - r, width) + 1
    return (m * (1 - m / n) / ((2 * width + 1) * n - width * (width + 1))) ** 0.5


def row_grad_M_uniform(H: Tensor, V: Tensor, grad_y: Tensor, r: int) -> Tensor:
    r"""X4 (d): with ``S = H M H^T``, at uniform attention ``dL_row/dM = (1/n) h_r ((beta - mean(beta) 1)^T H)``.

    Rank <= 1 like T4, but the left factor is the readout token's own ``h_r`` instead of the bag
    mean ``(1/n) H^T 1``: the update couples the query at ``r`` with individual keys.
    """
    beta = _row_value_scores(V, grad_y)
    right = (beta - beta.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2) / V.shape[-2]
    return H[..., r, :].unsqueeze(-1) * right.unsqueeze(-2)

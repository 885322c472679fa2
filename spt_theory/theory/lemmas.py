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
    r"""Row-softmax attention ``A_ij = exp(S_ij) / sum_k exp(S_ik)``.

    Parameters
    ----------
    S : Tensor, shape (..., n, n)
        Attention scores.

    Returns
    -------
    Tensor, shape (..., n, n)
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
    X : Tensor, shape (..., m, n)
        Any matrix (or batch of them).

    Returns
    -------
    Tensor, shape (..., m, n)
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
    S : Tensor, shape (..., n, n)
        Attention scores.
    V : Tensor, shape (..., n, d)
        Values, rows ``v_j``.

    Returns
    -------
    Tensor, shape (..., d)
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
    A : Tensor, shape (..., n, n)
        Attention (or any score pattern).

    Returns
    -------
    Tensor, shape (..., n)
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


def _pooled_value_scores(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""``b_j = (1/n) grad l(z)^T v_j``, the gradient of ``L_sup`` w.r.t. the column sum ``c_j``."""
    return V.matmul(grad_z.unsqueeze(-1)).squeeze(-1) / V.shape[-2]


def sup_score_grad(S: Tensor, V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T1 at any point: ``dL_sup/dS = A o (1 b^T - (A b) 1^T)``, ``b_j = (1/n) grad l(z)^T v_j``.

    Since ``z = (1/n) c^T V``, ``dL_sup/dA = 1 b^T`` (all rows equal: only column sums are seen);
    the softmax backward ``dL/dS_ij = A_ij (U_ij - sum_k A_ik U_ik)`` with ``U = 1 b^T`` gives the
    formula (``o`` is the entrywise product).

    Parameters
    ----------
    S : Tensor, shape (..., n, n)
        Attention scores.
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``, the loss gradient at the pooled output.

    Returns
    -------
    Tensor, shape (..., n, n)
        ``dL_sup/dS``; every row sums to zero.

    References
    ----------
    proofs/T1_column_sums.md.
    """
    A = attention(S)
    b = _pooled_value_scores(V, grad_z).unsqueeze(-2)
    return A * (b - (A * b).sum(dim=-1, keepdim=True))


def sup_score_grad_uniform(V: Tensor, grad_z: Tensor) -> Tensor:
    r"""T2: at uniform attention ``dL_sup/dS = (1/n) 1 (b - mean(b) 1)^T``, ``b_j = (1/n) grad l(z)^T v_j``.

    All rows are equal (rank <= 1) and every row sums to zero.

    Parameters
    ----------
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``.

    Returns
    -------
    Tensor, shape (..., n, n)
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
    b = _pooled_value_scores(V, grad_z)
    n = V.shape[-2]
    row = (b - b.mean(dim=-1, keepdim=True)) / n
    return row.unsqueeze(-2).expand(*row.shape[:-1], n, n).contiguous()


def rec_score_grad_uniform(V: Tensor, G: Tensor, masked: Tensor) -> Tensor:
    r"""T5: at uniform attention ``dL_rec/dS = (1/n) (R - R 1 1^T / n)``, ``R_ij = g_i^T v_j``.

    Rows of ``R`` at unmasked positions are zero.  Unlike T2 the rows differ, one per masked token.

    Parameters
    ----------
    V : Tensor, shape (..., n, d)
        Values.
    G : Tensor, shape (..., n, d)
        Per-row loss gradients ``g_i = grad l_i(y_i)``.
    masked : Tensor, shape (n,), bool
        The masked positions.

    Returns
    -------
    Tensor, shape (..., n, n)
        ``dL_rec/dS`` at uniform attention.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    R = (G * masked.unsqueeze(-1).to(G.dtype)).matmul(V.transpose(-1, -2))
    return row_centre(R) / V.shape[-2]


def blind_projection(grad_S: Tensor, P: Tensor) -> Tensor:
    r"""``<grad_S, P> = sum_ij (grad_S)_ij P_ij``: the first-order change of the loss along ``P``.

    Parameters
    ----------
    grad_S : Tensor, shape (..., n, n)
        A score gradient.
    P : Tensor, shape (n, n) or (..., n, n)
        A score direction.

    Returns
    -------
    Tensor, shape (...)
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
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``.
    P : Tensor, shape (n, n)
        A score direction.

    Returns
    -------
    Tensor, shape (...)
        The first-order change of ``L_sup`` along ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    A circulant direction is blind:

    >>> V, g = torch.randn(6, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    >>> abs(predicted_blind_projection(V, g, circulant_kernel(6, [1.0, 1.0]))) < 1e-12
    tensor(True)
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

    Parameters
    ----------
    n : int
        Tokens.
    k : sequence of float or Tensor, shape (w,)
        The kernel by offset.

    Returns
    -------
    Tensor, shape (n, n), float64
        ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> column_sums(circulant_kernel(5, [1.0, 0.5])).tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0]
    """
    return _kernel_at(k, _offsets(n, circular=True))


def toeplitz_kernel(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""``P_ij = k(|i-j|)`` (``k[m]`` for offset ``m``, 0 beyond ``len(k)``).

    Parameters
    ----------
    n : int
        Tokens.
    k : sequence of float or Tensor, shape (w,)
        The kernel by offset.

    Returns
    -------
    Tensor, shape (n, n), float64
        ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> toeplitz_kernel(3, [2.0, 1.0]).tolist()
    [[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]]
    """
    return _kernel_at(k, _offsets(n, circular=False))


def band_mask(n: int, width: int) -> Tensor:
    r"""``B_ij = 1{|i-j| <= width}`` in float64: the band a proximity-biased attention fills.

    Parameters
    ----------
    n : int
        Tokens.
    width : int
        The band's half-width ``w``.

    Returns
    -------
    Tensor, shape (n, n), float64
        ``B``.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> int(band_mask(4, 1).sum())
    10
    """
    return (_offsets(n, circular=False) <= width).to(torch.float64)


def toeplitz_column_sum_deviation(n: int, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 boundary term: ``delta_j = F - c_j = T(j) + T(n-1-j)`` for ``P = toeplitz_kernel(n, k)``.

    With ``F = k(0) + 2 sum_{m=1}^{n-1} k(m)`` and the tail ``T(m) = sum_{r=m+1}^{n-1} k(r)``,
    column ``j`` (0-based) sums to ``c_j = F - T(j) - T(n-1-j)``: a kernel of width ``w`` has
    ``delta_j = 0`` for ``w <= j <= n-1-w``; only the ``2w`` boundary columns deviate.

    Parameters
    ----------
    n : int
        Tokens.
    k : sequence of float or Tensor, shape (w,)
        The kernel by offset.

    Returns
    -------
    Tensor, shape (n,), float64
        ``delta``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> toeplitz_column_sum_deviation(5, [1.0, 1.0]).tolist()
    [1.0, 0.0, 0.0, 0.0, 1.0]
    """
    values = _kernel_at(k, torch.arange(n))
    tail = values.flip(0).cumsum(0).flip(0) - values  # T(m) = sum_{r > m} k(r)
    return tail + tail.flip(0)


def toeplitz_boundary_projection(V: Tensor, grad_z: Tensor, k: Sequence[float] | Tensor) -> Tensor:
    r"""T3 for ``P = toeplitz_kernel(n, k)``: ``<dL_sup/dS, P> = -(1/n) (b - mean(b) 1)^T delta``.

    ``delta`` from :func:`toeplitz_column_sum_deviation`; the constant ``F`` of the column sums
    drops out because ``b - mean(b) 1`` sums to zero.

    Parameters
    ----------
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``.
    k : sequence of float or Tensor, shape (w,)
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor, shape (...)
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
    b = _pooled_value_scores(V, grad_z)
    delta = toeplitz_column_sum_deviation(n, k).to(b.dtype)
    return -((b - b.mean(dim=-1, keepdim=True)) * delta).sum(dim=-1) / n


def stable_norm(x: Tensor) -> Tensor:
    r"""``||x||_2`` over the last dimension, as ``m ||x / m||`` with ``m = max |x_j|``.

    The plain sum of squares underflows to 0 for entries below ~1e-154 (a saturated loss gives
    such gradients).

    Parameters
    ----------
    x : Tensor, shape (..., m)
        Vectors.

    Returns
    -------
    Tensor, shape (...)
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
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``.
    k : sequence of float or Tensor, shape (w,)
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor, shape (...)
        The bound.

    References
    ----------
    proofs/T3_blind_directions.md.
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

    Parameters
    ----------
    n : int
        Tokens.
    k : sequence of float or Tensor, shape (w,)
        The Toeplitz kernel by offset.

    Returns
    -------
    Tensor, shape (), float64
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


def proximity_directions(n: int, max_offset: int, circular: bool) -> Tensor:
    r"""Orthonormal basis ``(K, n, n)`` of the proximity subspace, ``K = max_offset``.

    Direction ``k`` starts from the symmetric pattern ``1{dist(i, j) = k}`` (``dist = |i-j|``, or
    ``min(|i-j|, n-|i-j|)`` if ``circular``), is row-centred (row-constant score changes leave the
    softmax unchanged) and the ``K`` patterns are orthonormalised in ``<X, Y>`` by Gram-Schmidt in
    order of offset, each oriented so that ``<D_k, pattern_k> > 0`` (raising scores at offset
    ``k`` has a positive coordinate).

    Parameters
    ----------
    n : int
        Tokens.
    max_offset : int
        ``K``, in ``[1, n - 1]`` (``[1, n // 2]`` if ``circular``).
    circular : bool
        Whether distances wrap around.

    Returns
    -------
    Tensor, shape (K, n, n), float64
        ``D_1 .. D_K``, orthonormal in the Frobenius inner product.

    Raises
    ------
    ValueError
        ``max_offset`` out of range.

    References
    ----------
    proofs/T3_blind_directions.md, proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> D = proximity_directions(8, 2, circular=False)
    >>> torch.allclose(torch.einsum("aij,bij->ab", D, D), torch.eye(2, dtype=torch.float64))
    True
    """
    limit = n // 2 if circular else n - 1
    if not 1 <= max_offset <= limit:
        raise ValueError(f"max_offset must be in [1, {limit}] for n={n}, got {max_offset}")
    dist = _offsets(n, circular)
    patterns = torch.stack([(dist == k).to(torch.float64) for k in range(1, max_offset + 1)])
    q, r = torch.linalg.qr(row_centre(patterns).reshape(max_offset, n * n).T)
    return (q * torch.sign(torch.diagonal(r))).T.reshape(max_offset, n, n)


def proximity_coordinates(grad_S: Tensor, directions: Tensor) -> Tensor:
    r"""``<grad_S, D_k>`` for each direction.

    Parameters
    ----------
    grad_S : Tensor, shape (..., n, n)
        A score gradient.
    directions : Tensor, shape (K, n, n)
        The directions ``D_k`` (:func:`proximity_directions`).

    Returns
    -------
    Tensor, shape (..., K)
        The coordinates.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    return torch.einsum("...ij,kij->...k", grad_S, directions.to(grad_S.dtype))


def proximity_share(grad_S: Tensor, directions: Tensor) -> Tensor:
    r"""``||proj_span(D) grad_S||_F / ||grad_S||_F`` in [0, 1] (NaN for a zero gradient).

    ``directions`` must be orthonormal (as :func:`proximity_directions` returns), so the projection's
    norm is the norm of the coordinates ``<grad_S, D_k>``.

    Parameters
    ----------
    grad_S : Tensor, shape (..., n, n)
        A score gradient.
    directions : Tensor, shape (K, n, n)
        Orthonormal directions.

    Returns
    -------
    Tensor, shape (...)
        The share of the gradient in their span.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> D = proximity_directions(6, 2, circular=False)
    >>> round(proximity_share(D[0], D).item(), 12)
    1.0
    """
    coords = proximity_coordinates(grad_S, directions)
    return coords.norm(dim=-1) / grad_S.flatten(-2).norm(dim=-1)


def score_grad_to_bilinear(H: Tensor, grad_S: Tensor) -> Tensor:
    r"""T4 chain rule: for ``S = H M H^T``, ``dL/dM = H^T (dL/dS) H``.

    Parameters
    ----------
    H : Tensor, shape (..., n, D)
        The layer's input rows (with a bias column where ``M`` is augmented).
    grad_S : Tensor, shape (..., n, n)
        ``dL/dS``.

    Returns
    -------
    Tensor, shape (..., D, D)
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
    H : Tensor, shape (..., n, D)
        The layer's input rows.
    V : Tensor, shape (..., n, d)
        Values.
    grad_z : Tensor, shape (..., d)
        ``grad l(z)``.

    Returns
    -------
    Tensor, shape (..., D, D)
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
    b = _pooled_value_scores(V, grad_z)
    left = H.sum(dim=-2) / V.shape[-2]
    right = (b - b.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2)
    return left.unsqueeze(-1) * right.unsqueeze(-2)


def singular_value_ratio(X: Tensor) -> Tensor:
    r"""``sigma_2 / sigma_1`` of a matrix: 0 for rank one (NaN for the zero matrix).

    Parameters
    ----------
    X : Tensor, shape (..., m, n)
        Matrices with ``min(m, n) >= 2``.

    Returns
    -------
    Tensor, shape (...)
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
    X : Tensor, shape (..., m, n)
        Matrices.

    Returns
    -------
    Tensor, shape (...)
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
    X : Tensor, shape (m, n)
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

    Parameters
    ----------
    S : Tensor, shape (..., n, n)
        Attention scores.
    V : Tensor, shape (..., n, d)
        Values.
    grad_y : Tensor, shape (..., d)
        ``grad l(y_r)`` at the readout row.
    r : int
        The readout position (0: CLS, ``n - 1``: last token).

    Returns
    -------
    Tensor, shape (..., n, n)
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
    V : Tensor, shape (..., n, d)
        Values.
    grad_y : Tensor, shape (..., d)
        ``grad l(y_r)``.
    r : int
        The readout position.

    Returns
    -------
    Tensor, shape (..., n, n)
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
    V : Tensor, shape (..., n, d)
        Values.
    grad_y : Tensor, shape (..., d)
        ``grad l(y_r)``.
    P : Tensor, shape (n, n)
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor, shape (...)
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
    V : Tensor, shape (..., n, d)
        Values.
    grad_y : Tensor, shape (..., d)
        ``grad l(y_r)``.
    P : Tensor, shape (n, n)
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor, shape (...)
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
    P : Tensor, shape (..., n, n)
        A score direction.
    r : int
        The readout position.

    Returns
    -------
    Tensor, shape (...)
        The largest cosine.

    References
    ----------
    proofs/X4_readout_blindness.md.

    Examples
    --------
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
    H : Tensor, shape (..., n, D)
        The layer's input rows.
    V : Tensor, shape (..., n, d)
        Values.
    grad_y : Tensor, shape (..., d)
        ``grad l(y_r)``.
    r : int
        The readout position.

    Returns
    -------
    Tensor, shape (..., D, D)
        ``dL_row/dM``, rank <= 1.

    References
    ----------
    proofs/X4_readout_blindness.md, proofs/T4_rank_one_update.md.
    """
    beta = _row_value_scores(V, grad_y)
    right = (beta - beta.mean(dim=-1, keepdim=True)).unsqueeze(-2).matmul(H).squeeze(-2) / V.shape[-2]
    return H[..., r, :].unsqueeze(-1) * right.unsqueeze(-2)

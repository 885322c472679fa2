r"""Score directions ``P`` (n x n patterns): Toeplitz and circulant kernels, the band, the proximity basis.

The patterns along which T3 measures the first-order change of ``L_sup`` (blind when every column
sums to the same), T4's band and T5's proximity subspace.  Notation as in ``proofs/README.md``:
``n`` tokens, scores ``S`` in R^{n x n}, ``<X, Y> = sum_ij X_ij Y_ij``.  Functions that build a
pattern from ``n`` return float64 tensors.  Depends only on torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from spt_theory.theory.gradients import row_centre


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
    k : sequence of float or Tensor [w]
        The kernel by offset.

    Returns
    -------
    Tensor [n, n], float64
        ``P``.

    References
    ----------
    proofs/T3_blind_directions.md.

    Examples
    --------
    >>> from spt_theory.theory.gradients import column_sums
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
    k : sequence of float or Tensor [w]
        The kernel by offset.

    Returns
    -------
    Tensor [n, n], float64
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
    Tensor [n, n], float64
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
    k : sequence of float or Tensor [w]
        The kernel by offset.

    Returns
    -------
    Tensor [n], float64
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
    Tensor [K, n, n], float64
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
    grad_S : Tensor [..., n, n]
        A score gradient.
    directions : Tensor [K, n, n]
        The directions ``D_k`` (:func:`proximity_directions`).

    Returns
    -------
    Tensor [..., K]
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
    grad_S : Tensor [..., n, n]
        A score gradient.
    directions : Tensor [K, n, n]
        Orthonormal directions.

    Returns
    -------
    Tensor [...]
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

r"""Attention probes: band mass, mean attention distance, and the Toeplitz fit of the PE-PE scores.

All probes read activations from :meth:`Encoder.run_with_cache`; none re-implements the forward.
The share of the score gradients that lies in the proximity subspace is
:mod:`spt_theory.analysis.gradient_shares`.  These measure ``model.py`` itself
(claims E4, E7, E8, X6), not a lemma's idealised setting.
"""

from __future__ import annotations

import math

import torch

from spt_theory.core.model import Encoder


def offsets(n: int) -> torch.Tensor:
    r"""``D_ij = |i - j|``.

    Parameters
    ----------
    n : int
        Positions.

    Returns
    -------
    Tensor [n, n], long
        The distance of every (query, key) pair.

    References
    ----------
    proofs/T3_blind_directions.md (Toeplitz kernels ``k(|i-j|)``).

    Examples
    --------
    >>> offsets(3).tolist()
    [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    """
    idx = torch.arange(n)
    return (idx[:, None] - idx[None, :]).abs()


@torch.no_grad()
def attention_patterns(model: Encoder, x: torch.Tensor, valid: torch.Tensor | None = None) -> list[torch.Tensor]:
    r"""The attention ``A`` of every layer, through the explicit attention path, in eval mode.

    Parameters
    ----------
    model : Encoder
        The model (its train/eval mode is restored).
    x : Tensor [batch, n]
        Inputs.
    valid : Tensor [batch, n], bool, or None
        The padding mask (:meth:`Encoder.encode`).

    Returns
    -------
    list[Tensor [batch, head, query, key]]
        One per layer; each row sums to 1.

    References
    ----------
    proofs/README.md (notation: ``A = softmax_rows(S)``).

    Examples
    --------
    >>> from spt_theory.core.model import Encoder, ModelConfig
    >>> _ = torch.manual_seed(0)
    >>> model = Encoder(ModelConfig(vocab_size=5, recon_classes=4, max_len=6, d_model=8, n_heads=2, d_ff=16))
    >>> A = attention_patterns(model, torch.tensor([[0, 1, 2, 3, 0, 1]]))
    >>> len(A), A[0].shape, bool(torch.allclose(A[0].sum(-1), torch.ones(1, 2, 6)))
    (1, torch.Size([1, 2, 6, 6]), True)
    """
    was_training = model.training
    model.eval()
    _, cache = model.run_with_cache(x, valid=valid)
    model.train(was_training)
    return [cache[f"blocks.{i}.attn.pattern"] for i in range(model.cfg.n_layers)]


def offset_mass(pattern: torch.Tensor, valid: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    r"""Attention summed by offset ``delta = j - i``, and the number of queries summed.

    ``M_h(delta) = sum_b sum_{i in R_b} A[b, h, i, i + delta]`` for ``delta = -(n-1)..(n-1)``, ``R_b``
    the real positions of example ``b`` (all ``n`` when ``valid`` is None).  ``M_h(delta) / queries`` is
    head ``h``'s *attention share at offset delta*: the mass a query puts on the key ``delta``
    positions away, averaged over queries.  Sums (not means) so that batches of different lengths
    accumulate.

    Parameters
    ----------
    pattern : Tensor [batch, head, query, key]
        Attention.
    valid : Tensor [batch, n], bool, or None
        The padding mask: padded queries are left out.

    Returns
    -------
    sums : Tensor [head, 2n - 1]
        ``M_h(delta)``, index ``delta + n - 1``.
    queries : int
        ``sum_b |R_b|``.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md (the offsets reconstruction raises).

    Examples
    --------
    >>> sums, queries = offset_mass(torch.eye(3)[None, None])  # every query on itself: offset 0
    >>> sums.tolist(), queries
    ([[0.0, 0.0, 3.0, 0.0, 0.0]], 3)
    """
    b, h, n, _ = pattern.shape
    if valid is not None:
        pattern = pattern * valid[:, None, :, None].to(pattern.dtype)
    idx = torch.arange(n, device=pattern.device)
    delta = (idx[None, :] - idx[:, None]) + (n - 1)
    sums = torch.zeros(h, 2 * n - 1, dtype=pattern.dtype, device=pattern.device)
    sums.index_add_(1, delta.flatten(), pattern.sum(0).flatten(1))
    return sums, b * n if valid is None else int(valid.sum())


def uniform_pattern(valid: torch.Tensor) -> torch.Tensor:
    r"""Uniform attention over the real keys, ``A_ij = 1{j real} / |R|``.

    Parameters
    ----------
    valid : Tensor [batch, n], bool
        The padding mask.

    Returns
    -------
    Tensor [batch, 1, query, key], float32
        One head (an expanded view).

    References
    ----------
    proofs/README.md (uniform attention).

    Examples
    --------
    >>> uniform_pattern(torch.tensor([[True, True, False]]))[0, 0].tolist()
    [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]
    """
    keys = valid.to(torch.float32)
    return (keys / keys.sum(-1, keepdim=True))[:, None, None, :].expand(-1, 1, valid.shape[1], -1)


def band_mass(pattern: torch.Tensor, width: int = 2, valid: torch.Tensor | None = None) -> float:
    r"""``(1 / |R|) sum_{i in R} sum_{j : |i-j| <= width} A_ij``, averaged over batch and heads (E4).

    The attention shares of :func:`offset_mass` summed over ``|delta| <= width``.

    Parameters
    ----------
    pattern : Tensor [..., query, key] (``valid`` None) or [batch, head, query, key]
        Attention; any leading axes (e.g. heads only) when ``valid`` is None.
    width : int
        The band's half-width.
    valid : Tensor [batch, n], bool, or None
        The padding mask.

    Returns
    -------
    float
        The mean attention mass within the band.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md; proofs/T3_blind_directions.md (the band).

    Examples
    --------
    Uniform attention has :func:`uniform_band_mass`:

    >>> round(band_mass(torch.full((1, 1, 5, 5), 0.2, dtype=torch.float64), 1), 12)
    0.52
    """
    if valid is None:
        pattern = pattern.reshape(-1, 1, *pattern.shape[-2:])
    sums, queries = offset_mass(pattern, valid)
    n = pattern.shape[-1]
    near = torch.arange(-(n - 1), n, device=sums.device).abs() <= width
    return (sums[:, near].sum() / (queries * sums.shape[0])).item()


def uniform_band_mass(n: int, width: int = 2) -> float:
    r"""Band mass of uniform attention ``A = 1 1^T / n``: ``(1/n^2) #{(i, j) : |i - j| <= width}``.

    Parameters
    ----------
    n : int
        Positions.
    width : int
        The band's half-width.

    Returns
    -------
    float
        E4's baseline.

    References
    ----------
    proofs/T3_blind_directions.md (the band, ``(2w+1) n - w (w+1)`` entries).

    Examples
    --------
    >>> uniform_band_mass(5, 1)  # (3 * 5 - 2) / 25
    0.52
    """
    return (offsets(n) <= width).sum().item() / n**2


def mean_attention_distance(pattern: torch.Tensor) -> float:
    r"""``(1/n) sum_i sum_j A_ij |i - j|``, averaged over batch and heads.

    Parameters
    ----------
    pattern : Tensor [..., query, key]
        Attention.

    Returns
    -------
    float
        The mean distance from a query to the keys it attends to.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> mean_attention_distance(torch.eye(4)[None, None]), round(mean_attention_distance(torch.full((3, 3), 1 / 3)), 6)
    (0.0, 0.888889)
    """
    return (pattern * offsets(pattern.shape[-1]).to(pattern.dtype)).sum(-1).mean().item()


def pe_score_block(model: Encoder, layer: int = 0) -> torch.Tensor:
    r"""The part of the scores that positions alone contribute (E7): the PE-PE block of ``M_h`` per head.

    ``T_h = (P diag(g)) W_Q^h^T W_K^h (P diag(g))^T / sqrt(d_h)``, ``P`` the positional table, ``g`` the
    gain of the attention LayerNorm of ``layer`` and ``W_Q^h``, ``W_K^h`` the ``[d_h, d]`` rows of head
    ``h`` (biases and the LayerNorm's centring excluded).

    Parameters
    ----------
    model : Encoder
        The model.
    layer : int
        The block.

    Returns
    -------
    Tensor [head, max_len, max_len]
        ``T_h``.

    Notes
    -----
    T4 writes the scores as ``H^ M_h H^^T`` with ``H^ = [LN(E x + P), 1]``; ``T_h`` keeps only the
    positional rows of ``H^`` and ignores that the LayerNorm mixes token and position.

    References
    ----------
    proofs/T4_rank_one_update.md (the bilinear form in ``model.py``).

    Examples
    --------
    >>> from spt_theory.core.model import Encoder, ModelConfig
    >>> _ = torch.manual_seed(0)
    >>> model = Encoder(ModelConfig(vocab_size=5, recon_classes=4, max_len=6, d_model=8, n_heads=2, d_ff=16))
    >>> pe_score_block(model).shape
    torch.Size([2, 6, 6])
    """
    block = model.blocks[layer]
    p = model.pe[: model.cfg.max_len] * block.ln_attn.weight.detach()
    w_q, w_k = block.attn.split_query_key(block.attn.qk.weight.detach())
    q = block.attn.split_heads(p @ w_q.T).transpose(0, 1)
    k = block.attn.split_heads(p @ w_k.T).transpose(0, 1)
    return q @ k.transpose(-1, -2) / math.sqrt(model.cfg.d_head)


def diagonal_profile(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``f(delta)`` = the mean of ``T_ij`` over ``i - j = delta``, for ``delta = -(n-1)..(n-1)``.

    Parameters
    ----------
    t : Tensor [n, n]
        A score block.

    Returns
    -------
    deltas : Tensor [2n - 1], long
        ``-(n-1)..(n-1)``.
    f : Tensor [2n - 1]
        The diagonal means.

    References
    ----------
    proofs/T3_blind_directions.md (Toeplitz kernels).

    Examples
    --------
    >>> deltas, f = diagonal_profile(torch.arange(9.0).view(3, 3))  # T_ij = 3 i + j
    >>> deltas.tolist(), f.tolist()
    ([-2, -1, 0, 1, 2], [2.0, 3.0, 4.0, 5.0, 6.0])
    """
    n = t.shape[-1]
    idx = torch.arange(n)
    delta = (idx[:, None] - idx[None, :]) + (n - 1)
    sums = torch.zeros(2 * n - 1, dtype=t.dtype).index_add_(0, delta.flatten(), t.flatten())
    counts = torch.bincount(delta.flatten(), minlength=2 * n - 1).to(t.dtype)
    return torch.arange(-(n - 1), n), sums / counts


def toeplitz_part(t: torch.Tensor) -> torch.Tensor:
    r"""``F_ij = f(i - j)``, ``f`` the diagonal means of ``T``: the least-squares fit of ``T`` by a Toeplitz matrix.

    ``T - F`` is the part of ``T`` that is not a function of ``i - j``.

    Parameters
    ----------
    t : Tensor [n, n]
        A score block.

    Returns
    -------
    Tensor [n, n]
        ``F``.

    References
    ----------
    proofs/T3_blind_directions.md (Toeplitz kernels).

    Examples
    --------
    >>> toeplitz_part(torch.tensor([[0.0, 2.0], [4.0, 2.0]])).tolist()
    [[1.0, 2.0], [4.0, 1.0]]
    """
    _, f = diagonal_profile(t)
    n = t.shape[-1]
    idx = torch.arange(n)
    return f[(idx[:, None] - idx[None, :]) + (n - 1)]


def toeplitz_fit(t: torch.Tensor) -> dict:
    r"""How close ``T`` is to a function of ``i - j``, and where that function peaks.

    ``r2 = 1 - ||T - F||^2 / ||T - mean(T)||^2`` with ``F_ij = f(i - j)`` the diagonal means: the share
    of ``T``'s variance explained by a Toeplitz matrix.  ``peak_offset = |argmax_delta f(delta)|``, and
    ``peak_contrast = (max f - median f) / std(T)``: how far the peak stands above the typical offset.

    Parameters
    ----------
    t : Tensor [n, n]
        A score block, not constant.

    Returns
    -------
    dict
        ``r2`` (float), ``peak_offset`` (int), ``peak_contrast`` (float).

    References
    ----------
    proofs/T3_blind_directions.md (Toeplitz kernels).

    Examples
    --------
    >>> fit = toeplitz_fit(torch.tensor([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]]))
    >>> fit["r2"], fit["peak_offset"]
    (1.0, 0)
    """
    deltas, f = diagonal_profile(t)
    fitted = toeplitz_part(t)
    r2 = 1 - ((t - fitted) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    return {"r2": r2.item(), "peak_offset": int(deltas[f.argmax()].abs()),
            "peak_contrast": ((f.max() - f.median()) / t.std()).item()}


def pe_toeplitz_fit(model: Encoder, layer: int = 0, max_offset: int = 2) -> dict:
    r""":func:`toeplitz_fit` of every head's PE-PE block (E7).

    Parameters
    ----------
    model : Encoder
        The model.
    layer : int
        The block.
    max_offset : int
        A head counts as peaked near the diagonal if its ``peak_offset <= max_offset``.

    Returns
    -------
    dict
        ``r2`` averaged over heads, ``heads_peaked_near`` (int) and ``heads`` (the per-head fits).

    References
    ----------
    proofs/T4_rank_one_update.md (the bilinear form in ``model.py``).
    """
    fits = [toeplitz_fit(t) for t in pe_score_block(model, layer).cpu()]
    return {"r2": sum(f["r2"] for f in fits) / len(fits),
            "heads_peaked_near": sum(f["peak_offset"] <= max_offset for f in fits),
            "heads": fits}

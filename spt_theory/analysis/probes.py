"""Attention probes: band mass, mean attention distance, Toeplitz fit of the PE-PE scores, and the
share of the score gradients that lies in the proximity subspace.

All probes read activations from :meth:`Encoder.run_with_cache`; none re-implements the forward.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import Tensor

from spt_theory.core.model import Encoder
from spt_theory.core.objectives import bernoulli_mask, mask_tokens, masked_token_loss, supervised_loss
from spt_theory.theory.patterns import proximity_directions, proximity_share
from spt_theory.training.cache import load_checkpoint
from spt_theory.training.loop import load_model_state


def offsets(n: int) -> torch.Tensor:
    """D_ij = |i - j|, shape (n, n)."""
    idx = torch.arange(n)
    return (idx[:, None] - idx[None, :]).abs()


@torch.no_grad()
def attention_patterns(model: Encoder, x: torch.Tensor, valid: torch.Tensor | None = None) -> list[torch.Tensor]:
    """A of every layer, each (batch, heads, n, n), through the explicit attention path
    (``valid``: the padding mask, see :meth:`Encoder.encode`)."""
    was_training = model.training
    model.eval()
    _, cache = model.run_with_cache(x, valid=valid)
    model.train(was_training)
    return [cache[f"blocks.{i}.attn.pattern"] for i in range(model.cfg.n_layers)]


def offset_mass(pattern: torch.Tensor, valid: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    """Attention summed by offset: M_h(delta) = sum_b sum_{i in R_b} A[b, h, i, i + delta] for
    delta = j - i = -(n-1)..(n-1), shape (heads, 2n - 1), and the number of queries summed,
    sum_b |R_b| (R_b: the real positions of example b; all n when ``valid`` is None).

    M_h(delta) / queries is head h's *attention share at offset delta*: the mass a query puts on
    the key delta positions away, averaged over queries.  Sums (not means) so that batches of
    different lengths accumulate.
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
    """Uniform attention over the real keys, A_ij = 1{j real} / |R|, shape (batch, 1, n, n)."""
    keys = valid.to(torch.float32)
    return (keys / keys.sum(-1, keepdim=True))[:, None, None, :].expand(-1, 1, valid.shape[1], -1)


def band_mass(pattern: torch.Tensor, width: int = 2, valid: torch.Tensor | None = None) -> float:
    """(1 / |R|) sum_{i in R} sum_{j : |i-j| <= width} A_ij, averaged over batch and heads: the
    attention shares of :func:`offset_mass` summed over |delta| <= width.  ``pattern`` (..., n, n)
    (any leading axes, e.g. heads only) when ``valid`` is None, else (batch, heads, n, n)."""
    if valid is None:
        pattern = pattern.reshape(-1, 1, *pattern.shape[-2:])
    sums, queries = offset_mass(pattern, valid)
    n = pattern.shape[-1]
    near = torch.arange(-(n - 1), n, device=sums.device).abs() <= width
    return (sums[:, near].sum() / (queries * sums.shape[0])).item()


def uniform_band_mass(n: int, width: int = 2) -> float:
    """Band mass of uniform attention A = 11^T / n: (1/n^2) #{(i, j) : |i - j| <= width}."""
    return (offsets(n) <= width).sum().item() / n**2


def mean_attention_distance(pattern: torch.Tensor) -> float:
    """(1 / n) sum_i sum_j A_ij |i - j|, averaged over batch and heads."""
    return (pattern * offsets(pattern.shape[-1]).to(pattern.dtype)).sum(-1).mean().item()


def pe_score_block(model: Encoder, layer: int = 0) -> torch.Tensor:
    """T_h = (P diag(g)) W_Q^h (W_K^h)^T (P diag(g))^T / sqrt(d_h), shape (heads, n, n).

    P is the positional table, g the gain of the attention LayerNorm of ``layer``: the part of the
    scores that positions alone contribute (biases and the LayerNorm's centring excluded).
    """
    block = model.blocks[layer]
    p = model.pe[: model.cfg.max_len] * block.ln_attn.weight.detach()
    w_q, w_k = block.attn.split_query_key(block.attn.qk.weight.detach())
    q = block.attn.split_heads(p @ w_q.T).transpose(0, 1)
    k = block.attn.split_heads(p @ w_k.T).transpose(0, 1)
    return q @ k.transpose(-1, -2) / math.sqrt(model.cfg.d_head)


def diagonal_profile(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """f(delta) = mean of T_ij over i - j = delta, for delta = -(n-1)..(n-1); returns (deltas, f)."""
    n = t.shape[-1]
    idx = torch.arange(n)
    delta = (idx[:, None] - idx[None, :]) + (n - 1)
    sums = torch.zeros(2 * n - 1, dtype=t.dtype).index_add_(0, delta.flatten(), t.flatten())
    counts = torch.bincount(delta.flatten(), minlength=2 * n - 1).to(t.dtype)
    return torch.arange(-(n - 1), n), sums / counts


def toeplitz_part(t: torch.Tensor) -> torch.Tensor:
    """F_ij = f(i - j), f the diagonal means of T (:func:`diagonal_profile`): the least-squares
    fit of T by a Toeplitz matrix; T - F is the part of T that is not a function of i - j."""
    _, f = diagonal_profile(t)
    n = t.shape[-1]
    idx = torch.arange(n)
    return f[(idx[:, None] - idx[None, :]) + (n - 1)]


def toeplitz_fit(t: torch.Tensor) -> dict:
    """How close T is to a function of i - j, and where that function peaks.

    ``r2`` = 1 - ||T - F||^2 / ||T - mean(T)||^2 with F_ij = f(i - j) the diagonal means: the share
    of T's variance explained by a Toeplitz matrix.  ``peak_offset`` = |argmax_delta f(delta)|, and
    ``peak_contrast`` = (max f - median f) / std(T): how far the peak stands above the typical offset.
    """
    deltas, f = diagonal_profile(t)
    fitted = toeplitz_part(t)
    r2 = 1 - ((t - fitted) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    return {"r2": r2.item(), "peak_offset": int(deltas[f.argmax()].abs()),
            "peak_contrast": ((f.max() - f.median()) / t.std()).item()}


def pe_toeplitz_fit(model: Encoder, layer: int = 0, max_offset: int = 2) -> dict:
    """Toeplitz fit of every head's PE-PE block; ``r2`` averaged over heads, and the number of
    heads whose profile peaks within ``max_offset`` of the diagonal."""
    fits = [toeplitz_fit(t) for t in pe_score_block(model, layer).cpu()]
    return {"r2": sum(f["r2"] for f in fits) / len(fits),
            "heads_peaked_near": sum(f["peak_offset"] <= max_offset for f in fits),
            "heads": fits}


def score_gradients(model: Encoder, x: torch.Tensor, y: torch.Tensor, *, objective: str,
                    mask_id: int | None = None, mask_ratio: float = 0.15,
                    generator: torch.Generator | None = None, layer: int = 0) -> torch.Tensor:
    """dL/dS of ``layer`` (batch, heads, n, n) for L = L_sup or L_rec, read from the cache."""
    model.zero_grad(set_to_none=True)
    if objective == "supervised":
        logits, cache = model.run_with_cache(x)
        loss = supervised_loss(logits, y)
    else:
        mask = bernoulli_mask(tuple(x.shape), mask_ratio, generator or torch.Generator().manual_seed(0))
        out, cache = model.run_with_cache(mask_tokens(x, mask, mask_id), reconstruct=True)
        loss = masked_token_loss(out, x, mask)
    # the loss is a batch mean; scale back so each example's gradient is its own loss's gradient
    (loss * len(x)).backward()
    grad = cache[f"blocks.{layer}.attn.scores"].grad.detach()
    model.zero_grad(set_to_none=True)
    return grad


def gradient_proximity_shares(model: Encoder, x: torch.Tensor, y: torch.Tensor, mask_id: int,
                              max_offset: int = 2, mask_ratio: float = 0.15, seed: int = 0) -> dict:
    """Share ||Proj_prox(G)||_F / ||G||_F of the supervised and reconstruction score gradients.

    ``expected``: G = the batch mean of dL/dS per head (the systematic gradient that accumulates
    over steps), share averaged over heads; ``per_example``: the share of each example's dL/dS,
    averaged over the examples and heads with a non-zero gradient (an example with no masked token
    has none under the reconstruction loss).  The proximity subspace is spanned by the row-centred
    patterns 1{|i - j| = k}, k = 1..max_offset (:func:`spt_theory.theory.patterns.proximity_directions`).
    ``random`` is the share of a Gaussian matrix, about sqrt(K) / n: the chance level.
    """
    n = x.shape[1]
    directions = proximity_directions(n, max_offset, circular=False)
    shares = {}
    for objective in ("supervised", "spt"):
        grad = score_gradients(model, x, y, objective=objective, mask_id=mask_id,
                               mask_ratio=mask_ratio, generator=torch.Generator().manual_seed(seed))
        has_gradient = grad.flatten(-2).norm(dim=-1) > 0  # (batch, heads)
        if not has_gradient.any():
            raise ValueError(f"{objective}: no score gradient in the batch (no masked token at mask "
                             f"ratio {mask_ratio}): use more examples or a higher ratio")
        shares[objective] = {"expected": proximity_share(grad.mean(0), directions).mean().item(),
                             "per_example": proximity_share(grad, directions)[has_gradient].mean().item()}
    noise = torch.randn(64, n, n, generator=torch.Generator().manual_seed(seed))
    shares["random"] = proximity_share(noise, directions).mean().item()
    return shares


def supervised_share(model: Encoder, x: Tensor, y: Tensor, directions: Tensor) -> dict[str, float]:
    """Proximity share of the supervised score gradient: of the batch mean (``expected``, averaged
    over heads) and of each example's gradient (``per_example``), as in E8."""
    grad = score_gradients(model, x, y, objective="supervised")
    return {"expected": proximity_share(grad.mean(0), directions).mean().item(),
            "per_example": proximity_share(grad, directions).mean().item()}


def share_trajectory(model: Encoder, checkpoints: Iterable[tuple[int, int, Path]], x: Tensor, y: Tensor,
                     directions: Tensor) -> list[dict]:
    """:func:`supervised_share` of ``model`` as it is (stage 0, epoch 0: the init), then with each
    ``(stage, epoch, path)`` checkpoint loaded in turn (claim X6 and the score_gradients figure)."""
    points = [{"stage": 0, "epoch": 0, **supervised_share(model, x, y, directions)}]
    for stage, epoch, path in checkpoints:
        load_model_state(model, load_checkpoint(path)["model"], path)
        points.append({"stage": stage, "epoch": epoch, **supervised_share(model, x, y, directions)})
    return points


def chance_share(directions: Tensor) -> float:
    """X6's chance level: the mean proximity share of 64 Gaussian n x n matrices (seed 0)."""
    n = directions.shape[-1]
    noise = torch.randn(64, n, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return proximity_share(noise, directions).mean().item()

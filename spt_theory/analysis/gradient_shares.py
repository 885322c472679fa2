r"""The share of the score gradients that lies in the proximity subspace (claims E8, X6).

:func:`score_gradients` reads ``dL/dS`` of the supervised or the reconstruction loss from
:meth:`Encoder.run_with_cache`; the shares project it on the row-centred offset patterns of
:func:`spt_theory.theory.patterns.proximity_directions`.  T3 proves the supervised gradient blind to
such patterns and T5 the reconstruction gradient not, both for the idealised readout at uniform
attention; these shares are the empirical bridge in ``model.py`` itself.  The other attention
probes are :mod:`spt_theory.analysis.probes`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from spt_theory.core.model import Encoder
from spt_theory.core.objectives import bernoulli_mask, mask_tokens, masked_token_loss, supervised_loss
from spt_theory.theory.patterns import proximity_directions, proximity_share
from spt_theory.training.cache import load_checkpoint
from spt_theory.training.loop import load_model_state


def score_gradients(model: Encoder, x: torch.Tensor, y: torch.Tensor, *, objective: str,
                    mask_id: int | None = None, mask_ratio: float = 0.15,
                    generator: torch.Generator | None = None, layer: int = 0) -> torch.Tensor:
    r"""``dL/dS`` of ``layer`` for ``L = L_sup`` or ``L_rec``, read from the cache: each example's own loss's gradient.

    Parameters
    ----------
    model : Encoder
        The model (its gradients are cleared before and after).
    x : Tensor [batch, n]
        Inputs.
    y : Tensor [batch]
        Labels (read by the supervised loss).
    objective : {"supervised", "spt"}
        The loss; any value but ``supervised`` is the masked-token reconstruction loss.
    mask_id : int or None
        The mask token (reconstruction).
    mask_ratio : float
        Bernoulli masking rate (reconstruction).
    generator : torch.Generator or None
        Draws the mask (default: seed 0).
    layer : int
        The block.

    Returns
    -------
    Tensor [batch, head, query, key]
        The score gradient; its rows sum to 0 (every softmax's does).

    Notes
    -----
    This is ``model.py``'s own gradient, at any weights: T1-T5 state it for the idealised readout at
    uniform attention; claim T2b measures the difference at ``W_Q = W_K = 0``.

    References
    ----------
    proofs/T2_uniform_gradient.md, proofs/T5_reconstruction_sees_proximity.md (Setting and scope).

    Examples
    --------
    >>> from spt_theory.core.model import Encoder, ModelConfig
    >>> _ = torch.manual_seed(0)
    >>> model = Encoder(ModelConfig(vocab_size=5, recon_classes=4, max_len=6, d_model=8, n_heads=2, d_ff=16))
    >>> G = score_gradients(model, torch.tensor([[0, 1, 2, 3, 0, 1]]), torch.tensor([1]), objective="supervised")
    >>> G.shape, bool(G.sum(-1).abs().max() < 1e-6)
    (torch.Size([1, 2, 6, 6]), True)
    """
    model.zero_grad(set_to_none=True)
    if objective == "supervised":
        logits, cache = model.run_with_cache(x)
        loss = supervised_loss(logits, y)
    else:
        if mask_id is None:
            raise ValueError("the reconstruction gradient needs mask_id (token inputs)")
        mask = bernoulli_mask(tuple(x.shape), mask_ratio, generator or torch.Generator().manual_seed(0))
        out, cache = model.run_with_cache(mask_tokens(x, mask, mask_id), reconstruct=True)
        loss = masked_token_loss(out, x, mask)
    # the loss is a batch mean; scale back so each example's gradient is its own loss's gradient
    (loss * len(x)).backward()
    grad = cache[f"blocks.{layer}.attn.scores"].grad.detach()
    model.zero_grad(set_to_none=True)
    return grad


def gradient_proximity_shares(model: Encoder, x: torch.Tensor, y: torch.Tensor, mask_id: int | None,
                              max_offset: int = 2, mask_ratio: float = 0.15, seed: int = 0) -> dict:
    r"""Share ``||Proj_prox(G)||_F / ||G||_F`` of the supervised and reconstruction score gradients (E8).

    ``expected``: ``G`` = the batch mean of ``dL/dS`` per head (the systematic gradient that accumulates
    over steps), share averaged over heads; ``per_example``: the share of each example's ``dL/dS``,
    averaged over the examples and heads with a non-zero gradient (an example with no masked token
    has none under the reconstruction loss).  The proximity subspace is spanned by the row-centred
    patterns ``1{|i - j| = k}``, ``k = 1..max_offset``
    (:func:`spt_theory.theory.patterns.proximity_directions`).  ``random`` is the share of a Gaussian
    matrix, about ``sqrt(K) / n``: the chance level.

    Parameters
    ----------
    model : Encoder
        The model.
    x : Tensor [batch, n]
        Inputs.
    y : Tensor [batch]
        Labels.
    mask_id : int
        The mask token.
    max_offset : int
        ``K``.
    mask_ratio : float
        Bernoulli masking rate.
    seed : int
        Seeds the mask and the Gaussian matrices.

    Returns
    -------
    dict
        ``supervised`` and ``spt``: ``{"expected": float, "per_example": float}``; ``random``: float.

    Raises
    ------
    ValueError
        No example has a masked token.

    Notes
    -----
    T3 (blind) and T5 (sees proximity) are proven for the idealised readout at uniform attention;
    here ``G`` is ``model.py``'s gradient (residual, LayerNorms, MLP) at its current weights: E8 is the
    empirical bridge.

    References
    ----------
    proofs/T3_blind_directions.md (Setting and scope), proofs/T5_reconstruction_sees_proximity.md.
    """
    n = x.shape[1]
    directions = proximity_directions(n, max_offset, circular=False)
    shares: dict[str, Any] = {}
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
    r"""Proximity share of the supervised score gradient: of the batch mean and of each example's (X6).

    Parameters
    ----------
    model, x, y
        As in :func:`gradient_proximity_shares`.
    directions : Tensor [K, n, n]
        Orthonormal proximity directions.

    Returns
    -------
    dict[str, float]
        ``expected`` (the batch mean's share, averaged over heads) and ``per_example``, as in
        :func:`gradient_proximity_shares`.

    References
    ----------
    proofs/T3_blind_directions.md (Setting and scope).
    """
    grad = score_gradients(model, x, y, objective="supervised")
    return {"expected": proximity_share(grad.mean(0), directions).mean().item(),
            "per_example": proximity_share(grad, directions).mean().item()}


def share_trajectory(model: Encoder, checkpoints: Iterable[tuple[int, int, Path]], x: Tensor, y: Tensor,
                     directions: Tensor) -> list[dict]:
    r""":func:`supervised_share` at the init, then with each checkpoint loaded in turn (claim X6).

    Parameters
    ----------
    model : Encoder
        The model as it is (stage 0, epoch 0: the init); changed in place, it ends at the last checkpoint.
    checkpoints : iterable of (int, int, Path)
        ``(stage, epoch, path)``.
    x, y, directions
        As in :func:`supervised_share`.

    Returns
    -------
    list[dict]
        ``{"stage", "epoch", "expected", "per_example"}`` per point, the init first.

    References
    ----------
    proofs/T3_blind_directions.md (Setting and scope).
    """
    points = [{"stage": 0, "epoch": 0, **supervised_share(model, x, y, directions)}]
    for stage, epoch, path in checkpoints:
        load_model_state(model, load_checkpoint(path)["model"], path)
        points.append({"stage": stage, "epoch": epoch, **supervised_share(model, x, y, directions)})
    return points


def chance_share(directions: Tensor) -> float:
    r"""X6's chance level: the mean proximity share of 64 Gaussian ``n x n`` matrices (seed 0).

    Parameters
    ----------
    directions : Tensor [K, n, n]
        Orthonormal directions.

    Returns
    -------
    float
        About ``sqrt(K) / n``.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> from spt_theory.theory.patterns import proximity_directions
    >>> abs(chance_share(proximity_directions(6, 2, circular=False)) - 2 ** 0.5 / 6) < 0.05
    True
    """
    n = directions.shape[-1]
    noise = torch.randn(64, n, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return proximity_share(noise, directions).mean().item()

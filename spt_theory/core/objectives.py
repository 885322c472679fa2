"""Masking and the three losses: masked-token CE, masked L1, supervised CE.

Self-pretraining (SPT) masks each position independently with probability ``ratio`` (Bernoulli,
no 80/10/10 replacement) and scores the reconstruction on masked positions only:

    L_rec = (1 / |M|) sum_{i in M} CE(decoder(h_i), x_i)          token inputs (``<mask>`` id)
    L_rec = (1 / |M|) sum_{i in M} |decoder(h_i) - x_i|            continuous inputs, masked L1

Continuous inputs are fed as two channels [x_i (1 - m_i), m_i].  Supervised training uses
L_sup = CE(head(pool(h)), y).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def bernoulli_mask(shape: tuple[int, ...], ratio: float, generator: torch.Generator) -> torch.Tensor:
    """m_i ~ Bernoulli(ratio) independently per position; bool tensor of ``shape``."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"mask ratio must be in [0, 1), got {ratio}")
    return torch.rand(shape, generator=generator) < ratio


def mask_tokens(x: torch.Tensor, mask: torch.Tensor, mask_id: int) -> torch.Tensor:
    """Replace masked token ids by ``mask_id``."""
    return torch.where(mask, torch.full_like(x, mask_id), x)


def mask_continuous(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Two-channel input [x (1 - m), m], shape (batch, n, 2), from values ``x`` (batch, n)."""
    m = mask.to(x.dtype)
    return torch.stack([x * (1 - m), m], dim=-1)


def masked_token_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean CE over masked positions; logits (batch, n, C), targets (batch, n)."""
    return F.cross_entropy(logits[mask], targets[mask]) if mask.any() else logits.sum() * 0.0


def masked_l1_loss(prediction: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean |prediction - target| over masked positions; prediction (batch, n, 1), targets (batch, n)."""
    return (prediction.squeeze(-1)[mask] - targets[mask]).abs().mean() if mask.any() else prediction.sum() * 0.0


def supervised_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """CE(head(pool(h)), y)."""
    return F.cross_entropy(logits, labels)

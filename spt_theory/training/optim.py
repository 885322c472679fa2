"""The one optimiser factory of the training loop and the plateau grid (:func:`make_optimizer`)."""

from __future__ import annotations

import torch

from spt_theory.core.model import Encoder

OPTIMIZERS = ("adamw", "sgd")


def make_optimizer(model: Encoder, lr: float, *, freeze: tuple[str, ...] = (), kind: str = "adamw",
                   weight_decay: float | None = None, momentum: float = 0.0) -> torch.optim.Optimizer:
    """The one optimiser factory: AdamW (``kind="adamw"``) or SGD (``"sgd"``, with ``momentum``) at
    rate ``lr`` over the parameters not in a ``freeze`` group (frozen ones get no update, not even
    weight decay: their ``requires_grad`` is switched off here, every other one on).
    ``weight_decay`` None is torch's default: 0.01 for AdamW, 0 for SGD.  :func:`train_stage`
    calls it with the stage's rate, frozen groups and decay; the plateau grid with its own rates.

    Weight decay (``Stage.weight_decay``, 0.01) applies to every trainable parameter, LayerNorm
    gains, biases and embeddings included.  This is the recipe on purpose: the design's prototype,
    whose numbers the walk claims reproduce ("AdamW lr 1e-3, batch 64"), names plain AdamW, i.e.
    ``torch.optim.AdamW(model.parameters())`` with torch's default ``weight_decay=0.01`` on every
    parameter (docs/weight-decay.md; Amos et al.'s LRA configs set decay 0, which that page weighs
    for the LRA runs).  Most Transformer code instead
    exempts LayerNorm, bias and embedding parameters; on the walk task (seed 0, scratch and SPT
    then finetune) that split leaves every test accuracy as it is and moves the band mass by under
    0.5% (README, section "Weight decay"); it is not used, so no cached run moves.
    """
    for name, p in model.named_parameters():
        p.requires_grad_(model.group_of(name) not in freeze)
    trainable = [p for p in model.parameters() if p.requires_grad]
    if kind == "adamw" and not momentum:
        return torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01 if weight_decay is None else weight_decay)
    if kind == "sgd":
        return torch.optim.SGD(trainable, lr=lr, momentum=momentum, weight_decay=weight_decay or 0.0)
    raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)} (momentum only with sgd), got {kind!r}")

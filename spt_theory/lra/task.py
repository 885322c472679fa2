"""How an LRA task feeds the encoder: model inputs, SPT masking, the losses, accuracy.

Token tasks (ListOps, Text, Retrieval): the input is the id sequence.  SPT draws
m_i ~ Bernoulli(r) on the non-padding positions, replaces masked ids by ``<mask>`` and scores

    L_rec = (1 / |M|) sum_{i in M} CE(decoder(h_i), x_i).

Pixel tasks (Image, Pathfinder): an intensity p_i in 0..255 becomes u_i = p_i / 255 and the input
is the two channels [u_i (1 - m_i), m_i] (all m_i = 0 for classification).  Image scores the masked
L1 on normalised pixels, (1 / |M|) sum_{i in M} |decoder(h_i) - u_i|; Pathfinder a 256-way CE on
p_i.  Retrieval's pairs (batch, 2, n) are classified by the ``pair_mlp`` head; for SPT each
document is a sequence of its own.  Supervised training: CE(head(pool(h)), y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from spt_theory.lra.configs import LRAConfig
from spt_theory.lra.readers import Vocabulary
from spt_theory.model import Encoder, ModelConfig
from spt_theory.objectives import (bernoulli_mask, mask_continuous, mask_tokens, masked_l1_loss,
                                   masked_token_loss, supervised_loss)
from spt_theory.training import Runtime, Stage, accuracy

PIXEL_MAX = 255.0
PIXEL_CHANNELS = 2
EVAL_BATCH = 128


@dataclass(frozen=True)
class LRATask:
    """One task's input handling (``config``: masking and loss; ``vocab``: pad and mask ids)."""

    config: LRAConfig
    vocab: Vocabulary

    @property
    def tokens(self) -> bool:
        return self.config.masking == "token"

    def model_config(self, sizes: LRAConfig, width: int) -> ModelConfig:
        """The encoder reading this task's inputs, with the architecture of ``sizes`` (the
        finetuned task's config: pretraining on another task keeps the target's architecture)."""
        return ModelConfig(
            vocab_size=self.config.vocab_size if self.tokens else 0,
            in_channels=0 if self.tokens else PIXEL_CHANNELS,
            n_classes=sizes.num_classes,
            recon_classes=self.config.vocab_size if self.config.pretrain_loss == "ce" else 0,
            max_len=width, d_model=sizes.d_model, n_heads=sizes.heads, d_ff=sizes.ff,
            n_layers=sizes.layers, pooling=sizes.pooling, head=sizes.head)

    def inputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The model's input for ids ``x``, with the positions of ``mask`` masked."""
        if self.tokens:
            return x if mask is None else mask_tokens(x, mask, self.vocab.mask_id)
        if mask is None:
            mask = torch.zeros_like(x, dtype=torch.bool)
        return mask_continuous(x.float() / PIXEL_MAX, mask)

    def loss(self, model: Encoder, stage: Stage, x: torch.Tensor, y: torch.Tensor,
             mask_generator: torch.Generator) -> torch.Tensor:
        """The training loss of a batch (a :data:`~spt_theory.training.LossFn`)."""
        if stage.objective == "supervised":
            return supervised_loss(model(self.inputs(x)), y)
        if self.config.two_documents:
            x = x.flatten(0, 1)
        mask = bernoulli_mask(tuple(x.shape), stage.mask_ratio, mask_generator).to(x.device)
        if self.vocab.pad_id is not None:
            mask &= x != self.vocab.pad_id
        prediction = model.reconstruct(self.inputs(x, mask)).float()
        if self.config.pretrain_loss == "l1":
            return masked_l1_loss(prediction, x.float() / PIXEL_MAX, mask)
        return masked_token_loss(prediction, x, mask)

    def accuracy(self, model: Encoder, x: torch.Tensor, y: torch.Tensor, runtime: Runtime) -> float:
        return accuracy(model, x, y, EVAL_BATCH, inputs=self.inputs, runtime=runtime)

    @torch.no_grad()
    def reconstruction_loss(self, model: Encoder, x: torch.Tensor, stage: Stage, runtime: Runtime,
                            seed: int = 0) -> float:
        """Mean SPT loss over ``x`` (batches weighted by size) under one fixed mask draw."""
        model.eval()
        generator = torch.Generator().manual_seed(seed)
        total = 0.0
        for start in range(0, len(x), EVAL_BATCH):
            xb = x[start:start + EVAL_BATCH]
            with runtime.autocast_context():
                total += self.loss(model, stage, xb, None, generator).item() * len(xb)
        model.train()
        return total / len(x) if len(x) else math.nan

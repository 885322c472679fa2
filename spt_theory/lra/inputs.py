"""How an LRA task feeds the encoder: model inputs, SPT masking, the losses, accuracy.

Token tasks (ListOps, Text, Retrieval): the input is the id sequence.  SPT draws
m_i ~ Bernoulli(r) on the non-padding positions, replaces masked ids by ``<mask>`` and scores

    L_rec = (1 / |M|) sum_{i in M} CE(decoder(h_i), x_i).

Pixel tasks (Image, Pathfinder): an intensity p_i in 0..255 becomes u_i = p_i / 255 and the input
is the two channels [u_i (1 - m_i), m_i] (all m_i = 0 for classification).  Image scores the masked
L1 on normalised pixels, (1 / |M|) sum_{i in M} |decoder(h_i) - u_i|; Pathfinder a 256-way CE on
p_i.  Retrieval's pairs (batch, 2, n) are classified by the ``pair_mlp`` head; for SPT each
document is a sequence of its own.  Supervised training: CE(head(pool(h)), y).

Padding (token tasks): the model gets ``valid = x != <pad>`` so padded keys are masked and the
readout ignores them (:mod:`spt_theory.core.model`), unless ``mask_padding`` is off.  When that leaves
every output unchanged (``LRAConfig.trims_padding``) a batch is first cut to its longest real
example, and evaluation runs in length order, so no step computes over padding it does not need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.core.objectives import (
    bernoulli_mask,
    mask_continuous,
    mask_tokens,
    masked_l1_loss,
    masked_token_loss,
    supervised_loss,
)
from spt_theory.evidence.correctness import FIELD, encode
from spt_theory.lra.configs import LRAConfig
from spt_theory.lra.data import LRAData, real_lengths
from spt_theory.lra.readers.common import Vocabulary
from spt_theory.training.loop import Stage
from spt_theory.training.runtime import Runtime

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
            max_len=width, d_model=sizes.d_model, n_heads=sizes.n_heads, d_ff=sizes.d_ff,
            n_layers=sizes.n_layers, pooling=sizes.pooling, head=sizes.head)

    def inputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The model's input for ids ``x``, with the positions of ``mask`` masked."""
        if self.tokens:
            return x if mask is None else mask_tokens(x, mask, self.vocab.mask)
        if mask is None:
            mask = torch.zeros_like(x, dtype=torch.bool)
        return mask_continuous(x.float() / PIXEL_MAX, mask)

    def valid(self, x: torch.Tensor) -> torch.Tensor | None:
        """True at the real tokens of ``x`` (the model's padding mask); None where nothing is
        masked (pixel inputs, or ``mask_padding`` off)."""
        if self.vocab.pad_id is None or not self.config.mask_padding:
            return None
        return x != self.vocab.pad_id

    def trim(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` cut to its longest real example when that changes no output (module doc)."""
        if not self.config.trims_padding:
            return x
        longest = int((x != self.vocab.pad).any(dim=tuple(range(x.dim() - 1))).nonzero().max()) + 1
        return x[..., :longest]

    def logits(self, model: Encoder, x: torch.Tensor) -> torch.Tensor:
        """Class logits of ids ``x`` (cut to its longest example first)."""
        x = self.trim(x)
        return model(self.inputs(x), valid=self.valid(x))

    def loss(self, model: Encoder, stage: Stage, x: torch.Tensor, y: torch.Tensor | None,
             mask_generator: torch.Generator) -> torch.Tensor:
        """The training loss of a batch (masking and losses: module doc); ``y`` None for SPT."""
        if stage.objective == "supervised":
            if y is None:
                raise ValueError("a supervised loss needs the labels")
            return supervised_loss(self.logits(model, x), y)
        if self.config.two_documents:
            x = x.flatten(0, 1)
        x = self.trim(x)
        mask = bernoulli_mask(tuple(x.shape), stage.mask_ratio, mask_generator).to(x.device)
        if self.vocab.pad_id is not None:
            mask &= x != self.vocab.pad_id
        prediction = model.reconstruct(self.inputs(x, mask), valid=self.valid(x)).float()
        if self.config.pretrain_loss == "l1":
            return masked_l1_loss(prediction, x.float() / PIXEL_MAX, mask)
        return masked_token_loss(prediction, x, mask)

    def batches(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Evaluation batches of ``x``'s indices, in length order when padding is trimmed."""
        order = (torch.argsort(real_lengths(x, self.vocab.pad_id), stable=True) if self.config.trims_padding
                 else torch.arange(len(x), device=x.device))
        return list(order.split(EVAL_BATCH))

    @torch.no_grad()
    def correct(self, model: Encoder, x: torch.Tensor, y: torch.Tensor, runtime: Runtime) -> torch.Tensor:
        """Whether each example of ``x`` is classified correctly, in ``x``'s order whatever order
        the batches ran in (eval mode, the runtime's autocast): a bool tensor on the CPU."""
        model.eval()
        correct = torch.zeros(len(x), dtype=torch.bool)
        for index in self.batches(x):
            with runtime.autocast_context():
                correct[index.cpu()] = (self.logits(model, x[index]).argmax(-1) == y[index]).cpu()
        model.train()
        return correct

    def accuracy(self, model: Encoder, x: torch.Tensor, y: torch.Tensor, runtime: Runtime) -> float:
        """Share of ``x`` classified correctly (:meth:`correct`)."""
        return share(self.correct(model, x, y, runtime))

    @torch.no_grad()
    def reconstruction_loss(self, model: Encoder, x: torch.Tensor, stage: Stage, runtime: Runtime,
                            seed: int = 0) -> float:
        """Mean SPT loss over ``x`` (batches weighted by size) under one fixed mask draw."""
        model.eval()
        generator = torch.Generator().manual_seed(seed)
        total = 0.0
        for index in self.batches(x):
            with runtime.autocast_context():
                total += self.loss(model, stage, x[index], None, generator).item() * len(index)
        model.train()
        return total / len(x) if len(x) else math.nan


def share(correct: torch.Tensor) -> float:
    """The share of True in ``correct`` (0.0 when empty): a count over the size, so it is exactly
    the share the per-example record gives (:func:`spt_theory.evidence.correctness.accuracy_of`)."""
    return int(correct.sum()) / max(len(correct), 1)


@dataclass
class LRATraining:
    """One LRA task's loaded data as a :class:`~spt_theory.training.loop.Task`.

    The loss is :meth:`LRATask.loss`; after every epoch it records the masked validation loss
    (SPT, one fixed mask draw: :meth:`LRATask.reconstruction_loss`) or the validation and test
    accuracy and, as ``test_correct``, which test examples were right, in the split's order
    (supervised; :mod:`spt_theory.evidence.correctness`).  ``lengths``: the real training
    lengths when batches come from length buckets, else None.
    """

    task: LRATask
    data: LRAData
    runtime: Runtime
    lengths: torch.Tensor | None = None

    def loss(self, model: Encoder, stage: Stage, x: torch.Tensor, y: torch.Tensor,
             mask_generator: torch.Generator) -> torch.Tensor:
        return self.task.loss(model, stage, x, y, mask_generator)

    def metrics(self, model: Encoder, stage: Stage) -> dict:
        if stage.objective == "spt":
            return {"val_loss": self.task.reconstruction_loss(model, self.data.x_val, stage, self.runtime)}
        test = self.task.correct(model, self.data.x_test, self.data.y_test, self.runtime)
        return {"val_accuracy": self.task.accuracy(model, self.data.x_val, self.data.y_val, self.runtime),
                "test_accuracy": share(test), **({FIELD: encode(test.numpy())} if len(test) else {})}

    def check(self, model: Encoder) -> None:
        """The model config is built from the data's width (:meth:`LRATask.model_config`): nothing to check."""

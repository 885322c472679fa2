"""Per-task model and training settings of the SPT-on-LRA study (Amos et al.), validated.

``config_for(task)`` is the paper-sized setting a task was registered with
(:mod:`spt_theory.lra.tasks`, where the values are), ``one_layer(cfg)`` its 1-layer variant (the
study's 1-layer ablations) and ``tiny(cfg)`` a CPU-sized variant for tests (tiny widths, a few steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from spt_theory.core.model import HEADS
from spt_theory.core.model import POOLINGS as MODEL_POOLINGS
from spt_theory.util.files import ConfigError

POOLINGS = tuple(p for p in MODEL_POOLINGS if p != "last")
"""The model's readouts (:data:`spt_theory.core.model.POOLINGS`) but ``last``, which no LRA model uses:
``mean``: over the real tokens (Amos et al.; the theory's readout); ``mean_all``: over every
position, padding included (the official LRA Pathfinder head); ``max``; ``cls``: a prepended token
(the official LRA ListOps, Text, Image and Retrieval heads).  The heads are the model's
(:data:`spt_theory.core.model.HEADS`: ``linear``; ``mlp``; ``pair_mlp``, Retrieval's [u, v, u-v, u*v])."""
MASKINGS = ("token", "pixel")
"""``token``: a masked id becomes ``<mask>``; ``pixel``: input becomes [value*(1-m), m]."""
PRETRAIN_LOSSES = ("ce", "l1")


@dataclass(frozen=True)
class LRAConfig:
    """Model, SPT and optimisation settings of one LRA task (validated on construction).  The model
    fields are spelled as :class:`~spt_theory.core.model.ModelConfig` spells them (``n_layers``,
    ``d_model``, ``n_heads``, ``d_ff``, ``head``, ``pooling``); ``--set`` still reads the old
    ``layers``, ``heads``, ``ff`` (:data:`spt_theory.core.args.SETTING_ALIASES`)."""

    task: str
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    head: str
    pooling: str
    mask_ratio: float
    masking: str
    pretrain_loss: str
    lr_finetune: float
    lr_pretrain: float
    pretrain_epochs: int
    warmup_steps: int
    batch_size: int
    max_length: int
    num_classes: int
    vocab_size: int
    max_steps: int | None = None
    """Stop each training phase after this many optimizer steps (None: run the epochs)."""
    mask_padding: bool = True
    """Padded keys masked in attention and ignored by the pooling, as the official LRA
    Transformer does (False: padding attended and pooled like a token, as Amos et al.'s code)."""
    bucket: bool = True
    """Batches drawn from length-sorted buckets and cut to the batch's longest real example
    (token tasks with masked padding; the same examples every epoch)."""
    resolution: int = 32
    """Pathfinder: the image side (the release has 32; the generator also writes 16, 24, ...)."""
    contour_length: int = 14
    """Pathfinder: the contour length of the data folder (14 is LRA's hard setting)."""

    def __post_init__(self):
        if not isinstance(self.task, str) or not self.task:
            _fail(self, "task", "must be a task name (spt_theory.lra.tasks)")
        _choice(self, "head", HEADS)
        _choice(self, "pooling", POOLINGS)
        _choice(self, "masking", MASKINGS)
        _choice(self, "pretrain_loss", PRETRAIN_LOSSES)
        for name in ("n_layers", "d_model", "n_heads", "d_ff", "lr_finetune", "lr_pretrain",
                     "pretrain_epochs", "batch_size", "max_length", "vocab_size", "resolution",
                     "contour_length"):
            _positive(self, name)
        for name in ("lr_finetune", "lr_pretrain"):
            if not math.isfinite(getattr(self, name)):
                _fail(self, name, "must be a finite number")
        if self.d_model % self.n_heads:
            _fail(self, "d_model", f"must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.mask_ratio < 1.0:
            _fail(self, "mask_ratio", "must be in [0, 1)")
        if self.warmup_steps < 0:
            _fail(self, "warmup_steps", "must be >= 0")
        if self.num_classes < 2:
            _fail(self, "num_classes", "must be >= 2")
        if self.max_steps is not None and self.max_steps <= 0:
            _fail(self, "max_steps", "must be positive or None")
        if self.pretrain_loss == "l1" and self.masking != "pixel":
            _fail(self, "pretrain_loss", "l1 needs pixel masking (continuous inputs)")

    @property
    def trims_padding(self) -> bool:
        """Whether a batch may be cut to its longest real example without changing any output:
        padding masked, and a readout that ignores it."""
        return self.masking == "token" and self.mask_padding and self.pooling != "mean_all"

    @property
    def two_documents(self) -> bool:
        """Whether each example is a pair of documents (Retrieval)."""
        return self.head == "pair_mlp"


def _fail(config: LRAConfig, name: str, problem: str):
    raise ConfigError(f"LRA config {config.task!r}: field {name} = {getattr(config, name)!r} {problem}")


def _choice(config: LRAConfig, name: str, allowed: tuple[str, ...]):
    if getattr(config, name) not in allowed:
        _fail(config, name, f"must be one of {', '.join(allowed)}")


def _positive(config: LRAConfig, name: str):
    if not getattr(config, name) > 0:
        _fail(config, name, "must be positive")


def one_layer(config: LRAConfig) -> LRAConfig:
    """The same task and training with a single Transformer layer."""
    return replace(config, n_layers=1)


def tiny(config: LRAConfig) -> LRAConfig:
    """A CPU-test-sized variant: at most 2 layers, width 16, 2 heads, batch 4, 3 steps per phase."""
    return replace(config, n_layers=min(config.n_layers, 2), d_model=16, n_heads=2, d_ff=32, batch_size=4,
                   pretrain_epochs=1, warmup_steps=1, max_steps=3)


"""Recipes as data: how a run trains, as a value built by small named constructors.

A :class:`Recipe` is the sequence of training :class:`~spt_theory.training.loop.Stage` s (stage ``k > 0``
starts from stage ``k - 1``'s weights for the groups in its ``keep``, the others fresh: hybrid
initialisation) plus how the model starts and what the SPT stages read:

- ``init``: a hook of :data:`spt_theory.core.inits.INIT_HOOKS` applied to the seed's random init
  (``proxinit``: W_Q, W_K set so that the PE-PE scores peak at offsets +-1), or ``default``;
- ``spt_steps``: a cap on the optimizer steps of the SPT stages (fractional SPT lengths);
- ``pretrain_data``: another sequence source for the SPT stages (the walk's X5 sources);
- ``architecture``: model settings the recipe needs (the control runs: ALiBi, no PE, CLS or last
  token readout); they win over the caller's.

The stages come from a :class:`Budget` (epochs, learning rates, batch size, masking, warm-up):
:func:`spt_stage` (masked reconstruction) and :func:`supervised_stage` (label CE).  The recipes
from stages: :func:`scratch` (one supervised stage from the init), :func:`pretrain_only` (one SPT
stage) and :func:`spt_then_finetune`.  The walk runs (:mod:`spt_theory.walk.experiments`, which reads
the recipe names of the claims and figures), ``python -m spt_theory.train`` and the LRA runner
(:mod:`spt_theory.lra.runner`) all build their stages with these constructors.
"""

from __future__ import annotations

from dataclasses import dataclass

from spt_theory.core.model import PARAMETER_GROUPS
from spt_theory.training.loop import Stage
from spt_theory.util.files import ConfigError
from synthetic.walk import PretrainData


@dataclass(frozen=True)
class Budget:
    """Epochs and optimiser settings of the recipes (defaults: the design's prototype, scratch 8
    epochs, SPT 4 then finetune 3, AdamW lr 1e-3, batch 64, 15% masking, no warm-up).

    ``lr`` is the supervised stages' learning rate, ``pretrain_lr`` the SPT stages' (None: ``lr``;
    the LRA recipe pretrains at another rate than it finetunes)."""

    scratch_epochs: int = 8
    pretrain_epochs: int = 4
    finetune_epochs: int = 3
    lr: float = 1e-3
    batch_size: int = 64
    mask_ratio: float = 0.15
    pretrain_lr: float | None = None
    warmup_steps: int = 0


@dataclass(frozen=True)
class Recipe:
    """A run's training: its stages in order and how its model starts (module doc)."""

    stages: tuple[Stage, ...]
    init: str = "default"
    spt_steps: int | None = None
    pretrain_data: PretrainData | None = None
    architecture: tuple[tuple[str, object], ...] = ()


def spt_stage(budget: Budget, epochs: int | None = None, *, freeze: tuple[str, ...] = ()) -> Stage:
    """Masked reconstruction for ``epochs`` (default ``budget.pretrain_epochs``) at the SPT rate."""
    return Stage("spt", budget.pretrain_epochs if epochs is None else epochs,
                 lr=budget.lr if budget.pretrain_lr is None else budget.pretrain_lr, batch_size=budget.batch_size,
                 mask_ratio=budget.mask_ratio, warmup_steps=budget.warmup_steps, freeze=freeze)


def supervised_stage(budget: Budget, epochs: int, *, freeze: tuple[str, ...] = (),
                     keep: tuple[str, ...] = PARAMETER_GROUPS) -> Stage:
    """Label cross-entropy for ``epochs``; ``freeze``: groups fixed, ``keep``: groups taken from
    the previous stage."""
    return Stage("supervised", epochs, lr=budget.lr, batch_size=budget.batch_size,
                 warmup_steps=budget.warmup_steps, freeze=freeze, keep=keep)


def scratch(stage: Stage, *, init: str = "default") -> Recipe:
    """Supervised training from the seed's random init (after the ``init`` hook)."""
    _expect(stage, "supervised", "scratch")
    return Recipe((stage,), init=init)


def pretrain_only(stage: Stage) -> Recipe:
    """SPT alone (the finetuned runs take its checkpoints)."""
    _expect(stage, "spt", "pretrain_only")
    return Recipe((stage,))


def spt_then_finetune(pretrain: Stage, finetune: Stage, *, spt_steps: int | None = None,
                      pretrain_data: PretrainData | None = None) -> Recipe:
    """SPT (at most ``spt_steps`` optimizer steps; on ``pretrain_data`` if given), then supervised
    finetuning from it, keeping ``finetune.keep``."""
    _expect(pretrain, "spt", "spt_then_finetune's pretraining")
    _expect(finetune, "supervised", "spt_then_finetune's finetuning")
    return Recipe((pretrain, finetune), spt_steps=spt_steps, pretrain_data=pretrain_data)


def _expect(stage: Stage, objective: str, where: str) -> None:
    if stage.objective != objective:
        raise ConfigError(f"{where}: needs a {objective} stage, got {stage.objective!r}")

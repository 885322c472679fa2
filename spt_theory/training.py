"""One training loop for pretraining (SPT) and finetuning (supervised).

A :class:`Stage` says what to optimise (``spt``: masked reconstruction, ``supervised``: label CE),
for how many epochs, which parameter groups are frozen, and which groups are carried over from
the previous stage (the others are freshly initialised: hybrid initialisation).

:func:`train_stage` is resumable and deterministic: the batch order of epoch ``e`` and the mask
of global step ``t`` come from generators seeded by ``(seed, e)`` and ``(seed, t)``, so a run
resumed from any checkpoint replays exactly the batches an uninterrupted run would see.  A
checkpoint ``epoch_<e>.pt`` is written (atomically) after every epoch and ``last.pt`` every
``checkpoint_every`` steps; loading uses ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from spt_theory.io import InputError, atomic_write
from spt_theory.model import PARAMETER_GROUPS, Encoder
from spt_theory.objectives import (bernoulli_mask, mask_continuous, mask_tokens, masked_l1_loss,
                                   masked_token_loss, supervised_loss)

OBJECTIVES = ("spt", "supervised")


@dataclass(frozen=True)
class Stage:
    """One phase of training.  ``keep``: groups taken from the previous stage (ignored for the first)."""

    objective: str
    epochs: int
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 0.01
    mask_ratio: float = 0.15
    warmup_steps: int = 0
    freeze: tuple[str, ...] = ()
    keep: tuple[str, ...] = PARAMETER_GROUPS

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise InputError(f"objective: must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.epochs < 0:
            raise InputError(f"epochs: must be >= 0, got {self.epochs}")
        if self.batch_size < 1:
            raise InputError(f"batch_size: must be >= 1, got {self.batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise InputError(f"lr: must be a positive number, got {self.lr}")
        if not 0.0 <= self.mask_ratio < 1.0:
            raise InputError(f"mask_ratio: must be in [0, 1), got {self.mask_ratio}")
        for name in (*self.freeze, *self.keep):
            if name not in PARAMETER_GROUPS:
                raise InputError(f"parameter group: unknown {name!r}; groups: {', '.join(PARAMETER_GROUPS)}")


@dataclass
class Dataset:
    """Training and test tensors.  ``mask_id`` is set for token inputs, ``None`` for continuous ones."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mask_id: int | None = None


class TrainingDiverged(RuntimeError):
    """A non-finite loss: training stopped, the last good checkpoint is kept."""


@dataclass
class StageState:
    """What a checkpoint holds besides the weights: where the stage is, and its metrics so far."""

    epoch: int = 0
    step_in_epoch: int = 0
    loss_sum: float = 0.0  # of this epoch's steps so far
    history: list[dict] = field(default_factory=list)


def _generator(*keys: int) -> torch.Generator:
    seed = 0
    for key in keys:
        seed = (seed * 1_000_003 + key) % (2**63 - 1)
    return torch.Generator().manual_seed(seed)


def stage_loss(model: Encoder, data: Dataset, stage: Stage, x: torch.Tensor, y: torch.Tensor,
               mask_generator: torch.Generator) -> torch.Tensor:
    """The loss of one batch under the stage's objective."""
    if stage.objective == "supervised":
        inputs = x if data.mask_id is not None else mask_continuous(x, torch.zeros_like(x, dtype=torch.bool))
        return supervised_loss(model(inputs), y)
    mask = bernoulli_mask(tuple(x.shape), stage.mask_ratio, mask_generator)
    if data.mask_id is not None:
        return masked_token_loss(model.reconstruct(mask_tokens(x, mask, data.mask_id)), x, mask)
    return masked_l1_loss(model.reconstruct(mask_continuous(x, mask)), x, mask)


@torch.no_grad()
def accuracy(model: Encoder, x: torch.Tensor, y: torch.Tensor, batch_size: int = 500,
             continuous: bool = False) -> float:
    """Share of ``x`` classified correctly (eval mode, fused attention)."""
    model.eval()
    correct = 0
    for start in range(0, len(x), batch_size):
        xb = x[start:start + batch_size]
        if continuous:
            xb = mask_continuous(xb, torch.zeros_like(xb, dtype=torch.bool))
        correct += (model(xb).argmax(-1) == y[start:start + batch_size]).sum().item()
    model.train()
    return correct / max(len(x), 1)


def make_optimizer(model: Encoder, stage: Stage) -> torch.optim.AdamW:
    """AdamW over the parameters not frozen (frozen ones get no update, not even weight decay)."""
    for name, p in model.named_parameters():
        p.requires_grad_(model.group_of(name) not in stage.freeze)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(trainable, lr=stage.lr, weight_decay=stage.weight_decay)


def _learning_rate(stage: Stage, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then constant."""
    return stage.lr * min(1.0, (step + 1) / stage.warmup_steps) if stage.warmup_steps else stage.lr


def save_checkpoint(path: Path, model: Encoder, optimizer, state: StageState, meta: dict) -> None:
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
               "epoch": state.epoch, "step_in_epoch": state.step_in_epoch,
               "loss_sum": state.loss_sum, "history": state.history, "meta": meta}
    atomic_write(path, lambda tmp: torch.save(payload, tmp))


def load_checkpoint(path: Path) -> dict:
    """Load a checkpoint safely (``weights_only=True``); a corrupt file is an :class:`InputError`."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise InputError(f"{path}: not a loadable spt-theory checkpoint ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'unreadable'})") from None


def load_model_state(model: Encoder, state_dict: dict, source: Path) -> None:
    """Load weights, naming the checkpoint and the first mismatch when the architecture differs."""
    own = model.state_dict()
    for name, tensor in state_dict.items():
        if name not in own or own[name].shape != tensor.shape:
            expected = tuple(own[name].shape) if name in own else "absent"
            raise InputError(f"{source}: checkpoint of another architecture: parameter {name} has "
                             f"shape {tuple(tensor.shape)}, this model expects {expected}")
    missing = sorted(set(own) - set(state_dict))
    if missing:
        raise InputError(f"{source}: checkpoint of another architecture: missing parameter {missing[0]}")
    model.load_state_dict(state_dict)


def latest_checkpoint(stage_dir: Path, epochs: int) -> Path | None:
    """The furthest checkpoint of this stage not past ``epochs`` (``last.pt`` if it is further)."""
    best, best_pos = None, (-1, -1)
    for path in stage_dir.glob("epoch_*.pt"):
        e = int(path.stem.split("_")[1])
        if e <= epochs and (e, 0) > best_pos:
            best, best_pos = path, (e, 0)
    last = stage_dir / "last.pt"
    if last.exists():
        ckpt = load_checkpoint(last)
        pos = (ckpt["epoch"], ckpt["step_in_epoch"])
        if ckpt["epoch"] < epochs and pos > best_pos:
            best = last
    return best


def train_stage(model: Encoder, data: Dataset, stage: Stage, seed: int, stage_dir: Path, *,
                epoch_metrics: Callable[[Encoder], dict] | None = None, meta: dict | None = None,
                checkpoint_every: int = 200, progress: bool = True,
                stop_after_steps: int | None = None) -> list[dict]:
    """Train ``model`` for ``stage.epochs`` epochs, resuming from ``stage_dir`` if it has checkpoints.

    Returns the per-epoch history: ``{"epoch", "loss", "seconds", **epoch_metrics(model)}``.
    ``stop_after_steps`` ends the call early (after that many steps in this call), as a kill would.
    """
    stage_dir.mkdir(parents=True, exist_ok=True)
    meta = meta or {}
    optimizer = make_optimizer(model, stage)
    state = StageState()
    resume = latest_checkpoint(stage_dir, stage.epochs)
    if resume is not None:
        ckpt = load_checkpoint(resume)
        load_model_state(model, ckpt["model"], resume)
        optimizer.load_state_dict(ckpt["optimizer"])
        state = StageState(ckpt["epoch"], ckpt["step_in_epoch"], ckpt["loss_sum"], list(ckpt["history"]))
    n = len(data.x_train)
    steps_per_epoch = math.ceil(n / stage.batch_size)
    total = stage.epochs * steps_per_epoch
    done_steps = state.epoch * steps_per_epoch + state.step_in_epoch
    steps_this_call = 0
    bar = tqdm(total=total, initial=done_steps, disable=not progress, leave=False,
               desc=f"{stage.objective} ({stage.epochs} ep)", unit="step")
    model.train()
    while state.epoch < stage.epochs:
        start = time.perf_counter()
        order = torch.randperm(n, generator=_generator(seed, 1, state.epoch))
        while state.step_in_epoch < steps_per_epoch:
            step = state.epoch * steps_per_epoch + state.step_in_epoch
            idx = order[state.step_in_epoch * stage.batch_size:(state.step_in_epoch + 1) * stage.batch_size]
            for group in optimizer.param_groups:
                group["lr"] = _learning_rate(stage, step)
            loss = stage_loss(model, data, stage, data.x_train[idx], data.y_train[idx],
                              _generator(seed, 2, step))
            if not torch.isfinite(loss):
                bar.close()
                raise TrainingDiverged(f"non-finite loss ({loss.item()}) at step {step} "
                                       f"(epoch {state.epoch}); last good checkpoint kept in {stage_dir}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            state.loss_sum += loss.item()
            state.step_in_epoch += 1
            steps_this_call += 1
            bar.update(1)
            if state.step_in_epoch % checkpoint_every == 0 and state.step_in_epoch < steps_per_epoch:
                save_checkpoint(stage_dir / "last.pt", model, optimizer, state, meta)
            if stop_after_steps is not None and steps_this_call >= stop_after_steps:
                save_checkpoint(stage_dir / "last.pt", model, optimizer, state, meta)
                bar.close()
                return state.history
        record = {"epoch": state.epoch + 1, "loss": state.loss_sum / steps_per_epoch,
                  "seconds": round(time.perf_counter() - start, 3)}
        if epoch_metrics is not None:
            record.update(epoch_metrics(model))
        state = StageState(state.epoch + 1, 0, 0.0, state.history + [record])
        save_checkpoint(stage_dir / f"epoch_{state.epoch}.pt", model, optimizer, state, meta)
        bar.set_postfix({k: round(v, 3) for k, v in record.items() if isinstance(v, float)})
    (stage_dir / "last.pt").unlink(missing_ok=True)
    bar.close()
    return state.history

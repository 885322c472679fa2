"""One training loop for pretraining (SPT) and finetuning (supervised), on any :class:`Task`.

A :class:`Stage` says what to optimise (``spt``: masked reconstruction, ``supervised``: label CE),
for how many epochs, which parameter groups are frozen, and which groups are carried over from
the previous stage (the others are freshly initialised: hybrid initialisation).  A :class:`Task`
says what the stage trains on: the training tensors, the loss of a batch, the metrics recorded
after every epoch.  The walk task is a :class:`DatasetTask`; each LRA task is a
:class:`spt_theory.lra.inputs.LRATraining`.

:func:`train_stage` is resumable and deterministic: the batch order of epoch ``e`` and the mask
of global step ``t`` come from generators seeded by ``(seed, e)`` and ``(seed, t)``, so a run
resumed from any checkpoint replays exactly the batches an uninterrupted run would see.  Where
the stage is stored (its :class:`~spt_theory.training.cache.StageCache`: an ``epoch_<e>.pt`` after every
epoch, ``last.pt`` every ``checkpoint_every`` steps, which epochs are kept, the lock that lets one
process at a time train a stage) is the cache's business.

Other tasks than the walk (LRA) also bring a ``max_steps`` cap and a :class:`Runtime`: the
device's bf16 autocast and data parallelism over ``world_size`` processes
(DistributedDataParallel; each global batch is sharded across ranks as DistributedSampler shards
an epoch, so the batch order, the checkpoints and the resume logic stay those of one process).

Optimizer: AdamW with the stage's ``weight_decay`` (default 0.01) on *every* trainable parameter,
LayerNorm gains, biases and embeddings included, as ``torch.optim.AdamW(model.parameters())``
does; see :func:`spt_theory.training.optim.make_optimizer` for why and what the usual split would
change.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from spt_theory.core.cpu import tune_allocator
from spt_theory.core.model import PARAMETER_GROUPS, Encoder
from spt_theory.core.objectives import (
    bernoulli_mask,
    mask_continuous,
    mask_tokens,
    masked_l1_loss,
    masked_token_loss,
    supervised_loss,
)
from spt_theory.training.cache import StageCache, StageState, keep_policy, load_checkpoint
from spt_theory.training.optim import make_optimizer
from spt_theory.training.order import epoch_batches, keyed_generator
from spt_theory.training.order import stage_seed as stage_seed  # its path for the runners
from spt_theory.training.runtime import Runtime
from spt_theory.util.files import ConfigError, InputError, make_dirs
from spt_theory.util.progress import Progress

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
            raise ConfigError(f"objective: must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.epochs < 0:
            raise ConfigError(f"epochs: must be >= 0, got {self.epochs}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size: must be >= 1, got {self.batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"lr: must be a positive number, got {self.lr}")
        if not 0.0 <= self.mask_ratio < 1.0:
            raise ConfigError(f"mask_ratio: must be in [0, 1), got {self.mask_ratio}")
        for name in (*self.freeze, *self.keep):
            if name not in PARAMETER_GROUPS:
                raise ConfigError(f"parameter group: unknown {name!r}; groups: {', '.join(PARAMETER_GROUPS)}")


@dataclass
class Dataset:
    """Training and test tensors.  ``mask_id`` is set for token inputs, ``None`` for continuous ones."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mask_id: int | None = None


class TrainingData(Protocol):
    """What training reads of a task's splits (:class:`Dataset`, the LRA tasks' data)."""

    @property
    def x_train(self) -> torch.Tensor: ...

    @property
    def y_train(self) -> torch.Tensor: ...


class Task(Protocol):
    """What :func:`train_stage` trains on.

    ``data``: the splits; training reads ``data.x_train`` and ``data.y_train`` (indexed by example,
    on the device where the loss is computed).  ``lengths``: one real length per training example
    (on the CPU) for length-bucketed batches (:func:`epoch_batches`), or None.
    """

    @property
    def data(self) -> TrainingData: ...

    lengths: torch.Tensor | None

    def loss(self, model: Encoder, stage: Stage, x: torch.Tensor, y: torch.Tensor,
             mask_generator: torch.Generator) -> torch.Tensor:
        """The training loss of one batch under the stage's objective."""

    def metrics(self, model: Encoder, stage: Stage) -> dict:
        """The figures recorded after every epoch (test accuracy, validation loss, ...)."""

    def check(self, model: Encoder) -> None:
        """Raise :class:`InputError` if ``model`` cannot read the task's inputs."""


@dataclass
class DatasetTask:
    """A :class:`Task` over in-memory tensors: :func:`stage_loss` on ``data``, and
    ``epoch_metrics(model)`` (if given) after every epoch.  The walk task is one."""

    data: Dataset
    epoch_metrics: Callable[[Encoder], dict] | None = None
    lengths: torch.Tensor | None = None

    def loss(self, model: Encoder, stage: Stage, x: torch.Tensor, y: torch.Tensor,
             mask_generator: torch.Generator) -> torch.Tensor:
        return stage_loss(model, self.data, stage, x, y, mask_generator)

    def metrics(self, model: Encoder, stage: Stage) -> dict:
        return self.epoch_metrics(model) if self.epoch_metrics is not None else {}

    def check(self, model: Encoder) -> None:
        """Sequences (N, L): every position needs a row of the positional table."""
        for name in ("x_train", "x_test"):
            length = getattr(self.data, name).shape[1]
            if length > model.cfg.max_len:
                raise InputError(f"{name}: sequence length {length} exceeds the model's positional "
                                 f"table (max_len {model.cfg.max_len})")


class _StageObjective(nn.Module):
    """The stage's loss as a module of ``model``, so DistributedDataParallel can wrap it."""

    def __init__(self, model: Encoder, stage: Stage, task: Task):
        super().__init__()
        self.model, self.stage, self.task = model, stage, task

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask_generator: torch.Generator) -> torch.Tensor:
        return self.task.loss(self.model, self.stage, x, y, mask_generator)


class TrainingDiverged(RuntimeError):
    """A non-finite loss: training stopped, the last good checkpoint is kept."""


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
    """Share of ``x`` classified correctly (eval mode, fused attention); continuous ``x`` is fed
    as the channels [x, 0]."""
    model.eval()
    correct = 0
    for start in range(0, len(x), batch_size):
        xb = x[start:start + batch_size]
        if continuous:
            xb = mask_continuous(xb, torch.zeros_like(xb, dtype=torch.bool))
        correct += (model(xb).argmax(-1) == y[start:start + batch_size]).sum().item()
    model.train()
    return correct / max(len(x), 1)


def _learning_rate(stage: Stage, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then constant."""
    return stage.lr * min(1.0, (step + 1) / stage.warmup_steps) if stage.warmup_steps else stage.lr


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


def load_groups(model: Encoder, state_dict: dict, groups: tuple[str, ...], source: str | Path) -> None:
    """Copy the parameters of ``groups`` from ``state_dict`` into ``model`` (hybrid initialisation
    across architectures that share those groups); a missing or reshaped parameter is an InputError."""
    with torch.no_grad():
        for group in groups:
            for name, p in model.named_group_parameters(group):
                if name not in state_dict or state_dict[name].shape != p.shape:
                    found = tuple(state_dict[name].shape) if name in state_dict else "absent"
                    raise InputError(f"{source}: cannot transplant group {group!r}: parameter {name} "
                                     f"is {found} there, this model expects {tuple(p.shape)}")
                p.copy_(state_dict[name])


def epoch_figures(stage: Stage, record: dict) -> str:
    """An epoch record's figures as text (``loss 0.6931  band_mass 0.0476``): its numbers other than
    the epoch and its seconds, without an SPT stage's classification accuracies (read through a
    head that SPT does not train, they mean nothing there)."""
    return "  ".join(f"{key} {value:.4f}" for key, value in record.items()
                     if isinstance(value, float) and key != "seconds"
                     and not (stage.objective == "spt" and key.endswith("accuracy")))


@dataclass(frozen=True)
class StageOptions:
    """How :func:`train_stage` runs a stage, as opposed to what it trains: no field enters a cache
    key, and none but ``runtime`` (bf16 autocast, data parallelism) changes what the finished stage
    holds.

    ``meta``: stored with every checkpoint (the run's config).  ``progress``: show progress
    (:class:`spt_theory.util.progress.Progress`: a bar on a terminal, one line per epoch otherwise).
    ``checkpoint_every``: ``last.pt`` after every that many steps of an epoch.  ``keep_checkpoints``:
    the epoch checkpoints kept, ``last+best`` (see :meth:`StageCache.prune`) or ``all``; None: the
    environment's ``SPT_KEEP_CHECKPOINTS``.  ``stop_after_steps``: end the call after that many
    steps (a checkpoint written first), as a kill would.  ``runtime``: where it computes
    (:class:`Runtime`); only its main rank writes checkpoints and shows progress.
    ``on_found_finished``: called when another process, whose lock this one waited for, had
    finished the stage: it is reloaded, not trained (one line on stderr says so).
    """

    meta: dict = field(default_factory=dict)
    progress: bool = True
    checkpoint_every: int = 200
    keep_checkpoints: str | None = None
    stop_after_steps: int | None = None
    runtime: Runtime = Runtime()
    on_found_finished: Callable[[], None] | None = None


def stage_steps(n_train: int, epochs: int, batch_size: int, max_steps: int | None = None) -> int:
    """Optimizer steps of a finished stage: ``epochs`` passes of ceil(n_train / batch_size) steps,
    ended after ``max_steps`` where that comes first."""
    total = epochs * math.ceil(n_train / batch_size)
    return total if max_steps is None else min(total, max_steps)


def stage_epochs(n_train: int, stage: Stage, max_steps: int | None = None) -> int:
    """Epochs of a finished stage: ``stage.epochs``, or fewer where ``max_steps`` ends it first
    (the last one cut short)."""
    total = stage_steps(n_train, stage.epochs, stage.batch_size, max_steps)
    return stage.epochs if max_steps is None else math.ceil(total / math.ceil(n_train / stage.batch_size))


class Steps:
    """The optimizer steps of ``stage`` on ``task`` for ``seed``, one at a time: global step ``t``
    trains on batch ``t mod per_epoch`` of epoch ``t // per_epoch``'s order
    (``keyed_generator(seed, 1, epoch)``) with the masks of ``keyed_generator(seed, 2, t)``, at the
    stage's learning rate for ``t`` (warm-up).  :func:`train_stage` and the plateau's step-level
    trainer (:class:`spt_theory.plateau.runs.Trainer`) both step through it.

    ``optimizer`` None: only :meth:`loss` (gradients without steps)."""

    def __init__(self, model: Encoder, task: Task, stage: Stage, seed: int,
                 optimizer: torch.optim.Optimizer | None, runtime: Runtime = Runtime()):
        self.model, self.task, self.stage, self.seed = model, task, stage, seed
        self.optimizer, self.runtime = optimizer, runtime
        self.objective = runtime.wrap(_StageObjective(model, stage, task))
        self.n = len(task.data.x_train)
        self.per_epoch = math.ceil(self.n / stage.batch_size)
        self._order: tuple[int, list[torch.Tensor]] | None = None

    def batches(self, epoch: int) -> list[torch.Tensor]:
        """The training indices of each step of ``epoch`` (:func:`epoch_batches`)."""
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, epoch_batches(self.n, self.stage.batch_size, keyed_generator(self.seed, 1, epoch),
                                                self.task.lengths))
        return self._order[1]

    def loss(self, step: int) -> torch.Tensor:
        """The loss of global step ``step``'s batch and masks (this rank's share), under autocast."""
        epoch, within = divmod(step, self.per_epoch)
        idx = self.runtime.shard(self.batches(epoch)[within])
        with self.runtime.autocast_context():
            return self.objective(self.task.data.x_train[idx], self.task.data.y_train[idx],
                                  keyed_generator(self.seed, 2, step))

    def take(self, step: int) -> float:
        """Global step ``step``: its learning rate, loss, gradients and optimizer step.  Returns the
        loss (mean over ranks); :class:`TrainingDiverged` if it is not finite (nothing updated)."""
        optimizer = self.optimizer
        if optimizer is None:
            raise ValueError("these Steps have no optimizer (optimizer=None): only loss()")
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(self.stage, step)
        loss = self.loss(step)
        reported = self.runtime.mean(loss.detach())
        if not torch.isfinite(reported):
            raise TrainingDiverged(f"non-finite loss ({reported.item()}) at step {step} "
                                   f"(epoch {step // self.per_epoch + 1})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return reported.item()


def train_stage(model: Encoder, task: Task, stage: Stage, seed: int, cache: StageCache, *,
                max_steps: int | None = None, options: StageOptions = StageOptions(), **changes) -> list[dict]:
    """Train ``model`` on ``task`` for ``stage.epochs`` epochs, resuming from ``cache`` if it has
    checkpoints; returns the per-epoch history ``{"epoch", "loss", "seconds", **task.metrics(model, stage)}``.

    What is trained: ``task``, ``stage``, ``seed`` (the batch orders and masks, module doc) and
    ``max_steps``, which ends the stage after that many optimizer steps (the last epoch is cut short
    and recorded as an epoch); ``cache`` holds it.  How: ``options`` (:class:`StageOptions`);
    keyword arguments named like its fields replace them for this call (``progress=False``).  The
    main rank holds the stage's lock while it trains; a process that had to wait resumes from (or
    returns) what the other finished.  The process's allocator is tuned for training
    (:func:`spt_theory.core.cpu.tune_allocator`).
    """
    options = replace(options, **changes)
    runtime, meta = options.runtime, options.meta
    keep = keep_policy(options.keep_checkpoints)
    with cache.lock() if runtime.main else nullcontext(False) as waited:
        runtime.barrier()  # no rank reads a checkpoint before the main one holds the lock
        tune_allocator()
        task.check(model)
        make_dirs(cache.dir)
        optimizer = make_optimizer(model, stage.lr, freeze=stage.freeze, weight_decay=stage.weight_decay)
        steps = Steps(model, task, stage, seed, optimizer, runtime)
        steps_per_epoch = steps.per_epoch
        total = stage_steps(steps.n, stage.epochs, stage.batch_size, max_steps)
        epochs = stage_epochs(steps.n, stage, max_steps)
        state = StageState()
        resume = cache.latest(epochs)
        if resume is not None:
            ckpt = load_checkpoint(resume)
            load_model_state(model, ckpt["model"], resume)
            optimizer.load_state_dict(ckpt["optimizer"])
            state = StageState(ckpt["epoch"], ckpt["step_in_epoch"], ckpt["loss_sum"], list(ckpt["history"]))
        if waited and state.epoch >= epochs:
            print(f"{cache.dir}: finished by the process this one waited for: reloaded, not trained again",
                  file=sys.stderr, flush=True)
            if options.on_found_finished is not None:
                options.on_found_finished()
        runtime.barrier()  # every rank has read the checkpoint before the main one writes again
        done_steps = state.epoch * steps_per_epoch + state.step_in_epoch
        steps_this_call = 0
        bar = Progress(f"{stage.objective} ({epochs} epoch{'s' if epochs != 1 else ''})", total, "steps",
                       initial=done_steps, enabled=options.progress and runtime.main)
        model.train()
        while state.epoch < epochs:
            start = time.perf_counter()
            epoch_steps = min(steps_per_epoch, total - state.epoch * steps_per_epoch)
            while state.step_in_epoch < epoch_steps:
                try:
                    state.loss_sum += steps.take(state.epoch * steps_per_epoch + state.step_in_epoch)
                except TrainingDiverged as diverged:
                    bar.close()
                    raise TrainingDiverged(f"{diverged}; last good checkpoint kept in {cache.dir}") from None
                state.step_in_epoch += 1
                steps_this_call += 1
                bar.update(1)
                if (state.step_in_epoch % options.checkpoint_every == 0 and state.step_in_epoch < epoch_steps
                        and runtime.main):
                    cache.save_last(model, optimizer, state, meta)
                if options.stop_after_steps is not None and steps_this_call >= options.stop_after_steps:
                    if runtime.main:
                        cache.save_last(model, optimizer, state, meta)
                    bar.close()
                    runtime.barrier()
                    return state.history
            record = {"epoch": state.epoch + 1, "loss": state.loss_sum / epoch_steps,
                      "seconds": round(time.perf_counter() - start, 3), **task.metrics(model, stage)}
            state = StageState(state.epoch + 1, 0, 0.0, state.history + [record])
            if runtime.main:
                cache.save_epoch(model, optimizer, state, meta, epochs, keep)
            bar.note(f"epoch {record['epoch']}/{epochs}: {epoch_figures(stage, record)}")
        if runtime.main:
            cache.finish()
        bar.close()
        runtime.barrier()  # the stage's files exist before any rank reads them
        return state.history


def run_stage(model: Encoder, task: Task, stage: Stage, seed: int, cache: StageCache, *,
              max_steps: int | None = None, options: StageOptions = StageOptions()) -> tuple[list[dict], bool]:
    """A stage's history, and whether it was reloaded rather than trained: a finished stage (the
    checkpoint of its last epoch in ``cache``) is loaded into ``model`` without taking the lock,
    so a cache that is only read serves; otherwise :func:`train_stage`, where a stage that the
    process it waited for finished counts as reloaded."""
    epochs = stage_epochs(len(task.data.x_train), stage, max_steps)
    if cache.has(epochs):
        checkpoint = cache.load(epochs)
        load_model_state(model, checkpoint["model"], cache.checkpoint(epochs))
        return list(checkpoint["history"]), True
    found: list[bool] = []

    def found_finished() -> None:
        found.append(True)
        if options.on_found_finished is not None:
            options.on_found_finished()

    history = train_stage(model, task, stage, seed, cache, max_steps=max_steps,
                          options=replace(options, on_found_finished=found_finished))
    return history, bool(found)

"""One training loop for pretraining (SPT) and finetuning (supervised).

A :class:`Stage` says what to optimise (``spt``: masked reconstruction, ``supervised``: label CE),
for how many epochs, which parameter groups are frozen, and which groups are carried over from
the previous stage (the others are freshly initialised: hybrid initialisation).

:func:`train_stage` is resumable and deterministic: the batch order of epoch ``e`` and the mask
of global step ``t`` come from generators seeded by ``(seed, e)`` and ``(seed, t)``, so a run
resumed from any checkpoint replays exactly the batches an uninterrupted run would see.  A
checkpoint ``epoch_<e>.pt`` is written (atomically) after every epoch and ``last.pt`` every
``checkpoint_every`` steps; loading uses ``torch.load(weights_only=True)``.  Of the epoch
checkpoints only the last and the best (:func:`best_epoch`) are kept unless the caller (or
``SPT_KEEP_CHECKPOINTS=all``) asks for every one; a checkpoint past the stage's epoch count (a longer
run in the same folder) is never removed.  One process at a time trains a stage folder
(:func:`spt_theory.io.directory_lock`); another one waits, then reloads what it finished.
Checkpoints carry a format number (:data:`CHECKPOINT_FORMAT`); one without it is format 1.

The walk task trains on a :class:`Dataset` with :func:`stage_loss`.  Other tasks (LRA) pass their
own ``loss_fn`` (how to mask, build inputs and score a batch), a ``max_steps`` cap, and a
:class:`Runtime`: the device's bf16 autocast and data parallelism over ``world_size`` processes
(DistributedDataParallel; each global batch is sharded across ranks as DistributedSampler shards
an epoch, so the batch order, the checkpoints and the resume logic stay those of one process).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from tqdm.auto import tqdm

from spt_theory.cpu import tune_allocator
from spt_theory.io import InputError, atomic_write, directory_lock, make_dirs, remove_stale_temps
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


LossFn = Callable[[Encoder, "Stage", torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]
"""``loss_fn(model, stage, x, y, mask_generator)``: the training loss of one batch."""


@dataclass(frozen=True)
class Runtime:
    """Where :func:`train_stage` computes.  The default (one CPU process, fp32) is the plain loop.

    ``autocast``: forward passes under bf16 autocast (CUDA).  ``world_size`` > 1: this process is
    rank ``rank`` of a data-parallel group (``torch.distributed`` already initialised).
    """

    device: torch.device = torch.device("cpu")
    autocast: bool = False
    rank: int = 0
    world_size: int = 1

    @property
    def main(self) -> bool:
        """Whether this process writes files and shows progress."""
        return self.rank == 0

    def autocast_context(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16) if self.autocast else nullcontext()

    def shard(self, index: torch.Tensor) -> torch.Tensor:
        """This rank's share of a global batch, by DistributedSampler's rule: wrap around to a
        multiple of ``world_size``, then every ``world_size``-th index starting at ``rank``."""
        if self.world_size == 1:
            return index
        padded = len(index) + (-len(index) % self.world_size)
        return index[torch.arange(padded) % len(index)][self.rank::self.world_size]

    def wrap(self, module: nn.Module) -> nn.Module:
        """``module`` under DistributedDataParallel when data-parallel (gradients averaged over ranks)."""
        if self.world_size == 1:
            return module
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(module, device_ids=device_ids, broadcast_buffers=False)

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over ranks (``value`` itself in one process)."""
        if self.world_size == 1:
            return value
        total = value.clone()
        dist.all_reduce(total)
        return total / self.world_size

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()


class _StageObjective(nn.Module):
    """The stage's loss as a module of ``model``, so DistributedDataParallel can wrap it."""

    def __init__(self, model: Encoder, stage: Stage, loss_fn: LossFn):
        super().__init__()
        self.model, self.stage, self.loss_fn = model, stage, loss_fn

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask_generator: torch.Generator) -> torch.Tensor:
        return self.loss_fn(self.model, self.stage, x, y, mask_generator)


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


BUCKET_BATCHES = 50
"""Batches per length bucket (:func:`epoch_batches`)."""


def epoch_batches(n: int, batch_size: int, generator: torch.Generator,
                  lengths: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The batches of one epoch over examples 0..n-1, each example exactly once.

    Without ``lengths``: consecutive slices of a random permutation.  With ``lengths`` (length
    bucketing): the permutation is cut into buckets of ``BUCKET_BATCHES * batch_size`` examples,
    each bucket is sorted by length (stable) and sliced into batches, and the batches are put in
    a random order; a batch then holds examples of similar length, so cutting it to its longest
    leaves little padding.  Both draw only from ``generator``, and both give ceil(n / batch_size)
    batches.
    """
    order = torch.randperm(n, generator=generator)
    if lengths is None:
        return list(order.split(batch_size))
    batches = []
    for bucket in order.split(BUCKET_BATCHES * batch_size):
        batches += bucket[torch.argsort(lengths[bucket], stable=True)].split(batch_size)
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def make_optimizer(model: Encoder, stage: Stage) -> torch.optim.AdamW:
    """AdamW over the parameters not frozen (frozen ones get no update, not even weight decay)."""
    for name, p in model.named_parameters():
        p.requires_grad_(model.group_of(name) not in stage.freeze)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(trainable, lr=stage.lr, weight_decay=stage.weight_decay)


def _learning_rate(stage: Stage, step: int) -> float:
    """Linear warm-up over ``warmup_steps``, then constant."""
    return stage.lr * min(1.0, (step + 1) / stage.warmup_steps) if stage.warmup_steps else stage.lr


CHECKPOINT_FORMAT = 2
"""Version of the checkpoint layout.  1: the fields of :data:`CHECKPOINT_KEYS` and ``meta``, no
``format`` field; 2: the same plus ``format``.  Readable: :data:`READABLE_FORMATS`."""
READABLE_FORMATS = (1, 2)


def save_checkpoint(path: Path, model: Encoder, optimizer, state: StageState, meta: dict) -> None:
    payload = {"format": CHECKPOINT_FORMAT, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
               "epoch": state.epoch, "step_in_epoch": state.step_in_epoch,
               "loss_sum": state.loss_sum, "history": state.history, "meta": meta}
    atomic_write(path, lambda tmp: _save_to_file(payload, tmp))


def _save_to_file(payload: dict, path: Path) -> None:
    """torch.save through a Python file, so that a full disk surfaces as an OSError (ENOSPC),
    not as the C++ writer's bare RuntimeError."""
    with open(path, "wb") as file:
        torch.save(payload, file)


CHECKPOINT_KEYS = ("model", "optimizer", "epoch", "step_in_epoch", "loss_sum", "history")


def load_checkpoint(path: Path) -> dict:
    """Load a checkpoint safely (``weights_only=True``); a corrupt file, or a loadable file that is
    not a checkpoint written by :func:`save_checkpoint`, is an :class:`InputError`."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        # weights_only's refusal names the global it blocked on a later line: show that one
        detail = next((line for line in lines if "GLOBAL" in line), lines[0] if lines else "unreadable")
        raise InputError(f"{path}: not a loadable spt-theory checkpoint ({type(exc).__name__}: "
                         f"{detail})") from None
    if not isinstance(ckpt, dict):
        raise InputError(f"{path}: not an spt-theory checkpoint (holds a {type(ckpt).__name__}, "
                         f"not a dict with {', '.join(CHECKPOINT_KEYS)})")
    version = ckpt.setdefault("format", 1)
    if type(version) is not int or version not in READABLE_FORMATS:
        raise InputError(f"{path}: checkpoint format {version!r}, this version of spt-theory reads formats "
                         f"{', '.join(map(str, READABLE_FORMATS))}; retrain into another cache folder")
    missing = [key for key in CHECKPOINT_KEYS if key not in ckpt]
    if missing or not isinstance(ckpt["model"], dict):
        raise InputError(f"{path}: not an spt-theory checkpoint (" + (
            f"missing field {missing[0]!r})" if missing else "field 'model' is not a state dict)"))
    return ckpt


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


def load_groups(model: Encoder, state_dict: dict, groups: tuple[str, ...], source: Path) -> None:
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


KEEP_POLICIES = ("last+best", "all")
KEEP_ENV = "SPT_KEEP_CHECKPOINTS"


def keep_policy(keep: str | None) -> str:
    """``keep``, or when None the environment's ``SPT_KEEP_CHECKPOINTS``, or ``last+best``."""
    source = "keep_checkpoints"
    if keep is None:
        keep, source = os.environ.get(KEEP_ENV) or "last+best", KEEP_ENV
    if keep not in KEEP_POLICIES:
        raise InputError(f"{source}: must be one of {', '.join(KEEP_POLICIES)}, got {keep!r}")
    return keep


def best_epoch(history: list[dict]) -> int | None:
    """The best epoch of ``history`` as the LRA runner picks it: the lowest ``val_loss`` (a
    non-finite one counts as +inf), else the highest ``val_accuracy``; the first of ties; None
    when the records carry neither."""
    if history and "val_loss" in history[0]:
        value = lambda r: r["val_loss"] if math.isfinite(r["val_loss"]) else math.inf  # noqa: E731
        return min(history, key=value)["epoch"]
    if history and "val_accuracy" in history[0]:
        return max(history, key=lambda r: r["val_accuracy"])["epoch"]
    return None


def prune_checkpoints(stage_dir: Path, history: list[dict], epochs: int, keep: str) -> None:
    """Remove the epoch checkpoints that ``keep`` does not need: with ``last+best`` every one
    but the last of ``history``, its :func:`best_epoch`, and those past ``epochs`` (they belong to
    a longer run of the same stage)."""
    if keep == "all" or not history:
        return
    needed = {history[-1]["epoch"], best_epoch(history)}
    for path in stage_dir.glob("epoch_*.pt"):
        number = path.stem.split("_", 1)[1]
        if number.isdigit() and int(number) <= epochs and int(number) not in needed:
            path.unlink(missing_ok=True)


def save_epoch(stage_dir: Path, model: Encoder, optimizer, state: StageState, meta: dict,
               epochs: int, keep: str) -> None:
    """Write ``epoch_<e>.pt`` of a finished epoch, then drop the epoch checkpoints ``keep`` no
    longer needs (after the write: a kill in between leaves one checkpoint too many, never none)."""
    save_checkpoint(stage_dir / f"epoch_{state.epoch}.pt", model, optimizer, state, meta)
    prune_checkpoints(stage_dir, state.history, epochs, keep)


def train_stage(model: Encoder, data: Dataset, stage: Stage, seed: int, stage_dir: Path, *,
                keep_checkpoints: str | None = None, runtime: Runtime = Runtime(), **options) -> list[dict]:
    """Train ``model`` for ``stage.epochs`` epochs, resuming from ``stage_dir`` if it has checkpoints.

    ``keep_checkpoints``: ``last+best`` (default; see :func:`prune_checkpoints`) or ``all``; when
    None, the environment's ``SPT_KEEP_CHECKPOINTS``.  The main rank holds the folder's lock while
    the stage trains; a process that had to wait resumes from (or returns) what the other finished.
    The other keyword arguments are :func:`_train_stage`'s.
    """
    keep = keep_policy(keep_checkpoints)
    stage_dir = Path(stage_dir)
    with directory_lock(stage_dir) if runtime.main else nullcontext():
        if runtime.main:
            remove_stale_temps(stage_dir)
        runtime.barrier()  # no rank reads a checkpoint before the main one holds the lock
        return _train_stage(model, data, stage, seed, stage_dir, keep=keep, runtime=runtime, **options)


def _train_stage(model: Encoder, data: Dataset, stage: Stage, seed: int, stage_dir: Path, *,
                 epoch_metrics: Callable[[Encoder], dict] | None = None, meta: dict | None = None,
                 checkpoint_every: int = 200, progress: bool = True,
                 stop_after_steps: int | None = None, loss_fn: LossFn | None = None,
                 max_steps: int | None = None, runtime: Runtime = Runtime(), keep: str = "all",
                 lengths: torch.Tensor | None = None) -> list[dict]:
    """Train ``model`` for ``stage.epochs`` epochs, resuming from ``stage_dir`` if it has checkpoints.

    Returns the per-epoch history: ``{"epoch", "loss", "seconds", **epoch_metrics(model)}``.
    ``stop_after_steps`` ends the call early (after that many steps in this call), as a kill would.
    ``loss_fn`` replaces :func:`stage_loss` on ``data`` (``data`` then only supplies ``x_train``
    and ``y_train``, on the device where the loss is computed).  ``max_steps`` ends the stage after
    that many optimizer steps: the last epoch is cut short and recorded as an epoch.  ``runtime``:
    see :class:`Runtime`; only its main rank writes checkpoints.  ``lengths`` (one per training
    example, on the CPU): batches come from length-sorted buckets (:func:`epoch_batches`).  The
    process's allocator is tuned for training (:func:`spt_theory.cpu.tune_allocator`).
    """
    tune_allocator()
    if loss_fn is None:  # walk data (N, L): every position needs a row of the positional table
        for name in ("x_train", "x_test"):
            length = getattr(data, name).shape[1]
            if length > model.cfg.max_len:
                raise InputError(f"{name}: sequence length {length} exceeds the model's positional "
                                 f"table (max_len {model.cfg.max_len})")
    make_dirs(stage_dir)
    meta = meta or {}
    if loss_fn is None:
        def loss_fn(model, stage, x, y, mask_generator):
            return stage_loss(model, data, stage, x, y, mask_generator)
    optimizer = make_optimizer(model, stage)
    objective = runtime.wrap(_StageObjective(model, stage, loss_fn))
    n = len(data.x_train)
    steps_per_epoch = math.ceil(n / stage.batch_size)
    total = stage.epochs * steps_per_epoch if max_steps is None else min(stage.epochs * steps_per_epoch, max_steps)
    epochs = stage.epochs if max_steps is None else math.ceil(total / steps_per_epoch)
    state = StageState()
    resume = latest_checkpoint(stage_dir, epochs)
    if resume is not None:
        ckpt = load_checkpoint(resume)
        load_model_state(model, ckpt["model"], resume)
        optimizer.load_state_dict(ckpt["optimizer"])
        state = StageState(ckpt["epoch"], ckpt["step_in_epoch"], ckpt["loss_sum"], list(ckpt["history"]))
    runtime.barrier()  # every rank has read the checkpoint before the main one writes again
    done_steps = state.epoch * steps_per_epoch + state.step_in_epoch
    steps_this_call = 0
    bar = tqdm(total=total, initial=done_steps, disable=not (progress and runtime.main), leave=False,
               desc=f"{stage.objective} ({stage.epochs} ep)", unit="step")
    model.train()
    while state.epoch < epochs:
        start = time.perf_counter()
        epoch_steps = min(steps_per_epoch, total - state.epoch * steps_per_epoch)
        batches = epoch_batches(n, stage.batch_size, _generator(seed, 1, state.epoch), lengths)
        while state.step_in_epoch < epoch_steps:
            step = state.epoch * steps_per_epoch + state.step_in_epoch
            idx = runtime.shard(batches[state.step_in_epoch])
            for group in optimizer.param_groups:
                group["lr"] = _learning_rate(stage, step)
            with runtime.autocast_context():
                loss = objective(data.x_train[idx], data.y_train[idx], _generator(seed, 2, step))
            reported = runtime.mean(loss.detach())
            if not torch.isfinite(reported):
                bar.close()
                raise TrainingDiverged(f"non-finite loss ({reported.item()}) at step {step} "
                                       f"(epoch {state.epoch + 1}); last good checkpoint kept in {stage_dir}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            state.loss_sum += reported.item()
            state.step_in_epoch += 1
            steps_this_call += 1
            bar.update(1)
            if (state.step_in_epoch % checkpoint_every == 0 and state.step_in_epoch < epoch_steps
                    and runtime.main):
                save_checkpoint(stage_dir / "last.pt", model, optimizer, state, meta)
            if stop_after_steps is not None and steps_this_call >= stop_after_steps:
                if runtime.main:
                    save_checkpoint(stage_dir / "last.pt", model, optimizer, state, meta)
                bar.close()
                runtime.barrier()
                return state.history
        record = {"epoch": state.epoch + 1, "loss": state.loss_sum / epoch_steps,
                  "seconds": round(time.perf_counter() - start, 3)}
        if epoch_metrics is not None:
            record.update(epoch_metrics(model))
        state = StageState(state.epoch + 1, 0, 0.0, state.history + [record])
        if runtime.main:
            save_epoch(stage_dir, model, optimizer, state, meta, epochs, keep)
        bar.set_postfix({k: round(v, 3) for k, v in record.items() if isinstance(v, float)})
    if runtime.main:
        (stage_dir / "last.pt").unlink(missing_ok=True)
    bar.close()
    runtime.barrier()  # the stage's files exist before any rank reads them
    return state.history

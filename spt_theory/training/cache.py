"""The run cache: one folder per training stage, named by a hash of everything the stage depends on.

A :class:`StageCache` is the only place that knows how a stage is stored:

    <root>/<key>/epoch_<e>.pt   the checkpoint after epoch e (weights, optimizer, position, history)
    <root>/<key>/last.pt        the checkpoint of an unfinished epoch (resume point), removed at the end
    <root>/<key>/run.json       the stage's record (config, versions, per-epoch history), walk runs
    <root>/.<key>.lock          held while one process trains the stage

``key = config_hash(fields)``: the first 16 hex digits of the sha256 of the canonical JSON
(``sort_keys=True``) of the fields, so any change of a field is another folder and equal fields
find the same one.  Callers choose the fields (:func:`spt_theory.walk.experiments.stage_key` for the
walk runs, :meth:`spt_theory.lra.runner.LRARun.stage_cache` for LRA); the fields exclude the
stage's epoch count, so a longer run of a stage extends the same folder and ``epoch_<e>.pt`` of it
is a run of ``e`` epochs (constant learning rate after warm-up).

Checkpoints are written atomically and loaded with ``torch.load(weights_only=True)``; each carries
a format number (:data:`CHECKPOINT_FORMAT`; a checkpoint without one is format 1).  Of the epoch
checkpoints only the last and the best (:func:`best_epoch`) are kept unless the caller (or
``SPT_KEEP_CHECKPOINTS=all``) asks for every one; a checkpoint past the stage's epoch count (a
longer run in the same folder) is never removed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from spt_theory.util.files import ConfigError, InputError, atomic_write, write_json
from spt_theory.util.locks import directory_lock


def config_hash(obj) -> str:
    """sha256 (16 hex digits) of the canonical JSON of a (nested) dataclass or dict."""
    text = json.dumps(dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else obj,
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class StageState:
    """What a checkpoint holds besides the weights: where the stage is, and its metrics so far."""

    epoch: int = 0
    step_in_epoch: int = 0
    loss_sum: float = 0.0  # of this epoch's steps so far
    history: list[dict] = field(default_factory=list)


CHECKPOINT_FORMAT = 2
"""Version of the checkpoint layout.  1: the fields of :data:`CHECKPOINT_KEYS` and ``meta``, no
``format`` field; 2: the same plus ``format``.  Readable: :data:`READABLE_FORMATS`."""
READABLE_FORMATS = (1, 2)
CHECKPOINT_KEYS = ("model", "optimizer", "epoch", "step_in_epoch", "loss_sum", "history")


def save_checkpoint(path: Path, model: torch.nn.Module, optimizer, state: StageState, meta: dict) -> None:
    payload = {"format": CHECKPOINT_FORMAT, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
               "epoch": state.epoch, "step_in_epoch": state.step_in_epoch,
               "loss_sum": state.loss_sum, "history": state.history, "meta": meta}
    atomic_write(path, lambda tmp: _save_to_file(payload, tmp))


def _save_to_file(payload: dict, path: Path) -> None:
    """torch.save through a Python file, so that a full disk surfaces as an OSError (ENOSPC),
    not as the C++ writer's bare RuntimeError."""
    with open(path, "wb") as file:
        torch.save(payload, file)


def load_checkpoint(path: Path) -> dict:
    """Load a checkpoint safely (``weights_only=True``); a corrupt file, or a loadable file that is
    not a checkpoint written by :func:`save_checkpoint`, is an :class:`InputError`."""
    try:
        with warnings.catch_warnings():  # torch warns about a foreign file (its pickle protocol): the error says it
            warnings.simplefilter("ignore", UserWarning)
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


KEEP_POLICIES = ("last+best", "all")
KEEP_ENV = "SPT_KEEP_CHECKPOINTS"


def keep_policy(keep: str | None) -> str:
    """``keep``, or when None the environment's ``SPT_KEEP_CHECKPOINTS``, or ``last+best``."""
    source = "keep_checkpoints"
    if keep is None:
        keep, source = os.environ.get(KEEP_ENV) or "last+best", KEEP_ENV
    if keep not in KEEP_POLICIES:
        raise ConfigError(f"{source}: must be one of {', '.join(KEEP_POLICIES)}, got {keep!r}")
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


@dataclass(frozen=True)
class StageCache:
    """The folder ``root/key`` of one training stage (layout: module docstring)."""

    root: Path
    key: str

    @classmethod
    def of(cls, root: Path, fields: dict) -> StageCache:
        """The stage whose key hashes ``fields`` (:func:`config_hash`)."""
        return cls(Path(root), config_hash(fields))

    @classmethod
    def folder(cls, path: Path) -> StageCache:
        """The stage stored in ``path`` itself (its name is the key)."""
        path = Path(path)
        return cls(path.parent, path.name)

    @property
    def dir(self) -> Path:
        return self.root / self.key

    @property
    def last(self) -> Path:
        return self.dir / "last.pt"

    def checkpoint(self, epoch: int) -> Path:
        """The checkpoint written after ``epoch``."""
        return self.dir / f"epoch_{epoch}.pt"

    def checkpoints(self, epochs: int) -> list[Path]:
        """``epoch_1.pt .. epoch_<epochs>.pt`` (they exist once a run that kept all is cached)."""
        return [self.checkpoint(e) for e in range(1, epochs + 1)]

    def has(self, epochs: int) -> bool:
        """Whether the stage has finished ``epochs`` epochs."""
        return self.checkpoint(epochs).exists()

    def load(self, epochs: int) -> dict:
        return load_checkpoint(self.checkpoint(epochs))

    def history(self, epochs: int) -> list[dict]:
        """The per-epoch records of the first ``epochs`` epochs."""
        return list(self.load(epochs)["history"])

    def latest(self, epochs: int) -> Path | None:
        """The furthest checkpoint not past ``epochs`` (``last.pt`` if it is further): where to resume."""
        best, best_pos = None, (-1, -1)
        for path in self.dir.glob("epoch_*.pt"):
            e = int(path.stem.split("_")[1])
            if e <= epochs and (e, 0) > best_pos:
                best, best_pos = path, (e, 0)
        if self.last.exists():
            ckpt = load_checkpoint(self.last)
            pos = (ckpt["epoch"], ckpt["step_in_epoch"])
            if ckpt["epoch"] < epochs and pos > best_pos:
                best = self.last
        return best

    @contextmanager
    def lock(self):
        """Hold the stage's lock (one process trains it at a time); the block gets whether it waited
        for another process (:func:`~spt_theory.util.locks.directory_lock`)."""
        with directory_lock(self.dir) as waited:
            yield waited

    def save_last(self, model: torch.nn.Module, optimizer, state: StageState, meta: dict) -> None:
        """The resume point inside an epoch."""
        save_checkpoint(self.last, model, optimizer, state, meta)

    def save_epoch(self, model: torch.nn.Module, optimizer, state: StageState, meta: dict,
                   epochs: int, keep: str) -> None:
        """Write ``epoch_<e>.pt`` of a finished epoch, then drop the epoch checkpoints ``keep`` no
        longer needs (after the write: a kill in between leaves one checkpoint too many, never none)."""
        save_checkpoint(self.checkpoint(state.epoch), model, optimizer, state, meta)
        self.prune(state.history, epochs, keep)

    def prune(self, history: list[dict], epochs: int, keep: str) -> None:
        """Remove the epoch checkpoints that ``keep`` does not need: with ``last+best`` every one
        but the last of ``history``, its :func:`best_epoch`, and those past ``epochs`` (they belong to
        a longer run of the same stage)."""
        if keep == "all" or not history:
            return
        needed = {history[-1]["epoch"], best_epoch(history)}
        for path in self.dir.glob("epoch_*.pt"):
            number = path.stem.split("_", 1)[1]
            if number.isdigit() and int(number) <= epochs and int(number) not in needed:
                path.unlink(missing_ok=True)

    def finish(self) -> None:
        """The stage is done: its resume point goes."""
        self.last.unlink(missing_ok=True)

    def write_record(self, record: dict) -> Path:
        """``run.json``: the stage's config, versions and history."""
        return write_json(self.dir / "run.json", record)

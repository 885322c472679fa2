"""Learnability controls: models known to learn an LRA-family task, and the baselines beside them.

A Transformer arm stuck at chance says nothing about the paper unless the setting is learnable at
all in the same budget.  The controls answer that, trained on the same data with the same
supervised stage (learning rate, batch, warm-up, epochs) as the Transformer runs, through the same
loop (:func:`spt_theory.training.loop.train_stage`, cached and resumable like every LRA run):

- ``cnn`` (pixel tasks): a small 2-D CNN on the side x side image, channels [value, mask]:
  ``[conv3x3-GELU] x 2, max-pool 2, [conv3x3-GELU] x 2, max-pool 2, conv3x3-GELU``, global mean
  pooling, a linear head.  Receptive field 22 pixels: a 16-pixel image whole.
- ``lstm`` (token tasks): token embedding, a one-layer LSTM that reads each sequence's real tokens
  right to left (a prefix expression read backwards is postfix: arguments before their operator,
  what a stack-like recurrent reader evaluates), its output after the first token, a linear head.
  Padding stays behind the real tokens, so no real position's state sees it; one direction and no
  packing because that runs about 4x faster on a CPU than a packed biLSTM.
- ``bag`` (both): bag of tokens: the embedding of each token (of each pixel's intensity), its mean
  over the real positions, ``Linear-GELU-Linear``.  Permutation-invariant, so it sees only the
  histogram: what a mean-pooled readout sees at uniform attention without positions.

and two baselines without training (:func:`baselines`):

- ``majority``: the most frequent training label, on the test split;
- ``shortcut`` (Pathfinder, generated data): the label read off the marker distance alone (the
  generator writes it into the metadata, :mod:`synthetic.pathfinder`): the majority training label
  of its bin of ``SHORTCUT_BIN`` pixels (the better label overall for an empty bin), on the test
  split.  On data generated with ``--match-distances`` it should sit near chance.

Every one keeps which test examples it got right (``test_correct``, in the split's order:
:mod:`spt_theory.evidence.correctness`): the trained ones at every evaluation of their curve (the
training loop records it), the baselines beside their test accuracy.

The trainable controls expose the interface the training loop and the runner use: ``forward(x,
valid)`` on the task's inputs (:meth:`spt_theory.lra.inputs.LRATask.inputs`) and ``group_of``
(every parameter is in group ``mlp`` except the classifier's, ``head``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from spt_theory.evidence.correctness import FIELD, encode
from spt_theory.util.files import InputError

TRAINED = ("cnn", "lstm", "bag")
BASELINES = ("majority", "shortcut")
CONTROLS = TRAINED + BASELINES
FOR_PIXELS = ("cnn", "bag", "majority", "shortcut")
FOR_TOKENS = ("lstm", "bag", "majority")
SHORTCUT_BIN = 0.25
PIXEL_LEVELS = 256


@dataclass(frozen=True)
class ControlConfig:
    """A trainable control: ``kind`` (``cnn``, ``lstm`` or ``bag``), classes, the token
    vocabulary (0 for pixel inputs), positions per example and the hidden width."""

    kind: str
    n_classes: int
    vocab_size: int
    width: int
    hidden: int = 64

    def __post_init__(self):
        if self.kind not in TRAINED:
            raise InputError(f"--model {self.kind}: trainable controls are {', '.join(TRAINED)}")
        if self.kind == "cnn" and (self.vocab_size or math.isqrt(self.width) ** 2 != self.width):
            raise InputError("--model cnn needs a square pixel image (Pathfinder or Image)")
        if self.kind == "lstm" and not self.vocab_size:
            raise InputError("--model lstm needs token inputs (ListOps, Text, Retrieval)")


class _Control(nn.Module):
    """Shared by the controls: the parameter groups (``head`` the classifier, the rest ``mlp``)."""

    @staticmethod
    def group_of(parameter_name: str) -> str:
        return "head" if parameter_name.startswith("head.") else "mlp"


class SmallCNN(_Control):
    """The ``cnn`` control (module doc) on inputs (B, side * side, 2)."""

    def __init__(self, config: ControlConfig):
        super().__init__()
        c = config.hidden // 2
        self.side = math.isqrt(config.width)

        def conv(a, b):
            return [nn.Conv2d(a, b, 3, padding=1), nn.GELU()]

        self.body = nn.Sequential(*conv(2, c), *conv(c, c), nn.MaxPool2d(2), *conv(c, 2 * c),
                                  *conv(2 * c, 2 * c), nn.MaxPool2d(2), *conv(2 * c, 2 * c))
        self.head = nn.Linear(2 * c, config.n_classes)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        image = x.transpose(1, 2).reshape(len(x), 2, self.side, self.side)
        return self.head(self.body(image).mean((2, 3)))


class LSTMReader(_Control):
    """The ``lstm`` control (module doc) on token ids (B, L) with ``valid`` marking real tokens
    (right padding)."""

    def __init__(self, config: ControlConfig):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden)
        self.lstm = nn.LSTM(config.hidden, config.hidden, batch_first=True)
        self.head = nn.Linear(config.hidden, config.n_classes)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        lengths = torch.full((len(x),), x.shape[1], device=x.device) if valid is None else valid.sum(1)
        position = lengths[:, None] - 1 - torch.arange(x.shape[1], device=x.device)  # row i reversed
        backwards = torch.where(position >= 0, x.gather(1, position.clamp(min=0)), x[:, -1:])
        out, _ = self.lstm(self.embed(backwards))
        return self.head(out[torch.arange(len(x)), lengths - 1])


class BagOfTokens(_Control):
    """The ``bag`` control (module doc): ids (B, L) with ``valid``, or pixel inputs (B, L, 2)
    whose value channel is read back as the intensity 0..255."""

    def __init__(self, config: ControlConfig):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size or PIXEL_LEVELS, config.hidden)
        self.body = nn.Sequential(nn.Linear(config.hidden, config.hidden), nn.GELU())
        self.head = nn.Linear(config.hidden, config.n_classes)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        if x.dim() == 3:
            x = (x[..., 0] * (PIXEL_LEVELS - 1)).round().long()
        weight = (torch.ones_like(x, dtype=torch.float) if valid is None else valid.float())[..., None]
        pooled = (self.embed(x) * weight).sum(1) / weight.sum(1)
        return self.head(self.body(pooled))


MODELS = {"cnn": SmallCNN, "lstm": LSTMReader, "bag": BagOfTokens}


def build(config: ControlConfig) -> nn.Module:
    """The control of ``config.kind`` at torch's default init (seed it before calling)."""
    return MODELS[config.kind](config)


def check_control(kind: str, task: str, tokens: bool) -> None:
    """InputError unless ``kind`` is a control of ``task`` (token or pixel inputs)."""
    allowed = FOR_TOKENS if tokens else FOR_PIXELS
    if kind not in allowed or (kind == "shortcut" and task != "pathfinder"):
        names = tuple(a for a in allowed if a != "shortcut" or task == "pathfinder")
        raise InputError(f"control {kind!r} does not apply to {task}; its controls: {', '.join(names)}")


def majority(y_train: torch.Tensor, y_test: torch.Tensor) -> dict:
    """Test accuracy of the most frequent training label."""
    label = int(torch.bincount(y_train).argmax())
    correct = (y_test == label).numpy()
    return {"test_accuracy": int(correct.sum()) / len(correct), "label": label, FIELD: encode(correct)}


def shortcut(d_train: np.ndarray, y_train: np.ndarray, d_test: np.ndarray, y_test: np.ndarray) -> dict:
    """Test accuracy of the marker-distance rule (module doc) fitted on the training split."""
    bins = lambda d: np.floor(d / SHORTCUT_BIN).astype(int)  # noqa: E731
    fallback = int(np.bincount(y_train, minlength=2).argmax())
    votes: dict[int, np.ndarray] = {}
    for b, y in zip(bins(d_train), y_train):
        votes.setdefault(b, np.zeros(2, int))[y] += 1
    rule = {b: int(v.argmax()) if v[0] != v[1] else fallback for b, v in votes.items()}
    correct = np.array([rule.get(b, fallback) for b in bins(d_test)]) == y_test
    return {"test_accuracy": int(correct.sum()) / len(correct), FIELD: encode(correct), "bin_pixels": SHORTCUT_BIN,
            "train_accuracy": float((np.array([rule[b] for b in bins(d_train)]) == y_train).mean())}


def baselines(kinds: tuple[str, ...], data, distances: dict[str, np.ndarray] | None) -> dict:
    """The untrained baselines among ``kinds`` (``majority``, ``shortcut``) on the loaded data
    (``distances``: the marker distance of each train and test example, for ``shortcut``)."""
    found = {}
    for kind in kinds:
        if kind == "majority":
            found[kind] = majority(data.y_train.cpu(), data.y_test.cpu())
        elif kind == "shortcut":
            if distances is None:
                raise InputError("control shortcut: the Pathfinder metadata record no marker distance "
                                 "(only data generated by synthetic.pathfinder do)")
            found[kind] = shortcut(distances["train"], data.y_train.cpu().numpy(), distances["test"],
                                   data.y_test.cpu().numpy())
    return found


def marker_distances(data_dir: Path, resolution: int, contour_length: int) -> dict[str, np.ndarray] | None:
    """The marker distance of every train and test image, in the readers' split, or None when
    the metadata lack it (a release copy)."""
    from spt_theory.lra.readers.pathfinder import pathfinder_marker_distances
    found = {split: pathfinder_marker_distances(data_dir, split, contour_length, resolution)
             for split in ("train", "test")}
    complete = {split: v for split, v in found.items() if v is not None}
    return complete if len(complete) == len(found) else None

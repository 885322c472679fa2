"""One LRA task's train / validation / test tensors, ready for the model.

``load_task_data(config, data_dir)`` reads the three splits with the task's reader
(:data:`~spt_theory.lra.readers.READERS`) and makes them one width:

- Text and Image ship without a validation split: 10% of train is held out (seeded, fixed).
- Token splits are padded with ``<pad>`` to the longest example of any split, so train and test
  see the same number of padding positions (padding is not masked in attention or pooling, as in
  the reference code, so a width that differed between splits would shift the mean pool).
- Retrieval's two documents are stacked: inputs (N, 2, L).

``fingerprint`` hashes the tensors themselves, so cached runs are keyed by the data's content,
not by where it lies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from spt_theory.lra.configs import LRAConfig
from spt_theory.lra.readers import READERS, LRAPairSplit, LRASplit, Vocabulary, split_validation

HELD_OUT_VALIDATION = {"text": 0.1, "image": 0.1}
"""Tasks without a validation split: the share of train held out for validation."""


@dataclass(frozen=True)
class LRAData:
    """Inputs (N, L) or (N, 2, L) int64 and labels (N,) of the three splits, and the vocabulary."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    vocab: Vocabulary

    @property
    def width(self) -> int:
        """Positions per document."""
        return self.x_train.shape[-1]

    def fingerprint(self) -> str:
        """sha256 (16 hex digits) of every tensor's shape and bytes."""
        digest = hashlib.sha256()
        for tensor in self._tensors().values():
            digest.update(str(tuple(tensor.shape)).encode())
            digest.update(tensor.cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()[:16]

    def to(self, device: torch.device) -> LRAData:
        return replace(self, **{name: t.to(device) for name, t in self._tensors().items()})

    def _tensors(self) -> dict[str, torch.Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "vocab"}


def _stack(split: LRASplit | LRAPairSplit) -> torch.Tensor:
    """(N, L) inputs, or (N, 2, L) for a pair split (both documents padded to one width)."""
    if isinstance(split, LRASplit):
        return split.inputs
    width = max(split.inputs1.shape[1], split.inputs2.shape[1])
    pad = split.vocab.pad_id
    return torch.stack([_pad(split.inputs1, width, pad), _pad(split.inputs2, width, pad)], dim=1)


def _pad(inputs: torch.Tensor, width: int, pad_id: int | None) -> torch.Tensor:
    return inputs if inputs.shape[-1] == width else F.pad(inputs, (0, width - inputs.shape[-1]), value=pad_id)


def load_task_data(config: LRAConfig, data_dir: str | Path) -> LRAData:
    """The task's splits from ``data_dir`` (release layout), validated and made one width."""
    reader = READERS[config.task]
    options = {"max_len": config.max_length} if config.masking == "token" else {}
    if config.task in HELD_OUT_VALIDATION:
        train, val = split_validation(reader(data_dir, "train", **options),
                                      HELD_OUT_VALIDATION[config.task], seed=0)
    else:
        train, val = reader(data_dir, "train", **options), reader(data_dir, "val", **options)
    test = reader(data_dir, "test", **options)
    inputs = [_stack(split) for split in (train, val, test)]
    width = max(x.shape[-1] for x in inputs)
    x_train, x_val, x_test = (_pad(x, width, train.vocab.pad_id) for x in inputs)
    return LRAData(x_train, train.labels, x_val, val.labels, x_test, test.labels, train.vocab)

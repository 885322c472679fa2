"""The Image reader: CIFAR-10 python batches (read by the restricted
:class:`~spt_theory.lra.readers.unpickler.CifarUnpickler`), as 1024 grayscale pixels."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import torch

from spt_theory.lra.readers.common import PIXEL_VOCAB, PIXELS, LRASplit, check_split, locate, report, require_examples
from spt_theory.lra.readers.unpickler import CifarUnpickler
from spt_theory.util.files import InputError

IMAGE_LAYOUT = "DATA_DIR/cifar-10-batches-py/{data_batch_1..data_batch_5,test_batch}"
CIFAR_BATCHES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}


def load_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(data (N, 3072) uint8, labels (N,) int64)`` of one CIFAR-10 python batch, validated."""
    try:
        batch = CifarUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
    except FileNotFoundError:
        raise InputError(f"missing {path} (expected layout: {IMAGE_LAYOUT})") from None
    except Exception as error:  # any decoding failure of an untrusted file is bad input
        raise InputError(f"{path}: not a readable CIFAR-10 batch ({error})") from None
    if not isinstance(batch, dict):
        raise InputError(f"{path}: expected a dict with 'data' and 'labels', got {type(batch).__name__}")
    batch = {key.decode("latin-1") if isinstance(key, bytes) else key: value for key, value in batch.items()}
    data, labels = batch.get("data"), batch.get("labels")
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2
            and data.shape[1] == 3 * PIXELS):
        shape = getattr(data, "shape", None)
        raise InputError(f"{path}: field 'data' must be an N x {3 * PIXELS} uint8 array, got "
                         f"{type(data).__name__} {getattr(data, 'dtype', '')} shape {shape}")
    if isinstance(labels, (list, np.ndarray)):
        with contextlib.suppress(ValueError):  # a ragged nested list
            labels = np.asarray(labels)
    if not (isinstance(labels, np.ndarray) and labels.shape == (len(data),)):
        got = f"shape {labels.shape}" if isinstance(labels, np.ndarray) else type(labels).__name__
        raise InputError(f"{path}: field 'labels' must list {len(data)} labels, got {got}")
    if labels.dtype.kind not in "iu":
        raise InputError(f"{path}: field 'labels' must hold integers, got {labels.dtype}")
    outside = np.flatnonzero((labels < 0) | (labels > 9))
    if len(outside):
        raise InputError(f"{path}: field 'labels'[{outside[0]}] = {labels[outside[0]]} out of range 0..9")
    return data, labels.astype(np.int64)


def to_grayscale(data: np.ndarray) -> np.ndarray:
    """(N, 3072) channel-major RGB planes -> (N, 1024) int64 intensities,
    round(0.299 R + 0.587 G + 0.114 B) in exact integer arithmetic (halves round up)."""
    planes = data.reshape(len(data), 3, PIXELS).astype(np.int64)
    return (299 * planes[:, 0] + 587 * planes[:, 1] + 114 * planes[:, 2] + 500) // 1000


def read_image(data_dir: str | Path, split: str) -> LRASplit:
    """CIFAR-10 ``split`` (train = data_batch_1..5, test = test_batch) as 1024 grayscale pixels."""
    check_split(split, tuple(CIFAR_BATCHES), "Image")
    folder = locate(data_dir, ["cifar-10-batches-py"], IMAGE_LAYOUT)
    batches = [load_cifar_batch(folder / name) for name in CIFAR_BATCHES[split]]
    pixels = np.concatenate([to_grayscale(data) for data, _ in batches])
    labels = np.concatenate([labels for _, labels in batches])
    require_examples(len(labels), folder)
    result = LRASplit(torch.from_numpy(pixels), torch.from_numpy(labels),
                      torch.full((len(labels),), PIXELS, dtype=torch.int64), PIXEL_VOCAB)
    return report("Image", split, result, folder)


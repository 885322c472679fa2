"""What the LRA readers share (:mod:`spt_theory.lra.readers`): the vocabularies, the split types
and the validation split, and the helpers that locate files, keep paths read from the data inside
their folder (:func:`inside`), parse labels and tab-separated rows, and pack id sequences into
padded tensors."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath

import numpy as np
import torch

from spt_theory.util.files import InputError

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ("<pad>", "<mask>")
LISTOPS_SYMBOLS = tuple(str(d) for d in range(10)) + ("[MIN", "[MAX", "[MED", "[SM", "]")


@dataclass(frozen=True)
class Vocabulary:
    """Token names by id; ``pad_id`` / ``mask_id`` are ``None`` for pixel vocabularies."""

    tokens: tuple[str, ...]
    pad_id: int | None
    mask_id: int | None

    @property
    def size(self) -> int:
        return len(self.tokens)

    @property
    def pad(self) -> int:
        """``pad_id`` of a token vocabulary; ValueError for a pixel vocabulary, which has none."""
        if self.pad_id is None:
            raise ValueError("a pixel vocabulary has no <pad>")
        return self.pad_id

    @property
    def mask(self) -> int:
        """``mask_id`` of a token vocabulary; ValueError for a pixel vocabulary, which has none."""
        if self.mask_id is None:
            raise ValueError("a pixel vocabulary has no <mask>")
        return self.mask_id


LISTOPS_VOCAB = Vocabulary(SPECIAL_TOKENS + LISTOPS_SYMBOLS, pad_id=0, mask_id=1)
BYTE_VOCAB = Vocabulary(SPECIAL_TOKENS + tuple(f"<0x{b:02X}>" for b in range(256)), pad_id=0, mask_id=1)
PIXEL_VOCAB = Vocabulary(tuple(str(v) for v in range(256)), pad_id=None, mask_id=None)
BYTE_OFFSET = len(SPECIAL_TOKENS)
PIXELS = 1024


@dataclass(frozen=True)
class LRASplit:
    """One split of a single-input task: ``inputs`` (N, L), ``labels`` (N,), ``lengths`` (N,)."""

    inputs: torch.Tensor
    labels: torch.Tensor
    lengths: torch.Tensor
    vocab: Vocabulary

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class LRAPairSplit:
    """One split of Retrieval: two documents per example, each (N, L) with its lengths (N,)."""

    inputs1: torch.Tensor
    inputs2: torch.Tensor
    labels: torch.Tensor
    lengths1: torch.Tensor
    lengths2: torch.Tensor
    vocab: Vocabulary

    def __len__(self) -> int:
        return len(self.labels)


def subset(split: LRASplit | LRAPairSplit, index: torch.Tensor) -> LRASplit | LRAPairSplit:
    """The examples ``index`` of ``split`` (every tensor field indexed along its first axis)."""
    return replace(split, **{f.name: getattr(split, f.name)[index] for f in fields(split)
                             if isinstance(getattr(split, f.name), torch.Tensor)})


def split_validation(split: LRASplit | LRAPairSplit, fraction: float, seed: int = 0
                     ) -> tuple[LRASplit | LRAPairSplit, LRASplit | LRAPairSplit]:
    """Hold out a random ``fraction`` of ``split`` (deterministic in ``seed``): ``(rest, held_out)``."""
    if not 0.0 < fraction < 1.0:
        raise InputError(f"validation fraction must be in (0, 1), got {fraction}")
    held_out, rest = partition(len(split), (fraction,), seed)
    if not len(held_out) or not len(rest):
        raise InputError(f"{len(split)} training examples are too few to hold out {fraction:.0%} of them for "
                         f"validation (neither part may be empty)")
    return subset(split, rest), subset(split, held_out)


def partition(n: int, fractions: Sequence[float], seed: int) -> list[torch.Tensor]:
    """A seeded random permutation of ``range(n)`` cut into ``fractions`` and the remainder."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    cuts = [0]
    for fraction in fractions:
        cuts.append(cuts[-1] + int(round(fraction * n)))
    cuts.append(n)
    return [order[a:b].sort().values for a, b in zip(cuts[:-1], cuts[1:])]


# ---------------------------------------------------------------------------------------- helpers

def locate(data_dir: str | Path, candidates: Sequence[str], layout: str) -> Path:
    """The first existing ``data_dir / candidate``; otherwise InputError naming path and layout."""
    data_dir = Path(data_dir)
    for candidate in candidates:
        if (data_dir / candidate).exists():
            return data_dir / candidate
    raise InputError(f"missing {data_dir / candidates[0]} (expected layout: {layout})")


def inside(root: Path, relative: str, where: str) -> Path:
    """``root / relative`` for a path ``relative`` read from the data at ``where`` (a ``file:line``):
    InputError unless it is relative, has no ``..`` and, symbolic links followed, stays under
    ``root``."""
    if "\x00" in relative:
        raise InputError(f"{where}: path {relative!r} holds a NUL character")
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts:
        why = "an absolute path" if pure.is_absolute() else "it climbs with '..'"
        raise InputError(f"{where}: path {relative!r} may lead outside {root} ({why}); the data's paths must be "
                         f"relative to it")
    path = root / relative
    real, base = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, base]) != base:
        raise InputError(f"{where}: path {relative!r} leads outside {root} (a symbolic link to {real})")
    return path


def check_split(split: str, allowed: Sequence[str], task: str) -> None:
    if split not in allowed:
        raise InputError(f"{task} has splits {', '.join(allowed)}; got split {split!r}")


def parse_label(text: bytes | str | int, n_classes: int, where: str) -> int:
    """An integer label in ``0 .. n_classes-1`` (``"1"`` and ``"1.0"`` both read as 1)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{where}: label {_show(text)} is not an integer") from None
    if not value.is_integer():
        raise InputError(f"{where}: label {_show(text)} is not an integer")
    if not 0 <= value < n_classes:
        raise InputError(f"{where}: label {int(value)} out of range 0..{n_classes - 1}")
    return int(value)


def _show(text: bytes | str | int) -> str:
    return repr(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)


def tsv_rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, list[bytes]]]:
    """``(line number, fields)`` of a tab-separated file (``\\n`` or ``\\r\\n`` line endings); a
    header whose first field is ``columns[0]`` is skipped, and so are blank lines at the end of the
    file; a blank line before a row, or a line with the wrong number of fields, raises InputError."""
    blank = None  # the first of the blank lines seen since the last row
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a folder, a FIFO (which would block), a device
            raise InputError(f"{path}: cannot read (not a regular file)")
        file = path.open("rb")
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    with file:
        for number, line in enumerate(file, 1):
            if not line.rstrip(b"\r\n"):
                blank = blank or number
                continue
            if blank is not None:
                raise InputError(f"{path}:{blank}: blank line between rows")
            row = line.rstrip(b"\r\n").split(b"\t")
            if number == 1 and row[0].strip().lower() == columns[0].lower().encode():
                continue
            if len(row) != len(columns):
                raise InputError(f"{path}:{number}: expected {len(columns)} tab-separated columns "
                                 f"({', '.join(columns)}), found {len(row)}")
            yield number, row


def pack(sequences: Sequence[np.ndarray], max_len: int, offset: int, pad_id: int):
    """Pad/truncate id sequences into ``(inputs (N, L) int64, lengths (N,) int64)``; ``offset``
    is added to every id (the byte vocabularies shift bytes past the special tokens)."""
    if max_len < 1:
        raise InputError(f"max_len must be >= 1, got {max_len}")
    lengths = np.fromiter((min(len(s), max_len) for s in sequences), np.int64, len(sequences))
    width = max(1, int(lengths.max(initial=0)))
    inputs = np.full((len(sequences), width), pad_id, dtype=np.int64)
    for row, (sequence, length) in enumerate(zip(sequences, lengths)):
        inputs[row, :length] = sequence[:length]
        inputs[row, :length] += offset
    return torch.from_numpy(inputs), torch.from_numpy(lengths)


def labels_tensor(labels: Sequence[int]) -> torch.Tensor:
    return torch.tensor(labels, dtype=torch.int64)


def require_examples(count: int, source: Path) -> None:
    if count == 0:
        raise InputError(f"{source}: no examples (empty file or folder)")


def report(task: str, split: str, result: LRASplit | LRAPairSplit, source: Path):
    log.info("%s %s: read %d examples from %s", task, split, len(result), source)
    return result


def read_document(path: Path) -> bytes:
    """The bytes of one file (a review, a metadata file); an unreadable entry (a folder, a broken
    link, a FIFO or device, which could block forever) is an InputError naming it."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise InputError(f"{path}: cannot read (not a regular file)")
        return path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def byte_ids(document: bytes) -> np.ndarray:
    return np.frombuffer(document, dtype=np.uint8)


"""Readers for the five LRA tasks in the release layout, returning int64 tensors.

Every reader takes the data root (``--data-dir``) and a split name and returns an ``LRASplit``
(``LRAPairSplit`` for Retrieval): ``inputs`` (N, L) padded with the vocabulary's pad id to the
longest example (at most ``max_len``; longer examples are truncated, as in LRA), ``labels`` (N,),
``lengths`` (N,), and the ``Vocabulary``.

Token ids:
- ListOps: ``<pad>`` 0, ``<mask>`` 1, digits ``0``-``9`` 2-11, ``[MIN`` 12, ``[MAX`` 13, ``[MED`` 14,
  ``[SM`` 15, ``]`` 16 (17 ids); parentheses are dropped.
- Text, Retrieval: ``<pad>`` 0, ``<mask>`` 1, byte ``b`` (UTF-8) is ``b + 2`` (258 ids).
- Image, Pathfinder: the pixel intensity 0-255 itself (256 ids, no specials; every example is
  1024 long).

A missing file raises ``InputError`` naming the expected path and layout; a malformed line, label,
image or batch raises ``InputError`` naming the file (and line).  The count read is logged.

A path taken from inside the data (a Pathfinder metadata line, a file of an IMDb folder, the files
a Hugging Face copy lists) must stay under the folder it was found in: an absolute path, a ``..``
or a symbolic link leading out raises ``InputError`` naming the file and line, and the file it
points at is never opened (:func:`inside`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath

import numpy as np
import torch
from PIL import Image

from spt_theory.util.io import InputError, read_json

try:  # numpy >= 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import _reconstruct

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


LISTOPS_VOCAB = Vocabulary(SPECIAL_TOKENS + LISTOPS_SYMBOLS, pad_id=0, mask_id=1)
BYTE_VOCAB = Vocabulary(SPECIAL_TOKENS + tuple(f"<0x{b:02X}>" for b in range(256)), pad_id=0, mask_id=1)
PIXEL_VOCAB = Vocabulary(tuple(str(v) for v in range(256)), pad_id=None, mask_id=None)
BYTE_OFFSET = len(SPECIAL_TOKENS)
PIXELS = 1024

LISTOPS_MAX_LEN, TEXT_MAX_LEN, RETRIEVAL_MAX_LEN = 2048, 4096, 4000

LISTOPS_LAYOUT = "DATA_DIR/listops-1000/basic_{train,val,test}.tsv with header Source<TAB>Target"
TEXT_LAYOUT = ("DATA_DIR/aclImdb/{train,test}/{pos,neg}/*.txt, or a Hugging Face imdb copy "
               "written by save_to_disk at DATA_DIR or DATA_DIR/imdb")
RETRIEVAL_LAYOUT = ("DATA_DIR/new_aan_pairs.{train,eval,test}.tsv (or under DATA_DIR/tsv_data), "
                    "columns label, id1, id2, text1, text2, no header")
IMAGE_LAYOUT = "DATA_DIR/cifar-10-batches-py/{data_batch_1..data_batch_5,test_batch}"
PATHFINDER_LAYOUT = ("DATA_DIR/pathfinder32/curv_contour_length_14/{imgs/<k>/sample_<i>.png, "
                     "metadata/<k>.npy} (or under DATA_DIR/lra_release)")


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
    held_out, rest = _partition(len(split), (fraction,), seed)
    if not len(held_out) or not len(rest):
        raise InputError(f"{len(split)} training examples are too few to hold out {fraction:.0%} of them for "
                         f"validation (neither part may be empty)")
    return subset(split, rest), subset(split, held_out)


def _partition(n: int, fractions: Sequence[float], seed: int) -> list[torch.Tensor]:
    """A seeded random permutation of ``range(n)`` cut into ``fractions`` and the remainder."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    cuts = [0]
    for fraction in fractions:
        cuts.append(cuts[-1] + int(round(fraction * n)))
    cuts.append(n)
    return [order[a:b].sort().values for a, b in zip(cuts[:-1], cuts[1:])]


# ---------------------------------------------------------------------------------------- helpers

def _locate(data_dir: str | Path, candidates: Sequence[str], layout: str) -> Path:
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


def _check_split(split: str, allowed: Sequence[str], task: str) -> None:
    if split not in allowed:
        raise InputError(f"{task} has splits {', '.join(allowed)}; got split {split!r}")


def _parse_label(text: bytes | str | int, n_classes: int, where: str) -> int:
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


def _tsv_rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, list[bytes]]]:
    """``(line number, fields)`` of a tab-separated file (``\\n`` or ``\\r\\n`` line endings); a
    header whose first field is ``columns[0]`` is skipped, and so are blank lines at the end of the
    file; a blank line before a row, or a line with the wrong number of fields, raises InputError."""
    blank = None  # the first of the blank lines seen since the last row
    with path.open("rb") as file:
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


def _pack(sequences: Sequence[np.ndarray], max_len: int, offset: int, pad_id: int):
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


def _labels_tensor(labels: Sequence[int]) -> torch.Tensor:
    return torch.tensor(labels, dtype=torch.int64)


def _require_examples(count: int, source: Path) -> None:
    if count == 0:
        raise InputError(f"{source}: no examples (empty file or folder)")


def _report(task: str, split: str, result: LRASplit | LRAPairSplit, source: Path):
    log.info("%s %s: read %d examples from %s", task, split, len(result), source)
    return result


# ---------------------------------------------------------------------------------------- ListOps

_DROP, _INVALID = -2, -1
_LISTOPS_ALPHABET = b"0123456789[]() MINAXEDS"
_OPERATOR_CODES = {symbol.encode(): bytes([code])  # each operator as one control byte
                   for code, symbol in enumerate(LISTOPS_SYMBOLS[10:14], start=1)}
_LISTOPS_TABLE = np.full(256, _INVALID, dtype=np.int8)  # int8 keeps 96k lines small
for _token_id, _symbol in enumerate(LISTOPS_SYMBOLS, start=len(SPECIAL_TOKENS)):
    _LISTOPS_TABLE[_OPERATOR_CODES.get(_symbol.encode(), _symbol.encode())[0]] = _token_id
_LISTOPS_TABLE[[ord("("), ord(")"), ord(" ")]] = _DROP


def tokenize_listops(source: bytes | str) -> np.ndarray:
    """Token ids (int8, compact for 96k lines) of a ``Source`` field, parentheses dropped;
    ValueError names a bad token."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    ids = _listops_ids(source)
    if ids is None:
        tokens = source.decode("utf-8", "replace").split(" ")  # only spaces separate tokens
        bad = next(t for t in tokens if t and t not in LISTOPS_SYMBOLS + ("(", ")"))
        raise ValueError(f"unknown token {bad!r}")
    if not len(ids):
        raise ValueError("empty expression")
    _check_nesting(source, ids)
    return ids


_LISTOPS_OPENERS = np.array([LISTOPS_VOCAB.tokens.index(symbol) for symbol in LISTOPS_SYMBOLS[10:14]], dtype=np.int8)
_LISTOPS_CLOSE = LISTOPS_VOCAB.tokens.index("]")


def _check_nesting(source: bytes, ids: np.ndarray) -> None:
    """ValueError unless the parentheses balance, every operator is closed by its own ``]`` and
    the tokens form one expression (vectorised: running depths, no parse tree)."""
    codes = np.frombuffer(source, dtype=np.uint8)
    parens = np.cumsum((codes == ord("(")).astype(np.int64) - (codes == ord(")")))
    if len(parens) and (parens.min() < 0 or parens[-1] != 0):
        raise ValueError("unbalanced parentheses: " + ("a ')' closes nothing" if parens.min() < 0 else
                                                       f"{parens[-1]} '(' never closed"))
    depth = np.cumsum(np.isin(ids, _LISTOPS_OPENERS).astype(np.int64) - (ids == _LISTOPS_CLOSE))
    if depth.min() < 0:
        raise ValueError(f"a ']' closes no operator (token {int(np.argmax(depth < 0)) + 1})")
    if depth[-1] > 0:
        raise ValueError(f"missing ']': {depth[-1]} operator(s) never closed")
    if (depth[:-1] == 0).any():
        raise ValueError(f"unexpected token after the end of the expression (token {int(np.argmax(depth == 0)) + 2})")


def _listops_ids(source: bytes) -> np.ndarray | None:
    """Vectorised tokenizer: each operator becomes one control byte, so a well-formed source is
    one-byte tokens separated by spaces, which a lookup table maps to ids (spaces and parentheses
    to ``_DROP``).  ``None`` if any token is unknown."""
    if source.translate(None, _LISTOPS_ALPHABET):
        return None
    for symbol, code in _OPERATOR_CODES.items():
        source = source.replace(symbol, code)
    codes = np.frombuffer(source, dtype=np.uint8)
    ids = _LISTOPS_TABLE[codes]
    in_token = codes != ord(" ")
    if (ids == _INVALID).any() or (in_token[1:] & in_token[:-1]).any():
        return None
    return ids[ids != _DROP]


def read_listops(data_dir: str | Path, split: str, max_len: int = LISTOPS_MAX_LEN) -> LRASplit:
    """ListOps ``split`` (train / val / test) from ``listops-1000/basic_<split>.tsv``; 10 classes."""
    _check_split(split, ("train", "val", "test"), "ListOps")
    path = _locate(data_dir, [f"listops-1000/basic_{split}.tsv"], LISTOPS_LAYOUT)
    sequences, labels = [], []
    for number, (source, target) in _tsv_rows(path, ("Source", "Target")):
        try:
            sequences.append(tokenize_listops(source))
        except ValueError as error:
            raise InputError(f"{path}:{number}: {error}") from None
        labels.append(_parse_label(target, 10, f"{path}:{number}"))
    _require_examples(len(labels), path)
    inputs, lengths = _pack(sequences, max_len, 0, LISTOPS_VOCAB.pad_id)
    return _report("ListOps", split, LRASplit(inputs, _labels_tensor(labels), lengths, LISTOPS_VOCAB), path)


# ------------------------------------------------------------------------------------------- Text

def _byte_ids(document: bytes) -> np.ndarray:
    return np.frombuffer(document, dtype=np.uint8)


def read_text(data_dir: str | Path, split: str, max_len: int = TEXT_MAX_LEN) -> LRASplit:
    """IMDB ``split`` (train / test), byte level, label 1 = positive, 0 = negative.

    Reads ``aclImdb/<split>/{neg,pos}/*.txt`` (files in name order, negatives first), or a
    Hugging Face copy (``dataset_dict.json`` at DATA_DIR or DATA_DIR/imdb; needs ``datasets``).
    """
    _check_split(split, ("train", "test"), "Text")
    root = _locate(data_dir, ["aclImdb", "dataset_dict.json", "imdb/dataset_dict.json"], TEXT_LAYOUT)
    if root.name == "dataset_dict.json":
        documents, labels = _read_imdb_hf(root.parent, split)
        source = root.parent
    else:
        documents, labels = [], []
        source = root / split
        for label, polarity in enumerate(("neg", "pos")):
            folder = _locate(root, [f"{split}/{polarity}"], TEXT_LAYOUT)
            files = sorted(folder.glob("*.txt"))
            _require_examples(len(files), folder)
            for file in files:
                document = _read_document(inside(root, str(file.relative_to(root)), str(file)))
                _require_examples(len(document), file)
                documents.append(document)
                labels.append(label)
    inputs, lengths = _pack([_byte_ids(d) for d in documents], max_len, BYTE_OFFSET, BYTE_VOCAB.pad_id)
    return _report("Text", split, LRASplit(inputs, _labels_tensor(labels), lengths, BYTE_VOCAB), source)


def _read_document(path: Path) -> bytes:
    """The bytes of one review; an unreadable entry (a folder, a broken link) is an InputError naming it."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def _check_hf_listing(folder: Path, split: str) -> None:
    """The split folders ``folder/dataset_dict.json`` names, and the Arrow files each split's
    ``state.json`` lists, stay under ``folder`` (:func:`inside`), and ``split`` is one of them."""
    index = folder / "dataset_dict.json"
    listing = read_json(index)
    splits = listing.get("splits") if isinstance(listing, dict) else None
    if not isinstance(splits, list) or not all(isinstance(name, str) for name in splits):
        raise InputError(f"{index}: field 'splits' must list the names of the split folders")
    if split not in splits:
        raise InputError(f"{index}: no split {split!r} (splits: {', '.join(splits)})")
    for name in splits:
        state_path = inside(folder, name, f"{index}: field 'splits'") / "state.json"
        if not state_path.exists():
            continue  # datasets reports it
        state = read_json(state_path)
        files = state.get("_data_files") if isinstance(state, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("filename"), str)
                                                  for f in files):
            raise InputError(f"{state_path}: field '_data_files' must list {{\"filename\": ...}} objects")
        for number, entry in enumerate(files):
            inside(state_path.parent, entry["filename"], f"{state_path}: field '_data_files'[{number}]")


def _read_imdb_hf(folder: Path, split: str) -> tuple[list[bytes], list[int]]:
    """Documents and labels of a Hugging Face ``imdb`` copy written by ``save_to_disk``."""
    _check_hf_listing(folder, split)
    try:
        import datasets
    except ImportError:
        raise InputError(f"{folder} is a Hugging Face datasets copy; reading it needs the "
                         f"'datasets' package (pip install datasets), or use the aclImdb layout") from None
    table = datasets.load_from_disk(str(folder))[split]
    documents = [text.encode("utf-8") for text in table["text"]]
    labels = [_parse_label(label, 2, f"{folder} ({split}, row {row})")
              for row, label in enumerate(table["label"])]
    _require_examples(len(labels), folder)
    return documents, labels


# -------------------------------------------------------------------------------------- Retrieval

RETRIEVAL_COLUMNS = ("label", "id1", "id2", "text1", "text2")


def read_retrieval(data_dir: str | Path, split: str, max_len: int = RETRIEVAL_MAX_LEN) -> LRAPairSplit:
    """AAN ``split`` (train / val / test; val reads the ``eval`` file), two byte-level documents."""
    _check_split(split, ("train", "val", "test"), "Retrieval")
    name = f"new_aan_pairs.{'eval' if split == 'val' else split}.tsv"
    path = _locate(data_dir, [name, f"tsv_data/{name}"], RETRIEVAL_LAYOUT)
    first, second, labels = [], [], []
    for number, (label, _id1, _id2, text1, text2) in _tsv_rows(path, RETRIEVAL_COLUMNS):
        labels.append(_parse_label(label, 2, f"{path}:{number}"))
        first.append(_byte_ids(text1))
        second.append(_byte_ids(text2))
    _require_examples(len(labels), path)
    inputs1, lengths1 = _pack(first, max_len, BYTE_OFFSET, BYTE_VOCAB.pad_id)
    inputs2, lengths2 = _pack(second, max_len, BYTE_OFFSET, BYTE_VOCAB.pad_id)
    result = LRAPairSplit(inputs1, inputs2, _labels_tensor(labels), lengths1, lengths2, BYTE_VOCAB)
    return _report("Retrieval", split, result, path)


# ------------------------------------------------------------------------------------------ Image

CIFAR_BATCHES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}


def _latin1_bytes(text, encoding="utf-8"):
    """What Python 3 pickles a ``bytes`` object into under protocols 0-2 (``_codecs.encode(text,
    "latin1")``), and nothing else ``codecs.encode`` could do (other codecs decompress or run)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"refusing _codecs.encode of a {type(text).__name__} with codec "
                                     f"{encoding!r} (only latin1 text to bytes)")
    return text.encode("latin-1")


def _array_from_buffer(buffer, dtype, shape, order):
    """numpy's pickle-protocol-5 constructor (``_frombuffer``), for plain (non-object) arrays only."""
    if not isinstance(buffer, (bytes, bytearray, pickle.PickleBuffer)):
        raise pickle.UnpicklingError(f"refusing _frombuffer of a {type(buffer).__name__}")
    if not isinstance(dtype, np.dtype) or dtype.hasobject or order not in ("C", "F"):
        raise pickle.UnpicklingError(f"refusing _frombuffer with dtype {dtype!r}, order {order!r}")
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order)


def _empty_array(subtype, shape, dtype):
    """numpy's pickle constructor (``_reconstruct``) as numpy's own pickles call it: an empty
    ``ndarray`` that ``__setstate__`` then fills.  Any other call is refused: a pickled shape could
    ask for an array of any size, filled (object dtype) before anything checks it."""
    if subtype is not np.ndarray or shape != (0,):
        raise pickle.UnpicklingError(f"refusing _reconstruct of a {getattr(subtype, '__name__', subtype)!s} "
                                     f"of shape {shape!r} (only an empty ndarray)")
    return _reconstruct(subtype, shape, dtype)


_NUMPY_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _empty_array,
    ("numpy._core.multiarray", "_reconstruct"): _empty_array,
    ("numpy.core.numeric", "_frombuffer"): _array_from_buffer,  # protocol 5 (numpy >= 1.16)
    ("numpy._core.numeric", "_frombuffer"): _array_from_buffer,
    ("_codecs", "encode"): _latin1_bytes,  # bytes under protocols 0-2 written by Python 3
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class _CifarUnpickler(pickle._Unpickler):
    """Unpickler that builds only plain containers and numpy arrays: any other global is refused,
    so no code named by the file is ever imported or called.  The pure-Python unpickler, on the
    file's bytes in memory: its memo is a dict and every read is bounded by the file, where the C
    one would allocate a memo as long as any index the file names (``LONG_BINPUT 2**30``: 8 GB)."""

    def find_class(self, module: str, name: str):
        try:
            return _NUMPY_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None


def load_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(data (N, 3072) uint8, labels (N,) int64)`` of one CIFAR-10 python batch, validated."""
    try:
        batch = _CifarUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
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
    _check_split(split, tuple(CIFAR_BATCHES), "Image")
    folder = _locate(data_dir, ["cifar-10-batches-py"], IMAGE_LAYOUT)
    batches = [load_cifar_batch(folder / name) for name in CIFAR_BATCHES[split]]
    pixels = np.concatenate([to_grayscale(data) for data, _ in batches])
    labels = np.concatenate([labels for _, labels in batches])
    _require_examples(len(labels), folder)
    result = LRASplit(torch.from_numpy(pixels), torch.from_numpy(labels),
                      torch.full((len(labels),), PIXELS, dtype=torch.int64), PIXEL_VOCAB)
    return _report("Image", split, result, folder)


# ------------------------------------------------------------------------------------- Pathfinder

PATHFINDER_SPLIT_FRACTIONS = (0.8, 0.1)  # train, val; test is the remaining 10%


def _metadata_rows(root: Path) -> Iterator[tuple[str, list[str]]]:
    """``(file:line, fields)`` of every line of ``root/metadata/*.npy``, in metadata file order."""
    _locate(root, ["metadata"], PATHFINDER_LAYOUT)
    folder = inside(root, "metadata", str(root))
    files = sorted(folder.glob("*.npy"), key=lambda p: (len(p.stem), p.stem))  # 2 before 10
    _require_examples(len(files), folder)
    for file in files:
        lines = _read_document(inside(root, f"metadata/{file.name}", str(file))).decode(
            "utf-8", errors="replace").splitlines()
        _require_examples(len(lines), file)
        for number, line in enumerate(lines, 1):
            yield f"{file}:{number}", line.split()


def read_pathfinder_metadata(root: Path) -> tuple[list[str], list[int], list[str]]:
    """Image paths relative to ``root``, labels and ``file:line`` origins listed by
    ``root/metadata/*.npy``, in order of the metadata file number (lines ``imgs/<k> sample_<i>.png
    <idx> <label> ...``).  The image paths are not checked yet: :func:`inside` does when one is read."""
    images, labels, origins = [], [], []
    for where, row in _metadata_rows(root):
        if len(row) < 4:
            raise InputError(f"{where}: expected at least 4 fields (imgs/<k> sample_<i>.png "
                             f"<idx> <label> ...), found {len(row)}")
        labels.append(_parse_label(row[3], 2, where))
        images.append(f"{row[0]}/{row[1]}")
        origins.append(where)
    return images, labels, origins


def _pathfinder_root(data_dir: str | Path, contour_length: int, resolution: int) -> Path:
    relative = f"pathfinder{resolution}/curv_contour_length_{contour_length}"
    return _locate(data_dir, [relative, f"lra_release/{relative}"], PATHFINDER_LAYOUT)


def _pathfinder_index(n: int, split: str, seed: int) -> torch.Tensor:
    """Indices (into the metadata order) of ``split`` in the seeded 80/10/10 partition of ``n``."""
    _check_split(split, ("train", "val", "test"), "Pathfinder")
    return _partition(n, PATHFINDER_SPLIT_FRACTIONS, seed)[("train", "val", "test").index(split)]


def pathfinder_marker_distances(data_dir: str | Path, split: str, contour_length: int = 14,
                                resolution: int = 32, seed: int = 0) -> np.ndarray | None:
    """The marker distance (sixth metadata field, written by :mod:`synthetic.pathfinder`) of each
    image of ``split``, in :func:`read_pathfinder`'s order; None if a line lacks it."""
    rows = [row for _, row in _metadata_rows(_pathfinder_root(data_dir, contour_length, resolution))]
    chosen = [rows[i] for i in _pathfinder_index(len(rows), split, seed).tolist()]
    try:
        return np.array([float(row[5]) for row in chosen])
    except (IndexError, ValueError):
        return None


def read_png(path: Path, size: int, origin: str) -> np.ndarray:
    """A ``size`` x ``size`` grayscale PNG as uint8; InputError names the file (and ``origin``).

    Only PNG is decoded, and only once its header gives the expected size (a header claiming a
    huge image is refused before any pixel is allocated)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=["PNG"]) as image:
                if image.size != (size, size):
                    raise InputError(f"{path}: image is {image.size[0]}x{image.size[1]}, expected {size}x{size}")
                pixels = np.asarray(image.convert("L"))
    except FileNotFoundError:
        raise InputError(f"{origin}: image {path} not found") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise InputError(f"{path}: unreadable PNG ({error}), listed at {origin}") from None
    return pixels


def read_pathfinder(data_dir: str | Path, split: str, seed: int = 0, contour_length: int = 14,
                    resolution: int = 32) -> LRASplit:
    """Pathfinder ``split`` (train / val / test): a seeded 80/10/10 split of every listed image.

    Only the images of the requested split are decoded.  Inputs are the ``resolution**2`` pixel
    intensities in row-major order.
    """
    _check_split(split, ("train", "val", "test"), "Pathfinder")
    root = _pathfinder_root(data_dir, contour_length, resolution)
    images, labels, origins = read_pathfinder_metadata(root)
    index = _pathfinder_index(len(images), split, seed)
    pixels = np.empty((len(index), resolution * resolution), dtype=np.int64)
    for row, i in enumerate(index.tolist()):
        pixels[row] = read_png(inside(root, images[i], origins[i]), resolution, origins[i]).reshape(-1)
    result = LRASplit(torch.from_numpy(pixels), _labels_tensor([labels[i] for i in index.tolist()]),
                      torch.full((len(index),), resolution * resolution, dtype=torch.int64), PIXEL_VOCAB)
    return _report("Pathfinder", split, result, root)


"""The ListOps reader: ``listops-1000/basic_<split>.tsv`` (columns Source, Target), its
expressions tokenized without a parse tree (:func:`tokenize_listops`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spt_theory.lra.readers.common import (
    LISTOPS_SYMBOLS,
    LISTOPS_VOCAB,
    SPECIAL_TOKENS,
    LRASplit,
    check_split,
    labels_tensor,
    locate,
    pack,
    parse_label,
    report,
    require_examples,
    tsv_rows,
)
from spt_theory.util.files import InputError

LISTOPS_MAX_LEN = 2048
LISTOPS_LAYOUT = "DATA_DIR/listops-1000/basic_{train,val,test}.tsv with header Source<TAB>Target"

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
    check_split(split, ("train", "val", "test"), "ListOps")
    path = locate(data_dir, [f"listops-1000/basic_{split}.tsv"], LISTOPS_LAYOUT)
    sequences, labels = [], []
    for number, (source, target) in tsv_rows(path, ("Source", "Target")):
        try:
            sequences.append(tokenize_listops(source))
        except ValueError as error:
            raise InputError(f"{path}:{number}: {error}") from None
        labels.append(parse_label(target, 10, f"{path}:{number}"))
    require_examples(len(labels), path)
    inputs, lengths = pack(sequences, max_len, 0, LISTOPS_VOCAB.pad)
    return report("ListOps", split, LRASplit(inputs, labels_tensor(labels), lengths, LISTOPS_VOCAB), path)


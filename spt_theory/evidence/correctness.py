"""Per-example test correctness, as evidence keeps it: which test examples a run classified correctly.

Arms are compared paired on the same test examples (docs/statistics.md), so every
evaluation of an LRA run's test split keeps, beside its ``test_accuracy``, a ``test_correct``
object in the test split's order (example i of the split is bit i)::

    {"n": <number of test examples>, "bits": <base64 of the packed bits>}

The encoding, fixed: the booleans are packed eight to a byte with ``numpy.packbits`` in its default
``bitorder="big"`` (example 0 is the most significant bit of byte 0, example 8 that of byte 1), the
ceil(n / 8) bytes are written in standard base64 with ``=`` padding (RFC 4648, section 4), and the
unused low bits of the last byte are 0.  A 1000-example test split takes 168 characters.

:func:`encode` writes it, :func:`decode` reads it back and refuses (``ValueError`` naming the
field) anything that is not exactly that; :func:`accuracy_of` is the share correct;
:func:`check` is what the schema asks of a stored one; :func:`test_correctness` is what a claim
calls to get it, an :class:`~spt_theory.evidence.EvidenceError` when a run lacks it.

>>> value = encode([True, False, True, True, False, False, False, False, True])
>>> value
{'n': 9, 'bits': 'sIA='}
>>> decode(value).tolist()
[True, False, True, True, False, False, False, False, True]
>>> accuracy_of(value)
0.4444444444444444
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from spt_theory.evidence import EvidenceError

FIELD = "test_correct"
"""The key of the per-example test correctness beside ``test_accuracy``."""
BIT_ORDER: Final = "big"
"""``numpy.packbits`` bit order: example 0 is the most significant bit of the first byte."""
ACCURACY_TOLERANCE = 1e-9
"""Largest gap allowed between a stored ``test_accuracy`` and the share its bits give."""
REGENERATE = ("regenerate with `python -m spt_theory.lra sweep` (a fresh --out: cached stages from before "
              "per-example correctness lack it)")


def encode(correct: Any) -> dict:
    """``{"n", "bits"}`` of the booleans ``correct`` (one per test example, in the split's order;
    module doc); ValueError for an empty or not one-dimensional array."""
    array = np.asarray(correct)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"correctness: a non-empty 1-D array expected, got shape {array.shape}")
    if array.dtype != np.bool_:
        if not np.isin(array, (0, 1)).all():
            raise ValueError("correctness: values other than 0 / 1 (False / True)")
        array = array.astype(bool)
    packed = np.packbits(array, bitorder=BIT_ORDER).tobytes()
    return {"n": int(array.size), "bits": base64.b64encode(packed).decode("ascii")}


def decode(value: Any) -> np.ndarray:
    """The boolean array of ``value`` (an :func:`encode` object); ValueError naming the field
    (``n``, ``bits``) unless it is exactly that encoding: n a positive integer, bits canonical
    base64 of ceil(n / 8) bytes whose unused bits are 0."""
    if not isinstance(value, dict):
        raise ValueError(f"an object {{n, bits}} expected, got {type(value).__name__}")
    n, bits = value.get("n"), value.get("bits")
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n: a positive integer expected, got {n!r}")
    if not isinstance(bits, str):
        raise ValueError(f"bits: a base64 string expected, got {type(bits).__name__}")
    try:
        raw = base64.b64decode(bits.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError("bits: not base64") from None
    if base64.b64encode(raw).decode("ascii") != bits:
        raise ValueError("bits: not canonical base64 (stray bits in the last character)")
    if len(raw) != math.ceil(n / 8):
        raise ValueError(f"bits: {len(raw)} bytes, n = {n} needs {math.ceil(n / 8)}")
    unpacked = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder=BIT_ORDER).astype(bool)
    if unpacked[n:].any():
        raise ValueError(f"bits: padding bits past example {n} are set")
    return unpacked[:n]


def accuracy_of(value: Any) -> float:
    """The share of examples correct in ``value`` (decoded, so a bad one is a ValueError).

    >>> accuracy_of(encode([True, True, False, True]))
    0.75
    """
    correct = decode(value)
    return int(correct.sum()) / len(correct)


def check(value: Any, accuracy: float | None = None, n: int | None = None) -> None:
    """ValueError unless ``value`` decodes, has ``n`` examples (if given) and gives ``accuracy``
    (if given) to :data:`ACCURACY_TOLERANCE`."""
    share = accuracy_of(value)
    if n is not None and value["n"] != n:
        raise ValueError(f"n: {value['n']} examples, the test split has {n}")
    if accuracy is not None and abs(share - accuracy) > ACCURACY_TOLERANCE:
        raise ValueError(f"its accuracy {share:.6g} is not the stored test_accuracy {accuracy:.6g}")


def field_check(value: dict | None, info: Any) -> dict | None:
    """The schema's check of a ``test_correct`` field (a pydantic field validator): it decodes
    and gives the model's ``test_accuracy`` where that is a number (:func:`check`)."""
    if value is not None:
        accuracy = info.data.get("test_accuracy")
        check(value, accuracy if isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool) else None)
    return value


def check_counts(points: Sequence[tuple[str, object]], n_test: int) -> None:
    """ValueError unless every ``test_correct`` among ``points`` ((field path, validated model)
    pairs) counts ``n_test`` examples, the file's test split."""
    for where, point in points:
        value = getattr(point, FIELD, None)
        if value is not None and value["n"] != n_test:
            raise ValueError(f"{where}.{FIELD}.n: {value['n']} examples, data.n_test is {n_test}")


def test_correctness(run_or_point: dict, path: str | Path, where: str = "") -> np.ndarray:
    """The per-example test correctness a claim pairs arms on: of a curve point, or of a run (a
    dict with ``curve`` and ``best_epoch``: the point of its best epoch, where its
    ``test_accuracy`` was read).  EvidenceError naming ``path`` and the field ``where`` when it
    is missing (evidence written before it was kept) or malformed; never a verdict without it.

    >>> run = {"best_epoch": 2, "curve": [{"epoch": 1, "test_accuracy": 0.5},
    ...                                   {"epoch": 2, "test_accuracy": 1.0, "test_correct": encode([1, 1])}]}
    >>> test_correctness(run, "x.json").tolist()
    [True, True]
    >>> test_correctness(run["curve"][0], "x.json", "cells[0].runs[0].curve[0]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spt_theory.evidence.EvidenceError: x.json: cells[0].runs[0].curve[0].test_correct: missing: ...
    """
    point, field = run_or_point, f"{where}.{FIELD}" if where else FIELD
    if isinstance(run_or_point, dict) and "curve" in run_or_point and FIELD not in run_or_point:
        index = next((i for i, p in enumerate(run_or_point["curve"])
                      if isinstance(p, dict) and p.get("epoch") == run_or_point.get("best_epoch")), None)
        if index is None:
            raise EvidenceError(f"{path}: {where or '(run)'}.curve: no point at best_epoch "
                                f"{run_or_point.get('best_epoch')!r}")
        point = run_or_point["curve"][index]
        field = f"{where}.curve[{index}].{FIELD}" if where else f"curve[{index}].{FIELD}"
    if not isinstance(point, dict) or FIELD not in point:
        raise EvidenceError(f"{path}: {field}: missing: this claim needs per-example test correctness; {REGENERATE}")
    try:
        return decode(point[FIELD])
    except ValueError as error:
        raise EvidenceError(f"{path}: {field}: {error}") from None

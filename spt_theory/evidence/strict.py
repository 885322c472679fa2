"""Evidence JSON read strictly, before any schema sees it: what ``json.loads`` lets through but no
evidence file may hold, refused in one line (an :class:`~spt_theory.evidence.EvidenceError`, never
a traceback).

- a key twice in one object (``json`` keeps the last one silently);
- ``NaN``, ``Infinity`` or a number that overflows to one (``1e999``), in any field, read or not;
- an integer of more than :data:`MAX_DIGITS` digits (``json`` reads 4,300 and then raises a bare
  ValueError);
- a file over :data:`MAX_BYTES` or nested deeper than :data:`MAX_DEPTH` (a 200,000-deep nesting
  raises RecursionError inside ``json``).

:func:`read` is the one way an evidence file is read from disk (``schema.load``, ``decide collect``'s
sweep summaries): its size is taken with ``stat`` before a byte is read, so a 3 GB (sparse) file is
one line, not a MemoryError, and a FIFO, device or folder is refused without opening it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from spt_theory.evidence import EvidenceError

MAX_BYTES = 64 << 20
"""Largest evidence file read (the committed ones are under 100 kB)."""
MAX_DEPTH = 32
"""Deepest nesting of arrays and objects in an evidence file (the formats use 5)."""
MAX_DIGITS = 20
"""Longest integer in an evidence file (seeds, steps and counts fit in 64 bits: 19 digits)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"key {twice!r} appears twice in one object")
    return dict(pairs)


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


def _where(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "(top level)"


def _walk(data: Any, name: str) -> None:
    """EvidenceError at the first number that is not finite (its field's path) or the first
    nesting deeper than :data:`MAX_DEPTH` (iterative: any depth is measured), in document order."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise EvidenceError(f"{name}: {_where(path)}: not a finite number")
        if isinstance(value, (dict, list)):
            if len(path) >= MAX_DEPTH:
                raise EvidenceError(f"{name}: nested deeper than {MAX_DEPTH} levels")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack += reversed([(v, (*path, k)) for k, v in items])


def strict_json(text: str | bytes, name: str) -> Any:
    """``text`` as JSON, strictly: no duplicated key, no NaN or infinity (spelt out or overflowing)
    in any field, no integer over :data:`MAX_DIGITS` digits, at most :data:`MAX_BYTES` and
    :data:`MAX_DEPTH` levels deep; EvidenceError in one line otherwise (never a traceback)."""
    if len(text) > MAX_BYTES:
        raise EvidenceError(f"{name}: {len(text)} bytes, over the {MAX_BYTES} an evidence file may have")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_integer)
    except json.JSONDecodeError as error:
        raise EvidenceError(f"{name}: not JSON (line {error.lineno} column {error.colno})") from None
    except UnicodeDecodeError:
        raise EvidenceError(f"{name}: not JSON (encoding)") from None
    except RecursionError:
        raise EvidenceError(f"{name}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise EvidenceError(f"{name}: not evidence JSON ({error})") from None
    _walk(data, name)
    return data


def read(path: str | os.PathLike, name: str | None = None) -> Any:
    """The file ``path`` read as strict evidence JSON (:func:`strict_json`); ``name`` (default the
    path) begins every message.  Before a byte is read, ``stat`` says it is a regular file (a FIFO
    would hang the read, a device never end) of at most :data:`MAX_BYTES` (a 3 GB file is refused
    without reading it); and no more than that is read even if it grows meanwhile.  EvidenceError
    in one line: missing, not a regular file, too large, unreadable, or not strict JSON."""
    path = Path(path)
    name = str(path) if name is None else name
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise EvidenceError(f"{name}: missing (no evidence, no verdict)") from None
    except OSError as error:
        raise EvidenceError(f"{name}: unreadable ({error.strerror or error})") from None
    if not stat.S_ISREG(info.st_mode):
        raise EvidenceError(f"{name}: not a regular file (no evidence, no verdict)")
    if info.st_size > MAX_BYTES:
        raise EvidenceError(f"{name}: {info.st_size} bytes, over the {MAX_BYTES} an evidence file may have")
    try:
        with open(path, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # replaced between the stat and the open
                raise EvidenceError(f"{name}: not a regular file (no evidence, no verdict)")
            text = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise EvidenceError(f"{name}: missing (no evidence, no verdict)") from None
    except OSError as error:
        raise EvidenceError(f"{name}: unreadable ({error.strerror or error})") from None
    return strict_json(text, name)

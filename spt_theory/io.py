"""Atomic file writes and the one clear error line for bad input.

Every file the toolkit writes (results JSON, checkpoints, figures' data) goes through a temporary
file in the same directory followed by ``os.replace``, so a kill during a write leaves the
previous version intact and never a half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


class InputError(Exception):
    """Bad input (a malformed file, an impossible config): printed as one line, exit code 2."""


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the finished file onto ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, obj) -> Path:
    """Write ``obj`` as indented JSON, atomically."""
    text = json.dumps(obj, indent=2, sort_keys=False, default=_jsonable)
    return atomic_write(path, lambda tmp: tmp.write_text(text + "\n"))


def _jsonable(obj):
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy / torch scalars
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

"""The marker a generator leaves beside the data it wrote, so a run can say where its data came from;
and which paths the toolkit's writers make (:data:`WRITTEN`), so a failed generator removes only
its own folders (:func:`removed_on_error`).

``GENERATED.json`` in the task's folder holds the generator's module and its settings (seed,
sizes, lengths).  The LRA runner records it in every result (``data.source``): data with the
marker are *generated* by this toolkit; data without it are taken as a release copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from spt_theory.util.files import OWNED, write_json

MARKER = "GENERATED.json"

WRITTEN = re.compile("|".join((
    re.escape(OWNED), re.escape(MARKER),
    r"(?:.*/)?\.[^/]+\.\d+\.[^/]+\.tmp",  # an atomic write's temporary file (atomic_write)
    r"(?:listops-\d+/)?(?:basic_(?:train|val|test)\.tsv|GENERATED\.json)",  # synthetic.listops, its parts
    r"(?:listops|pathfinder)-\d+",  # the folders of the earlier GPU data step (docs/history.md)
    r"(?:pathfinder-\d+/)?curv_contour_length_\d+(?:/(?:GENERATED\.json|imgs(?:/\d+(?:/sample_\d+\.png)?)?"
    r"|metadata(?:/\d+\.npy)?))?",  # synthetic.pathfinder, its parts
)))
"""Every path (relative to a folder the toolkit may replace) that the toolkit's writers make there:
its markers, temporary files, and the generators' release layouts.  A folder holding anything
else holds a file the toolkit did not write, and is never replaced."""


def write_marker(folder: str | Path, generator: str, settings: dict) -> Path:
    """Write ``folder/GENERATED.json`` = {"generator": ..., "settings": ...}."""
    return write_json(Path(folder) / MARKER, {"generator": generator, "settings": settings})


def read_marker(folder: str | Path) -> dict | None:
    """The marker of ``folder``, or None where there is none (or it is not a JSON object)."""
    path = Path(folder) / MARKER
    try:
        marker = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return marker if isinstance(marker, dict) else None


@contextlib.contextmanager
def removed_on_error(folder: str | os.PathLike, root: str | os.PathLike) -> Iterator[None]:
    """For a generator writing into ``folder`` under its ``--out`` ``root``: the folders on the way
    to ``folder`` that do not exist when the block starts are this run's own, and an error in the
    block (an interrupt excepted: what it wrote stays, whole) removes them again, deepest first:
    one inside ``root`` (or ``root``) only when it is a real folder holding nothing but what the
    generators write (:data:`WRITTEN`, relative to ``root``), one above ``root`` only when empty.
    So a failed run leaves no empty folders behind, and no folder that was there before it, nor a
    file the toolkit did not write, is ever removed."""
    folder, root = Path(os.path.abspath(folder)), Path(os.path.abspath(root))
    new = [path for path in (folder, *folder.parents) if not path.exists()]  # deepest first
    try:
        yield
    except Exception:
        for path in new:
            _remove_own(path, root)
        raise


def _remove_own(path: Path, root: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        return
    if path != root and root not in path.parents:
        with contextlib.suppress(OSError):
            path.rmdir()  # only if empty
        return
    inside = [Path(top) / name for top, folders, names in os.walk(path) for name in folders + names]
    if all(not p.is_symlink() and WRITTEN.fullmatch(p.relative_to(root).as_posix()) for p in inside):
        shutil.rmtree(path, ignore_errors=True)

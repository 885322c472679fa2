"""The marker a generator leaves beside the data it wrote, so a run can say where its data came from;
and, read from those markers, which folders a writer may replace.

``GENERATED.json`` in the task's folder holds the generator's module and its settings (seed,
sizes, lengths).  The LRA runner records it in every result (``data.source``): data with the
marker are *generated* by this toolkit; data without it are taken as a release copy.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from spt_theory.util.files import OWNED, InputError, atomic_write, links_between, make_dirs, write_json

MARKER = "GENERATED.json"


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


def owned_folder(folder: str | os.PathLike, root: str | os.PathLike, generators: tuple[str, ...] = ()) -> str | None:
    """None if a writer working in ``root`` may replace ``folder``: it is absent, or a real folder
    reached from ``root`` without a link that is empty, holds :data:`OWNED`, or holds (or holds one
    level down) the provenance marker of one of ``generators``.  Otherwise why not, in one line
    ending "nothing was changed"."""
    folder = Path(folder)
    link = links_between(root, folder)
    if link is not None:
        return f"{link} is a link (or lies outside {root}): nothing was changed"
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{folder} is not a folder: nothing was changed"
    if (folder / OWNED).is_file() or not any(folder.iterdir()):
        return None
    markers = [read_marker(folder)] + [read_marker(sub) for sub in folder.iterdir() if sub.is_dir()
                                       and not sub.is_symlink()]
    if any(m is not None and m.get("generator") in generators for m in markers):
        return None
    return f"{folder} was not made here (no {OWNED} marker, no generator marker): nothing was changed"


def make_owned(folder: str | os.PathLike, root: str | os.PathLike, generators: tuple[str, ...] = ()) -> Path:
    """Replace ``folder`` (inside ``root``) by an empty folder marked :data:`OWNED`; InputError,
    with nothing changed, unless :func:`owned_folder` allows it."""
    folder = Path(folder)
    why = owned_folder(folder, root, generators)
    if why is not None:
        raise InputError(why)
    if folder.exists():
        shutil.rmtree(folder)  # never follows a link inside: rmtree removes links, not their targets
    make_dirs(folder)
    atomic_write(folder / OWNED, lambda tmp: tmp.write_text("made by spt-theory; may be replaced by it\n"))
    return folder

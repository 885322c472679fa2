"""The marker a generator leaves beside the data it wrote, so a run can say where its data came from;
and, read from those markers, which folders a writer may replace.

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

from spt_theory.util.files import OWNED, InputError, atomic_write, links_between, make_dirs, write_json

MARKER = "GENERATED.json"

WRITTEN = re.compile("|".join((
    re.escape(OWNED), re.escape(MARKER),
    r"(?:.*/)?\.[^/]+\.\d+\.[^/]+\.tmp",  # an atomic write's temporary file (atomic_write)
    r"(?:listops-\d+/)?(?:basic_(?:train|val|test)\.tsv|GENERATED\.json)",  # synthetic.listops, its parts
    r"(?:listops|pathfinder)-\d+",  # the data step's parts
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
    if not any(folder.iterdir()):
        return None
    markers = [read_marker(folder)] + [read_marker(sub) for sub in folder.iterdir() if sub.is_dir()
                                       and not sub.is_symlink()]
    if not (folder / OWNED).is_file() and not any(m is not None and m.get("generator") in generators
                                                   for m in markers):
        return f"{folder} was not made here (no {OWNED} marker, no generator marker): nothing was changed"
    foreign = not_written_here(folder)
    if foreign is not None:
        return (f"{folder} holds {foreign}, which this toolkit did not write: nothing was changed (move it "
                f"away to let the folder be replaced)")
    return None


def not_written_here(folder: Path) -> Path | None:
    """The first entry under ``folder`` that none of the toolkit's writers makes (:data:`WRITTEN`),
    or a link; None if every entry is one of theirs."""
    for top, folders, names in os.walk(folder):  # links are not followed (and are refused below)
        for name in sorted(folders) + sorted(names):
            path = Path(top) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not WRITTEN.fullmatch(relative):
                return path
    return None


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

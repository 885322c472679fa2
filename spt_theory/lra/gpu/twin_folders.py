"""The GPU twin's folders (:mod:`spt_theory.lra.gpu.twin`): the run folder and the export folder
checked before anything is made (a link, a foreign file, a read-only ``$OUT``: refused in one line,
nothing changed), claimed with the twin's marker, and written through :class:`Output` (every file
atomically, never through a link; the log streamed to stderr and ``log.txt``)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

from spt_theory.util.files import OWNED, InputError, StorageError, atomic_write, links_between, make_dirs, write_json

OWN = re.compile(r"summary\.json|log\.txt|data\.npz|group-\d+\.json|" + re.escape(OWNED) + r"|\.[^/]+\.\d+\.[^/]+\.tmp")
"""What this script writes into its run folder and its export folder (atomic writes' temporary
files included)."""


def _folder_state(folder: Path, what: str) -> str:
    """``absent``, ``empty`` or ``ours`` (only this script's files, its marker there); InputError,
    nothing changed, for a link, a file, or a folder holding anything else."""
    link = links_between(folder.parent, folder)
    if link is not None:
        raise InputError(f"{what} {folder}: {link} is a link: nothing was changed")
    if not folder.exists():
        for parent in folder.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise InputError(f"{what} {folder}: {parent} is not a folder: nothing was changed")
                break
        return "absent"
    if not folder.is_dir():
        raise InputError(f"{what} {folder}: not a folder: nothing was changed")
    entries = sorted(folder.iterdir())
    if not entries:
        return "empty"
    foreign = [p for p in entries if p.is_symlink() or not p.is_file() or not OWN.fullmatch(p.name)]
    if foreign:
        raise InputError(f"{what} {folder} holds {len(foreign)} entries this script did not write (e.g. "
                         f"{foreign[0].name!r}): nothing was changed; give an empty folder")
    if not (folder / OWNED).is_file():
        raise InputError(f"{what} {folder} was not made by this script (no {OWNED} marker): nothing was changed")
    return "ours"


def check_folders(run: Path, export: Path | None, restart: bool, reuse_data: bool) -> dict:
    """Every check of the run and export folders, before anything is made or removed."""
    states = {"run": _folder_state(run, "run folder")}
    if states["run"] == "ours" and not (restart or reuse_data):
        raise InputError(f"run folder {run} holds an earlier run of this script: --restart to start over, or "
                         "--reuse-data to start over with its data (nothing was changed)")
    if reuse_data and not (run / "data.npz").is_file():
        raise InputError(f"--reuse-data: run folder {run} holds no data.npz")
    if export is not None:
        a, b = Path(os.path.abspath(export)), Path(os.path.abspath(run))
        if a == b or a.is_relative_to(b) or b.is_relative_to(a):
            raise InputError(f"export folder {export} and run folder {run}: one may not hold the other")
        states["export"] = _folder_state(export, "export folder")
    for name, folder in (("run", run), ("export", export)):
        if folder is not None:
            _writable(folder, f"{name} folder")
    return states


def _writable(folder: Path, what: str) -> None:
    """InputError, nothing made, unless ``folder`` (or the nearest folder above it that exists) can
    be written: a read-only ``$OUT`` is refused before the run folder is made."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{what} {folder}: {existing} cannot be written (read-only?): nothing was made")


def claim(folder: Path, state: str, keep: tuple[str, ...] = ()) -> None:
    """Make ``folder`` ours and empty of this script's files (but ``keep``)."""
    make_dirs(folder)
    if state == "ours":
        for path in folder.iterdir():
            if path.name not in keep and path.name != OWNED:
                path.unlink()
    atomic_write(folder / OWNED, lambda tmp: tmp.write_text("made by spt-theory's GPU twin; may be replaced by it\n"))


def claim_all(folders: list[tuple[Path, str, tuple[str, ...]]]) -> None:
    """:func:`claim` every ``(folder, state, keep)``; when one cannot be made (a read-only ``$OUT``, a full
    disk), the folders this call made are removed again (only they, and only their marker in them)
    and the StorageError goes on: no half-made run folder is left with its marker."""
    made: list[Path] = []
    try:
        for folder, state, keep in folders:
            made += [p for p in (folder, *folder.parents) if not p.exists()]
            claim(folder, state, keep)
    except (StorageError, OSError):
        for path in sorted(made, key=lambda p: len(p.parts), reverse=True):  # each holds at most our marker
            if path.is_dir() and not path.is_symlink():
                (path / OWNED).unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    path.rmdir()
        raise


class Output:
    """The run folder and the export folder; every file written atomically (a link at its name is
    replaced, never written through)."""

    def __init__(self, run: Path, export: Path | None):
        self.folders = [f for f in (run, export) if f is not None]
        self.log_lines: list[str] = []

    def write(self, name: str, obj) -> None:
        for folder in self.folders:
            write_json(folder / name, obj)

    def say(self, message: str) -> None:
        line = f"[gpu-twin {time.strftime('%H:%M:%S')}] {message}"
        print(line, file=sys.stderr, flush=True)
        self.log_lines.append(line)
        text = "\n".join(self.log_lines) + "\n"
        for folder in self.folders:
            atomic_write(folder / "log.txt", lambda tmp: tmp.write_text(text))

"""Atomic file writes and the one clear error line for bad input: the file primitives of the project.

Every file the project writes (generated data, results JSON, checkpoints, figures' data) goes
through a temporary file in the same directory followed by ``os.replace``, so a kill during a
write leaves the previous version intact and never a half-written file.  The finished file gets
the mode an ordinary ``open`` would give it (``0666`` less the umask).  The temporary file is named
``.NAME.<pid>.<random>.tmp``; one left behind by a killed writer (its pid no longer running) is
removed by the next write into that folder (:func:`remove_stale_temps`), and a live writer's
temporary file is never touched.

A write that fails for lack of space or permission raises :class:`StorageError`, an
:class:`InputError` that names the path and the system's reason (printed as one line, exit 2).

They live here, at the bottom of the data flow, so that the generators depend on nothing in
:mod:`spt_theory`; :mod:`spt_theory.io` re-exports them, so :class:`InputError` is one class that
every command line of the project catches.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


class InputError(Exception):
    """Bad input (a malformed file, an impossible config): printed as one line, exit code 2."""


class StorageError(InputError):
    """A file could not be written (read-only folder, no space left, no permission)."""


LEGACY_TEMP_AGE_S = 24 * 3600.0
"""Temporary files without a writer pid in their name (written before pids were recorded) are
removed once they are this old."""

_TEMP = re.compile(r"^\.(?P<name>.+?)\.(?:(?P<pid>\d+)\.)?(?P<random>[a-z0-9_]{8})\.tmp$")
"""``.NAME.<pid>.<8 random characters of mkstemp>.tmp`` (older versions: without ``<pid>.``)."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def storage_error(path: str | os.PathLike, error: OSError) -> StorageError:
    """The one-line :class:`StorageError` for an OSError met while writing ``path``."""
    reason = error.strerror or (errno.errorcode.get(error.errno, "") if error.errno else "") or str(error)
    return StorageError(f"{path}: cannot write ({reason})")


def make_dirs(path: str | os.PathLike) -> Path:
    """``mkdir -p path``; a read-only or full file system is a :class:`StorageError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise storage_error(path, error) from None
    return path


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temps(folder: str | os.PathLike, now: float | None = None) -> list[Path]:
    """Remove the temporary files of :func:`atomic_write` in ``folder`` whose writer is gone.

    A name with a pid is stale when no process has that pid (a live process, even one that only
    reuses a dead writer's pid, keeps its file); a name without one (older versions) when it is
    older than :data:`LEGACY_TEMP_AGE_S`.  Returns the files removed; never raises.
    """
    removed = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if not match or not entry.is_file(follow_symlinks=False):
            continue
        try:
            if match["pid"] is not None:
                stale = not _pid_running(int(match["pid"]))
            else:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > LEGACY_TEMP_AGE_S
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # removed meanwhile, or a read-only folder: nothing to do
            continue
    return removed


def _temporary_beside(path: Path) -> str:
    """A new empty temporary file ``.NAME.<pid>.<random>.tmp`` in ``path``'s folder (its name);
    :class:`StorageError` naming ``path`` when the folder cannot be written."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise storage_error(path, error) from None
    os.close(fd)
    return tmp


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the finished file onto ``path`` atomically.

    The file gets mode ``0666 & ~umask``.  An OSError while writing (no space, read-only folder),
    or an error raised while handling one, becomes a :class:`StorageError` naming ``path``; the
    previous file at ``path`` stays intact.  (``write`` should write through a Python file object:
    C++ writers such as ``torch.save(obj, path)`` lose the OSError.)
    """
    path = Path(path)
    make_dirs(path.parent)
    remove_stale_temps(path.parent)
    tmp = _temporary_beside(path)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        cause = _os_error(error)
        if cause is not None:
            raise storage_error(path, cause) from None
        raise
    return path


def _os_error(error: BaseException) -> OSError | None:
    """``error`` or the OSError it was raised while handling (torch.save reports a failed write
    to a Python file as a RuntimeError whose context is the OSError), else None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


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


def check_output(path: str | os.PathLike) -> list[Path]:
    """Check, before any work, that a file can be written at ``path``; return the folders created.

    Missing parent folders are created (the caller announces them); a probe temporary file, named
    like :func:`atomic_write`'s (``.NAME.<pid>.*.tmp``), is created and removed in the folder.  A
    folder that cannot be created or written, or a ``path`` that is a folder, raises
    :class:`StorageError` naming ``path``.
    """
    path = Path(path)
    if path.is_dir():
        raise StorageError(f"{path}: cannot write (it is a folder)")
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    make_dirs(path.parent)
    os.unlink(_temporary_beside(path))
    return sorted(missing)


def prepare_output(path: str | os.PathLike, folder: bool = False) -> None:
    """:func:`check_output` for a command line: ``path`` is a file (or, with ``folder``, a folder
    the command writes into); every folder it had to create is said on stderr."""
    for created in check_output(Path(path) / ".write-check" if folder else path):
        print(f"created folder {created}", file=sys.stderr, flush=True)


def announce(path: str | os.PathLike, what: str = "") -> None:
    """Say on stderr that ``path`` was written (``what``: e.g. "1000 trees to"); once per file."""
    print(f"wrote {what + ' ' if what else ''}{path}", file=sys.stderr, flush=True)

"""Atomic file writes, JSON reads and the one clear error line for bad input: the file primitives of the project.

Every file the project writes (generated data, results JSON, checkpoints, figures' data) goes
through a temporary file in the same directory followed by ``os.replace``, so a kill during a
write leaves the previous version intact and never a half-written file.  The finished file gets
the mode an ordinary ``open`` would give it (``0666`` less the umask).  The temporary file is named
``.NAME.<pid>.<random>.tmp`` (its output's name, the writer's process id); the writer removes it
when the write fails or is interrupted, and removes nothing else: no other file of the folder,
whatever its name or age, since a name cannot tell whose a file is.  Only a writer killed by
SIGKILL (or a power cut) leaves its temporary file behind; nothing reads it, and it may be deleted
by hand.

A write that fails for lack of space or permission raises :class:`StorageError`, an
:class:`InputError` that names the path and the system's reason (printed as one line, exit 2).

They live here, at the bottom of the data flow, so that the generators depend on nothing else in
:mod:`spt_theory`; every module imports them from here (one import path per name), so
:class:`InputError` is one class that every command line of the project catches.

Field checks of a parsed JSON file: :func:`require` (an InputError naming the file and the field)
and :func:`is_number` (an int or a finite float, not a bool).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any


class InputError(Exception):
    """Bad input (a malformed file, an impossible config): printed as one line, exit code 2.

    Its text is one line whatever it quotes: a line break or other control character (a file
    named with a newline, a field of random bytes) is shown as its escape, e.g. ``\\n``."""

    def __str__(self) -> str:
        return "".join(_escaped(c) for c in super().__str__())


def _escaped(character: str) -> str:
    """``character``, or its backslash escape if it is a control character or breaks a line."""
    if character.isprintable() or character == " ":
        return character
    return character.encode("unicode_escape").decode("ascii")


class ConfigError(InputError, ValueError):
    """An impossible configuration: a config dataclass's field out of range or an unknown choice
    (:class:`~spt_theory.core.model.ModelConfig`, the LRA and training configs, a run's recipe).  An
    :class:`InputError`, so every command prints it as one line (exit 2); a ValueError, as Python
    callers expect of a bad value."""


class StorageError(InputError):
    """A file could not be written (read-only folder, no space left, no permission)."""


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


def _temporary_beside(path: Path) -> str:
    """A new empty temporary file ``.NAME.<pid>.<random>.tmp`` in ``path``'s folder (its name);
    :class:`StorageError` naming ``path`` when the folder cannot be written."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise storage_error(path, error) from None
    os.close(fd)
    return tmp


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """In the main thread, a SIGINT or SIGTERM arriving in the block runs its Python handler (the
    interrupt of :mod:`spt_theory.util.interrupts`, or ``KeyboardInterrupt``) only when the block ends, so
    that a temporary file is created and its name bound in one step as far as the handler sees: a
    signal cannot leave behind a file that no one has the name of.  (Blocking the signals with
    ``pthread_sigmask`` would not do: the kernel hands a process's signal to any thread that does
    not block it, such as torch's OpenMP workers, and Python runs the handler at once.)  Signals
    with no Python handler (default action, ignored) and other threads are left as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[tuple[int, FrameType | None]] = []
    handlers: dict[int, Callable[[int, FrameType | None], Any]] = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(number)
        if callable(handler):
            handlers[number] = handler
    for s in handlers:
        signal.signal(s, lambda signum, frame: pending.append((signum, frame)))
    try:
        yield
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        for signum, frame in pending[:1]:
            handlers[signum](signum, frame)


EVIDENCE_FOLDER = Path(__file__).resolve().parent.parent / "evidence"
"""The package's committed evidence (``spt_theory/evidence``), found beside this package without
importing it: only ``--promote`` (:func:`promoting`) writes there."""
_promoting = threading.local()


@contextlib.contextmanager
def promoting() -> Iterator[None]:
    """The one way into :data:`EVIDENCE_FOLDER`: writes in this block may land there
    (``spt_theory.evidence.promote``, what every ``--promote`` calls)."""
    before = getattr(_promoting, "on", False)
    _promoting.on = True
    try:
        yield
    finally:
        _promoting.on = before


def inside_evidence(path: str | os.PathLike) -> bool:
    """Whether ``path`` (relative, absolute, through links; it need not exist) lies in or is the
    committed evidence folder."""
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(EVIDENCE_FOLDER))
    return real == root or root in real.parents


def refuse_evidence(path: str | os.PathLike, option: str = "") -> None:
    """InputError, before any work, when a command would write at ``path`` inside the committed
    evidence (outside :func:`promoting`): ``option`` names where the path came from (``--json``)."""
    if inside_evidence(path) and not getattr(_promoting, "on", False):
        raise InputError(f"{option + ' ' if option else ''}{path}: inside the committed evidence "
                         f"({EVIDENCE_FOLDER}); only --promote writes there: nothing was written")


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def refuse_special(path: str | os.PathLike) -> None:
    """:class:`StorageError` (an InputError: one line, exit 2) naming ``path`` when something other
    than a regular file stands there (through a link: a link to ``/dev/full`` is a device): a
    writer replaces only a file, never a device node, FIFO, socket or folder that is not its own.
    Nothing there (or a dangling link) is fine."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # nothing there, a dangling link, a folder we cannot search: the write says
        return
    for test, kind in _KINDS:
        if test(mode):
            raise StorageError(f"{path}: cannot write ({kind} stands there, not a regular file; "
                               "a writer replaces only a file: nothing was written)")


def atomic_write(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and move the finished file onto ``path`` atomically.

    A ``path`` inside the committed evidence is refused (:func:`refuse_evidence`) unless promoting;
    a ``path`` where something other than a regular file stands (a device, FIFO, socket or folder,
    a link to one) is refused before anything is written (:func:`refuse_special`), and again just
    before the move.  The file gets mode ``0666 & ~umask``.  An OSError while writing (no space, read-only folder),
    or an error raised while handling one, becomes a :class:`StorageError` naming ``path``; the
    previous file at ``path`` stays intact.  (``write`` should write through a Python file object:
    C++ writers such as ``torch.save(obj, path)`` lose the OSError.)
    """
    path = Path(path)
    refuse_evidence(path)
    refuse_special(path)
    make_dirs(path.parent)
    tmp = None
    try:
        with _signals_held():
            tmp = _temporary_beside(path)
        os.chmod(tmp, 0o666 & ~_umask())
        write(Path(tmp))
        refuse_special(path)  # made meanwhile
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:  # this call's own temporary file, and nothing else
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
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


MAX_JSON_BYTES = 256 << 20
"""The largest JSON input :func:`read_json` reads (a run's result with every evaluation's
per-example correctness is a few MB; committed evidence has its own, smaller bound)."""


def read_json(path: str | os.PathLike):
    """The JSON value in the file ``path``; a missing, unreadable, non-UTF-8 or malformed file is an
    :class:`InputError` naming it (and the line and column of a syntax error), and so is something
    other than a regular file there (a FIFO would block, a device never end) or a file over
    :data:`MAX_JSON_BYTES`, refused before anything is read."""
    return read_json_hashed(path)[0]


def read_json_hashed(path: str | os.PathLike) -> tuple[Any, str]:
    """(the JSON value in the file ``path`` as :func:`read_json` reads it, the sha256 of the very
    bytes parsed): the file is read once, so the digest is always that of what was parsed."""
    import hashlib

    path = Path(path)
    try:
        info = os.stat(path)
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise InputError(f"{path}: cannot read ({kind} stands there, not a regular file)")
        if info.st_size > MAX_JSON_BYTES:
            raise InputError(f"{path}: {info.st_size} bytes, over the {MAX_JSON_BYTES} a JSON input may have")
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"missing {path}") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text), hashlib.sha256(raw).hexdigest()
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg})") from None
    except (ValueError, RecursionError) as error:  # an integer of over 4300 digits, arrays nested too deep
        raise InputError(f"{path}: not readable JSON ({type(error).__name__}: {error})") from None


def is_number(value) -> bool:
    """An int or a finite float (JSON's numbers; not a bool, NaN or an infinity)."""
    return type(value) is int or (type(value) is float and math.isfinite(value))


def require(ok, path: str | os.PathLike, field: str, what: str) -> None:
    """InputError ``<path>: field <field> must be <what>`` unless ``ok``."""
    if not ok:
        raise InputError(f"{path}: field {field} must be {what}")


def write_json(path: str | os.PathLike, obj, strict: bool = False) -> Path:
    """Write ``obj`` as indented JSON, atomically.  ``strict``: standard JSON only, an infinity
    written as the string ``"inf"`` / ``"-inf"`` and NaN as ``null`` (:func:`strict_json`)."""
    if strict:
        obj = strict_json(json.loads(json.dumps(obj, default=_jsonable)))
    text = json.dumps(obj, indent=2, sort_keys=False, default=_jsonable, allow_nan=not strict)
    return atomic_write(path, lambda tmp: tmp.write_text(text + "\n"))


def strict_json(obj):
    """``obj`` with every non-finite float replaced: +-infinity by ``"inf"`` / ``"-inf"``, NaN by None.

    >>> strict_json({"window": [float("-inf"), 2.0, float("nan")]})
    {'window': ['-inf', 2.0, None]}
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strict_json(v) for v in obj]
    return obj


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
    :class:`StorageError` naming ``path``; a ``path`` inside the committed evidence, or one where a
    device, FIFO or socket stands, InputError (:func:`refuse_evidence`; :func:`refuse_special`, a
    StorageError).
    """
    path = Path(path)
    refuse_evidence(path)
    if path.is_dir():
        raise StorageError(f"{path}: cannot write (it is a folder)")
    refuse_special(path)
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


OWNED = ".made-here"
"""The marker a writer leaves in a folder it created (:func:`make_owned`): only such a folder, an
empty one or one a named generator marked is ever replaced (:func:`owned_folder`)."""


def links_between(root: str | os.PathLike, path: str | os.PathLike) -> Path | None:
    """The first symbolic link on the way from ``root`` down to ``path`` (``path`` included), or None.
    A ``path`` outside ``root`` counts as its own link (it is not reached from ``root``)."""
    root, path = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return path
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def refuse_links(folder: str | os.PathLike, root: str | os.PathLike) -> None:
    """A generator about to write its data set into ``folder`` (under the ``root`` it was given):
    InputError, nothing written, if ``folder`` or a folder between is a link (a writer never writes
    through a link out of the folder it was given; it writes beside other files, removing none)."""
    link = links_between(root, folder)
    if link is not None:
        raise InputError(f"{link} is a link: nothing was written (give the folder it points to as --out)")

"""Run-directory locks, and the project's file primitives (:mod:`spt_theory.util.files`) under the toolkit's name.

:func:`directory_lock` serialises the processes that train into one run directory (``flock``:
released by the kernel when its holder exits or is killed, so a lock is never left stale).

Atomic writes (:func:`atomic_write`, :func:`write_json`), :func:`read_json`, the check that an
output can be written before any work (:func:`check_output`; :func:`prepare_output` says the
folders it created, :func:`announce` a file written), and the errors :class:`InputError` (bad
input: one line, exit 2), :class:`ConfigError` (an impossible config, an InputError) and
:class:`StorageError` are defined in :mod:`spt_theory.util.files` (the
generators write through them and depend on nothing here) and re-exported from this module for
the toolkit's code.

Field checks of a parsed JSON file: :func:`require` (an InputError naming the file and the field)
and :func:`is_number` (an int or a finite float, not a bool).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from spt_theory.util.files import (
    ConfigError,
    InputError,
    StorageError,
    announce,
    atomic_write,
    check_output,
    make_dirs,
    prepare_output,
    read_json,
    storage_error,
    write_json,
)

__all__ = ["ConfigError", "InputError", "StorageError", "announce", "atomic_write", "check_output", "directory_lock",
           "is_number", "make_dirs", "prepare_output", "read_json", "require", "write_json"]


def is_number(value) -> bool:
    """An int or a finite float (JSON's numbers; not a bool, NaN or an infinity)."""
    return type(value) is int or (type(value) is float and math.isfinite(value))


def require(ok, path: str | os.PathLike, field: str, what: str) -> None:
    """InputError ``<path>: field <field> must be <what>`` unless ``ok``."""
    if not ok:
        raise InputError(f"{path}: field {field} must be {what}")


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike, wait_message: bool = True,
                   busy: str | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on ``directory`` (the file ``.<name>.lock`` next to it) in the block,
    which gets whether it had to wait for another holder (then the directory may have changed).

    A second process asking for the same lock waits until the first leaves the block, exits or is
    killed (the kernel drops an ``flock`` with its holder, so a killed holder's lock is taken over);
    with ``busy`` it does not wait but raises :class:`InputError` with that text.
    The holder removes the lock file when it leaves; a waiter that then holds the lock of a removed
    file opens the path again.  Where the lock file cannot be created because the parent is
    read-only, nobody can write the directory either: the block runs unlocked (reads only).  Not
    re-entrant within one process.
    """
    directory = Path(directory)
    make_dirs(directory.parent)
    lock_path = directory.parent / f".{directory.name}.lock"
    waited = False
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as error:
            if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                yield False
                return
            raise storage_error(lock_path, error) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if busy is not None:
                os.close(fd)
                raise InputError(busy) from None
            if wait_message:
                print(f"waiting for another process training in {directory}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = True
        try:
            current = os.stat(lock_path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the holder we waited for removed this file: lock the path anew
    try:
        yield waited
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(fd)  # releases the lock

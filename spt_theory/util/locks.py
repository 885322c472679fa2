"""Run-directory locks on the ``filelock`` package (``flock`` on Unix, ``msvcrt`` on Windows).

:func:`directory_lock` serialises the processes that train into one run directory: a stage of the
run cache (:class:`spt_theory.training.cache.StageCache`) or a sweep's summary.  The operating
system releases the lock when its holder exits or is killed, so a lock is never left stale; the
lock file ``.<name>.lock`` beside the directory stays in place (waiters then share one file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from spt_theory.util.files import InputError, make_dirs, storage_error

READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
"""Why a lock file cannot be created where nobody can write the directory either."""


def lock_path(directory: str | os.PathLike) -> Path:
    """The lock file of ``directory``: ``.<name>.lock`` in its parent."""
    directory = Path(directory)
    return directory.parent / f".{directory.name}.lock"


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike, wait_message: bool = True,
                   busy: str | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on ``directory`` (the file :func:`lock_path`) in the block, which gets
    whether it had to wait for another holder (then the directory may have changed meanwhile).

    A second process asking for the same lock waits until the first leaves the block, exits or is
    killed (the operating system drops the lock with its holder); with ``busy`` it does not wait
    but raises :class:`~spt_theory.util.files.InputError` with that text.  Where the lock file
    cannot be created because the parent is read-only, nobody can write the directory either: the
    block runs unlocked (reads only).  Each call is its own lock, so two threads exclude each
    other as two processes do; not re-entrant within one thread.
    """
    directory = Path(directory)
    make_dirs(directory.parent)
    path = lock_path(directory)
    lock = FileLock(path, thread_local=False)
    waited = False
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if busy is not None:
                raise InputError(busy) from None
            if wait_message:
                print(f"waiting for another process training in {directory}", file=sys.stderr, flush=True)
            lock.acquire()
            waited = True
    except OSError as error:
        if error.errno in READ_ONLY:
            yield False
            return
        raise storage_error(path, error) from None
    try:
        yield waited
    finally:
        lock.release()

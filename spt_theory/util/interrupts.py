"""SIGINT and SIGTERM as a clean stop: the decorator every command line's ``main`` wears.

While a main decorated with :func:`interruptible` runs, SIGINT (Ctrl-C) and SIGTERM raise
:class:`Interrupted`, a ``KeyboardInterrupt``, in the main thread, so the program unwinds as after
Ctrl-C: :func:`spt_theory.util.files.atomic_write` removes its own temporary file and keeps the previous
version of the file it was writing, so every checkpoint and output on disk is whole, and a rerun
resumes from the last checkpoint.  The command then prints one line on stderr and returns 130
(SIGINT) or 143 (SIGTERM), the shell's ``128 + signal number``, without a traceback.

Before ``main`` runs, while a command imports torch and the toolkit (seconds, nothing written
yet), :func:`stop_at_once` (installed by ``spt_theory/__init__.py`` under ``python -m`` and by
``spt``) gives the same line and status at once, without a traceback.

A second signal while the program unwinds ends it at once (same line, same status; a temporary
file being written may then stay behind, as after SIGKILL, and the previous file stays whole).  A
signal the process was started with ignored (``nohup``, a background job) stays ignored.  The
handlers are those of the caller again once ``main`` returns.

It lives in :mod:`spt_theory.util` beside :mod:`spt_theory.util.files`, importing neither torch nor
the rest of the toolkit, so that the generators in :mod:`synthetic` use it too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}
"""Exit status of a command stopped by each signal."""


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM while an :func:`interruptible` main runs."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


TRAINING = "training resumes from its last checkpoint"
"""What a rerun of a training command does (the default of :func:`interrupted_line`)."""
GENERATING = "it generates the data again from the start"
"""What a rerun of a data generator does."""


def interrupted_line(signum: int, rerun: str = TRAINING) -> str:
    """The line a command stopped by ``signum`` prints on stderr; ``rerun``: what its rerun does."""
    return (f"interrupted by {signal.Signals(signum).name}: every file written is whole; rerun the same "
            f"command to finish ({rerun})")


def _exit_now(signum, frame, rerun: str = TRAINING) -> None:
    os.write(2, (interrupted_line(signum, rerun) + "\n").encode())
    os._exit(EXIT_STATUS[signum])


def stop_at_once() -> dict:
    """SIGINT and SIGTERM (those not ignored) print :func:`interrupted_line` and end the program at
    once with 130 / 143: for a command's start, while it imports, before :func:`interruptible`
    takes over.  Returns the handlers replaced (for :func:`stopping_at_once`); in a thread other
    than the main one it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {s: signal.getsignal(s) or signal.SIG_DFL for s in EXIT_STATUS
                if signal.getsignal(s) is not signal.SIG_IGN}
    for s in previous:
        signal.signal(s, _exit_now)
    return previous


@contextlib.contextmanager
def stopping_at_once() -> Iterator[None]:
    """:func:`stop_at_once` inside the block, the caller's handlers again after it."""
    previous = stop_at_once()
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interruptible(main: Callable[..., int] | None = None, *, rerun: str = TRAINING):
    """``main`` with SIGINT and SIGTERM turned into a clean stop (module docstring): it returns
    ``main``'s status, or 130 / 143 after printing :func:`interrupted_line` (with ``rerun``:
    ``@interruptible(rerun=GENERATING)`` for a generator)."""
    if main is None:
        return functools.partial(interruptible, rerun=rerun)

    @functools.wraps(main)
    def command(*args, **kwargs) -> int:
        if threading.current_thread() is not threading.main_thread():  # only it receives signals
            return main(*args, **kwargs)
        handled = [s for s in EXIT_STATUS if signal.getsignal(s) is not signal.SIG_IGN]
        previous = {s: signal.getsignal(s) or signal.SIG_DFL for s in handled}  # None: set outside Python

        def stop(signum, frame):
            for s in handled:
                signal.signal(s, functools.partial(_exit_now, rerun=rerun))
            raise Interrupted(signum)

        try:
            for s in handled:
                signal.signal(s, stop)
            try:
                return main(*args, **kwargs)
            finally:
                for s in handled:  # the stop below is not itself interrupted
                    signal.signal(s, signal.SIG_IGN)
        except KeyboardInterrupt as error:
            signum = getattr(error, "signum", signal.SIGINT)
            print(interrupted_line(signum, rerun), file=sys.stderr, flush=True)
            return EXIT_STATUS[signum]
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    return command

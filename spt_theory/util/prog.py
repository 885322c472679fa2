"""The program name a command's usage shows: its ``python -m`` spelling, or ``spt SUB`` under the launcher.

Each command line passes its own spelling through :func:`prog` (``prog=prog("python -m
spt_theory.verify")``); :mod:`spt_theory.cli` runs a command inside :func:`renamed`, so that its
usage and errors read ``spt verify``.  Only the parser whose default is the one renamed changes, so
a command that builds another command's parser keeps that one's name.  It lives in
:mod:`spt_theory.util`, which imports nothing else of the toolkit, so that the generators of
:mod:`synthetic` use it without depending on the rest of :mod:`spt_theory`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_RENAMED: ContextVar[tuple[str, str] | None] = ContextVar("spt_prog", default=None)


def prog(default: str) -> str:
    """``default``, or the name :func:`renamed` gives it while it runs."""
    renaming = _RENAMED.get()
    return renaming[1] if renaming is not None and renaming[0] == default else default


@contextmanager
def renamed(default: str, name: str) -> Iterator[None]:
    """While inside, :func:`prog` turns ``default`` into ``name``."""
    token = _RENAMED.set((default, name))
    try:
        yield
    finally:
        _RENAMED.reset(token)

"""Progress of long work on stderr, the same in every command of the project.

A :class:`Progress` counts one piece of work (a training stage's steps, a generator's trees, a
probe's batches, verify's claims) towards its total.  Where it is shown depends on stderr alone:

- on a terminal, a tqdm bar (its ``note`` goes into the bar's postfix);
- otherwise (a log file, a pipe, ``tee``), plain lines ``WHAT: DONE/TOTAL UNIT[, NOTE] (SECONDS s)``:
  one when the work starts, one per :meth:`Progress.note` (an epoch, a claim), one at least every
  :data:`LINE_INTERVAL_S` seconds while it counts, and one when it ends;
- with ``enabled=False`` (``--no-progress``), nothing.

It lives here, at the bottom of the data flow beside :mod:`spt_theory.util.files`, so that the
generators, which import nothing of :mod:`spt_theory`, show progress as the toolkit does.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TextIO

from tqdm import tqdm

LINE_INTERVAL_S = 60.0
"""Without a terminal: the longest stretch of counting without a line."""


class Progress:
    """Progress of ``what`` from ``initial`` to ``total`` ``unit`` (a plural: "steps") on ``stream``
    (default: stderr); see the module doc for how it is shown."""

    def __init__(self, what: str, total: int, unit: str, *, enabled: bool = True, initial: int = 0,
                 stream: TextIO | None = None, interval: float = LINE_INTERVAL_S):
        self.what, self.total, self.unit, self.done = what, total, unit, initial
        self.stream = stream or sys.stderr
        self.mode = "off" if not enabled else "bar" if self.stream.isatty() else "lines"
        self.interval = interval
        self._start = time.perf_counter()
        self._last_line = self._start
        self._shown_at: int | None = None
        self._bar = (tqdm(total=total, initial=initial, desc=what, unit=unit, leave=False,
                          file=self.stream, dynamic_ncols=True) if self.mode == "bar" else None)
        if self.mode == "lines":
            self._line("starting" if initial == 0 else f"resuming at {initial}")

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.mode == "lines" and time.perf_counter() - self._last_line >= self.interval:
            self._line()

    def note(self, detail: str) -> None:
        """A milestone (an epoch ended, the next claim starts): a line, or the bar's postfix."""
        if self._bar is not None:
            self._bar.set_postfix_str(detail, refresh=True)
        elif self.mode == "lines":
            self._line(detail)

    @contextlib.contextmanager
    def printing(self):
        """A block that prints other text to the terminal: the bar steps aside meanwhile."""
        if self._bar is None:
            yield
            return
        with tqdm.external_write_mode(file=self.stream):
            yield

    def close(self) -> None:
        """The work ended (or stopped): the bar goes, or a last line if the count moved since the last."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "lines" and self._shown_at != self.done:
            self._line("done" if self.done >= self.total else "stopped")
        self.mode = "off"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _line(self, detail: str = "") -> None:
        now = time.perf_counter()
        print(f"{self.what}: {self.done}/{self.total} {self.unit}" + (f", {detail}" if detail else "")
              + f" ({now - self._start:.0f} s)", file=self.stream, flush=True)
        self._last_line, self._shown_at = now, self.done

"""The steps of the one-GPU confirmation (:mod:`spt_theory.lra.gpu.confirm`) as processes with a
timeout.  Each process runs in a process group of its own (in this session, so that whatever ends
the session's processes ends it too; on Python 3.10 in a session of its own); its output (stdout
and stderr together) is shown on this process's stderr as it comes and kept in a log file.  A step
that outlives its timeout is cut: every process group of it is stopped (SIGTERM, then SIGKILL
after ``KILL_WAIT`` seconds).  What happened is a :class:`Step`, the record ``summary.json`` keeps.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from spt_theory.util.files import make_dirs

KILL_WAIT = 5.0
"""Seconds a stopped process group has between SIGTERM and SIGKILL."""
POLL_SECONDS = 0.1
TAIL_CHARACTERS = 2000
"""Characters of a failed or cut process's output that its step's record keeps."""
OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
"""Popen's arguments for a process group of its own."""


@dataclass
class Step:
    """One step of the run as ``summary.json`` records it: how it ended (``status``: ``ok``,
    ``failed``, ``cut`` at its timeout, or ``skipped``), its seconds against the plan's, the
    timeout it ran under, each process's exit status (negative: stopped by that signal), why it
    did not finish (``message``, ``output_tail``), its commands and its log files."""

    name: str
    status: str
    seconds: float = 0.0
    planned_seconds: float | None = None
    timeout_seconds: float | None = None
    exit_status: dict = field(default_factory=dict)
    message: str = ""
    output_tail: str = ""
    commands: dict = field(default_factory=dict)
    logs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def error_line(self) -> str:
        """The one ``error:`` line the script prints for a step that did not finish."""
        return f"error: step {self.name} {self.status}: {self.message}"


def say(message: str) -> None:
    print(f"[lra-gpu] {message}", file=sys.stderr, flush=True)


def log_name(label: str) -> str:
    """The log file of the process ``label`` ("data listops 0" -> "data-listops-0.log")."""
    return "-".join(label.split()) + ".log"


def _copy_output(pipe, sink, lock: threading.Lock) -> None:
    """Copy ``pipe`` to ``sink`` (bytes) and to this process's stderr (text) until it closes."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in iter(lambda: pipe.read1(65536), b""):
        sink.write(chunk)
        with lock:
            sys.stderr.write(decoder.decode(chunk))
            sys.stderr.flush()
    pipe.close()


def stop(process: subprocess.Popen) -> None:
    """End ``process`` and its process group: SIGTERM, SIGKILL after ``KILL_WAIT`` seconds, and
    SIGKILL for whatever of the group outlived its leader."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(KILL_WAIT)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(path: Path) -> str:
    with open(path, "rb") as log:
        log.seek(max(0, os.path.getsize(path) - 4 * TAIL_CHARACTERS))
        return log.read().decode("utf-8", errors="replace")[-TAIL_CHARACTERS:]


def run_step(name: str, commands: dict[str, list[str]], timeout: float, logs: Path,
             planned: float | None = None, env: dict | None = None) -> Step:
    """Run the processes ``commands`` (label -> argv) of step ``name`` at once, logging each to
    ``logs/<label>.log``.  The step is ``ok`` when all exit 0, ``failed`` at the first that exits
    non-zero (or cannot start), ``cut`` when ``timeout`` seconds pass first; the processes still
    running are stopped either way."""
    make_dirs(logs)
    step = Step(name, "ok", planned_seconds=planned, timeout_seconds=round(timeout, 2),
                commands={label: shlex.join(argv) for label, argv in commands.items()},
                logs=[log_name(label) for label in commands])
    start = time.perf_counter()
    processes, threads, sinks, tail_of = {}, [], [], None
    lock = threading.Lock()
    try:
        for label, argv in commands.items():
            say(f"{label}: {shlex.join(argv)} (timeout {timeout:.0f} s)")
            # the log as it comes; outlives this loop (a thread writes it), closed in the finally below
            sink = open(logs / log_name(label), "wb", buffering=0)  # noqa: SIM115
            sinks.append(sink)
            try:
                process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                           **OWN_GROUP)
            except OSError as error:
                step.status, step.message = "failed", f"{label} could not start: {error}"
                break
            processes[label] = process
            threads.append(threading.Thread(target=_copy_output, args=(process.stdout, sink, lock), daemon=True))
            threads[-1].start()
        while step.ok:
            codes = {label: process.poll() for label, process in processes.items()}
            failed = [label for label, code in codes.items() if code not in (None, 0)]
            if failed:
                step.status = "failed"
                step.message = f"{failed[0]} exited with status {codes[failed[0]]} (log {log_name(failed[0])})"
                tail_of = failed[0]
            elif all(code == 0 for code in codes.values()):
                break
            elif time.perf_counter() - start >= timeout:
                running = [label for label, code in codes.items() if code is None]
                step.status = "cut"
                step.message = f"cut at its timeout of {timeout:.0f} s ({', '.join(running)} still running)"
                tail_of = running[0]
            else:
                time.sleep(POLL_SECONDS)
    finally:
        for process in processes.values():
            stop(process)
        for thread in threads:
            thread.join(KILL_WAIT)
        for sink in sinks:
            sink.close()
    if tail_of is not None:
        step.output_tail = _tail(logs / log_name(tail_of))
    step.exit_status = {label: process.returncode for label, process in processes.items()}
    step.seconds = round(time.perf_counter() - start, 2)
    if not step.ok:
        say(step.error_line())
    return step

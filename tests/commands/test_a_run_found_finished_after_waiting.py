"""A ``train`` that waits for another process's lock on a stage and then finds the stage finished
(issue 44) reloads it and says so: "reloaded", never "trained", and the checkpoints stay the other
process's, untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from spt_theory import train as train_cli
from spt_theory.util import locks

pytestmark = pytest.mark.slow

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "32", "--n-test", "16", "--d-model", "16",
        "--heads", "2", "--batch-size", "8", "--mode", "scratch", "--epochs", "2", "--no-progress", "--threads", "1"]

HOLDER = """
import os, sys, time
from pathlib import Path
from spt_theory.util.locks import directory_lock
stage, finished, waiting = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
with directory_lock(stage, wait_message=False):
    print("locked", flush=True)
    deadline = time.monotonic() + 120
    while not waiting.exists():  # until the other process waits for this lock (it says so in this file)
        if time.monotonic() > deadline:
            sys.exit("the other process never waited for the lock")
        time.sleep(0.01)
    os.rename(finished, stage)  # the stage, finished by this process
"""


class _SaysItWaits(locks.FileLock):
    """The lock of :func:`spt_theory.util.locks.directory_lock`, which touches ``marker`` when it
    starts a blocking wait (filelock retries a non-blocking lock, so no kernel table shows a waiter)."""

    marker: Path

    def acquire(self, timeout=None, *args, **kwargs):
        if timeout != 0:
            self.marker.touch()
        return super().acquire(timeout, *args, **kwargs)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_train_that_waited_and_found_the_stage_finished_says_reloaded(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    args = [*WALK, "--cache-dir", str(cache)]
    assert train_cli.main(args) == 0
    assert "scratch run trained" in capsys.readouterr().out
    (stage,) = [p for p in cache.iterdir() if p.is_dir()]
    finished = tmp_path / "finished"
    os.rename(stage, finished)  # the stage is not there when the second run starts: another process has it
    before = _digests(finished)
    waiting = tmp_path / "waiting"
    monkeypatch.setattr(_SaysItWaits, "marker", waiting, raising=False)
    monkeypatch.setattr(locks, "FileLock", _SaysItWaits)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(stage), str(finished), str(waiting)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert train_cli.main(args) == 0
    finally:
        _, holder_err = holder.communicate(timeout=180)
    captured = capsys.readouterr()
    assert holder.returncode == 0, holder_err
    assert waiting.exists()
    assert f"waiting for another process training in {stage}" in captured.err, captured.err
    assert f"{stage}: finished by the process this one waited for: reloaded, not trained again" in captured.err
    assert "scratch run reloaded" in captured.out and " trained" not in captured.out, captured.out
    assert f"{stage}  reloaded" in captured.out, captured.out
    assert {name: digest for name, digest in _digests(stage).items() if name.endswith(".pt")} == \
        {name: digest for name, digest in before.items() if name.endswith(".pt")}

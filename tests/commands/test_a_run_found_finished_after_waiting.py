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

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "32", "--n-test", "16", "--d-model", "16",
        "--heads", "2", "--batch-size", "8", "--mode", "scratch", "--epochs", "2", "--no-progress", "--threads", "1"]

HOLDER = """
import os, sys, time
from pathlib import Path
from spt_theory.util.locks import directory_lock
stage, finished = Path(sys.argv[1]), Path(sys.argv[2])
with directory_lock(stage, wait_message=False):
    print("locked", flush=True)
    inode = os.stat(stage.parent / f".{stage.name}.lock").st_ino
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
            "->" in line and line.split()[-3].endswith(f":{inode}") for line in open("/proc/locks")):
        time.sleep(0.01)  # until the other process waits for this lock
    os.rename(finished, stage)  # the stage, finished by this process
"""


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs /proc/locks to see the second process wait")
def test_a_train_that_waited_and_found_the_stage_finished_says_reloaded(tmp_path, capsys):
    cache = tmp_path / "cache"
    args = [*WALK, "--cache-dir", str(cache)]
    assert train_cli.main(args) == 0
    assert "scratch run trained" in capsys.readouterr().out
    (stage,) = [p for p in cache.iterdir() if p.is_dir()]
    finished = tmp_path / "finished"
    os.rename(stage, finished)  # the stage is not there when the second run starts: another process has it
    before = _digests(finished)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(stage), str(finished)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert train_cli.main(args) == 0
    finally:
        holder.wait(timeout=180)
    captured = capsys.readouterr()
    assert holder.returncode == 0
    assert f"waiting for another process training in {stage}" in captured.err, captured.err
    assert f"{stage}: finished by the process this one waited for: reloaded, not trained again" in captured.err
    assert "scratch run reloaded" in captured.out and " trained" not in captured.out, captured.out
    assert f"{stage}  reloaded" in captured.out, captured.out
    assert {name: digest for name, digest in _digests(stage).items() if name.endswith(".pt")} == \
        {name: digest for name, digest in before.items() if name.endswith(".pt")}

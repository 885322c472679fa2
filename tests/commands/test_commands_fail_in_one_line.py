"""Reliability, round 3 (issue 44): the last places a command said more than one line.

- SIGINT while a command imports torch (its first seconds): exit 130, one line, no traceback;
- the GPU script run with a Python that lacks torch: one line naming ``PYTHON=``;
- a checkpoint torch cannot load: one line, no torch warning beside it;
- the generators' interrupt line speaks of generating, not of training.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ENV, REPO


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# ------------------------------------------------------------------------------ SIGINT while importing

def _loading_torch(pid: int) -> bool:
    """True once the process has mapped torch's shared library (its import is under way)."""
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc to see the import begin")
@pytest.mark.parametrize("spelling", ["python -m", "spt"])
def test_sigint_while_verify_imports_is_one_line_and_130(spelling, tmp_path):
    """The signal lands while torch loads (seen in /proc/PID/maps), long before verify's main."""
    args = (["-m", "spt_theory.verify"] if spelling == "python -m" else
            ["-c", "import sys; from spt_theory.cli import main; sys.exit(main(sys.argv[1:]))", "verify"])
    process = subprocess.Popen([sys.executable, *args, "--only", "T1", "--cache-dir", str(tmp_path / "cache"),
                                "--no-progress"], env=ENV, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _loading_torch(process.pid) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    assert process.poll() is None, "verify ended before torch loaded"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (process.returncode, err)
    assert "Traceback" not in err and len(_lines(err)) == 1 and "interrupted by SIGINT" in err, err
    assert out == "" and not (tmp_path / "cache").exists()


# ------------------------------------------------------------------------------ the GPU script without torch

@pytest.mark.slow
def test_the_gpu_script_with_a_python_without_torch_says_one_line_naming_python(tmp_path):
    """A real interpreter without its site-packages (``-S``: no torch) as $PYTHON."""
    bare = tmp_path / "python-without-torch"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    bare.chmod(0o755)
    assert subprocess.run([str(bare), "-c", "import torch"], capture_output=True).returncode != 0
    done = subprocess.run(["bash", str(REPO / "scripts/lra_gpu_confirm.sh"), "--dry-run"], capture_output=True,
                          text=True, env={**ENV, "PYTHON": str(bare), "OUT": ""}, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done
    (line,) = _lines(done.stderr)
    assert line.startswith("error: ") and "PYTHON=" in line and str(bare) in line and "torch" in line, line
    assert list(tmp_path.iterdir()) == [bare]


# ------------------------------------------------------------------------------ a checkpoint torch warns about

def _foreign_pickle(path: Path) -> Path:
    """A plain pickle (protocol 4): torch warns about its protocol, then refuses it."""
    import pickle

    path.write_bytes(pickle.dumps({"model": {}, "epoch": 1}, protocol=4))
    return path


def test_loading_a_foreign_checkpoint_raises_one_error_and_no_warning(tmp_path):
    import warnings

    from spt_theory.training.cache import load_checkpoint
    from spt_theory.util.files import InputError

    path = _foreign_pickle(tmp_path / "epoch_1.pt")
    with warnings.catch_warnings(record=True) as caught, pytest.raises(InputError, match="not a loadable"):
        warnings.simplefilter("always")
        load_checkpoint(path)
    assert [str(w.message) for w in caught] == []


@pytest.mark.slow
def test_train_with_a_foreign_checkpoint_in_its_cache_says_one_line(tmp_path, capsys):
    from spt_theory import train as train_cli

    args = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "16", "--n-test", "8", "--d-model", "16",
            "--heads", "2", "--batch-size", "8", "--mode", "scratch", "--epochs", "1", "--no-progress", "--threads",
            "1", "--cache-dir", str(tmp_path / "cache")]
    assert train_cli.main(args) == 0
    capsys.readouterr()
    (stage,) = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    path = _foreign_pickle(stage / "epoch_1.pt")
    done = subprocess.run([sys.executable, "-m", "spt_theory.train", *args], capture_output=True, text=True,
                          env=ENV, cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done
    (line,) = _lines(done.stderr)
    assert line.startswith(f"error: {path}: not a loadable spt-theory checkpoint"), done.stderr

"""SIGINT and SIGTERM sent to every command line as a real process while it works (issue 28).

Each command stops with exit status 130 (SIGINT) or 143 (SIGTERM) and one ``interrupted`` line on
stderr, no traceback; what it wrote is whole (every checkpoint loads, every JSON parses, every PNG
decodes, no temporary file is left), and an interrupted training run resumes on the rerun to the
result of an uninterrupted one.  The processes run at once (one fixture), each signalled as soon as
its work has begun: a checkpoint or a stage lock in its cache, a first image, a progress bar.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ENV, REPO, _files, _listops, _timeless
from PIL import Image

from spt_theory import train as train_cli
from spt_theory.training.cache import load_checkpoint
from spt_theory.util.interrupts import GENERATING, TRAINING, interrupted_line

pytestmark = pytest.mark.slow

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "32", "--n-test", "16", "--d-model", "16",
        "--heads", "2", "--batch-size", "8", "--mode", "scratch", "--epochs", "30", "--no-progress"]


@dataclass
class Interrupted:
    """A command signalled while it worked: its status, its stderr and the folder it wrote into."""

    returncode: int
    stderr: str
    folder: Path
    signum: int


def _anything(folder: Path, pattern: str) -> Callable[[], bool]:
    return lambda: any(folder.glob(pattern))


def _commands(root: Path) -> dict[str, tuple[list[str], int, Callable[[], bool]]]:
    """name: (python arguments, signal, when the work has begun)."""
    data = root / "data"
    _listops(data)
    cache = {name: root / name / "cache" for name in ("train", "verify", "figures", "paper_runs")}
    return {
        "train": (["-m", "spt_theory.train", *WALK, "--cache-dir", str(cache["train"]),
                   "--json", str(root / "train/summary.json")],
                  signal.SIGINT, _anything(cache["train"], "*/epoch_*.pt")),
        "verify": (["-m", "spt_theory.verify", "--only", "E2", "--cache-dir", str(cache["verify"]), "--no-progress",
                    "--threads", "1", "--json", str(root / "verify/report.json")],
                   signal.SIGINT, _anything(cache["verify"], ".*.lock")),
        "figures": (["-m", "spt_theory.figures", "--only", "training_curves", "--train", "--seeds", "0", "--cache-dir",
                     str(cache["figures"]), "--out", str(root / "figures/out"), "--threads", "1", "--no-progress"],
                    signal.SIGTERM, _anything(cache["figures"], ".*.lock")),
        "paper_runs": (["-m", "spt_theory.walk.paper_runs", "--only", "E10", "--seeds", "0", "--cache-dir",
                        str(cache["paper_runs"]), "--threads", "1", "--no-progress"],
                       signal.SIGINT, _anything(cache["paper_runs"], ".*.lock")),
        "lra": (["-m", "spt_theory.lra", "scratch", "--task", "listops", "--tiny", "--finetune-epochs", "1000",
                 "--max-steps", "100000", "--data-dir", str(data), "--out", str(root / "lra"), "--no-progress"],
                signal.SIGTERM, _anything(root / "lra", "cache/*/epoch_*.pt")),
        "listops": (["-m", "synthetic.listops", "--out", str(root / "listops/out"), "--train", "1000000", "--val",
                     "0", "--test", "0", "--min-len", "5", "--max-len", "60"],
                    signal.SIGINT, lambda: (root / "listops/stderr").stat().st_size > 0),  # its progress bar
        "pathfinder": (["-m", "synthetic.pathfinder", "--out", str(root / "pathfinder"), "--n", "100000",
                        "--per-folder", "20"],
                       signal.SIGTERM, _anything(root / "pathfinder", "curv_contour_length_14/imgs/0/*.png")),
    }


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> dict[str, Interrupted]:
    root = tmp_path_factory.mktemp("interrupts")
    commands = _commands(root)
    running = {}
    for name, (args, _, _) in commands.items():
        (root / name).mkdir(exist_ok=True)
        stderr = (root / name / "stderr").open("w")
        running[name] = subprocess.Popen([sys.executable, *args], cwd=REPO, env=ENV, text=True,
                                         stdout=subprocess.DEVNULL, stderr=stderr)
    waiting, deadline = dict(running), time.monotonic() + 240
    while waiting:
        for name, process in list(waiting.items()):
            assert process.poll() is None, f"{name} ended before its signal: {(root / name / 'stderr').read_text()}"
            if commands[name][2]():
                process.send_signal(commands[name][1])
                del waiting[name]
        assert time.monotonic() < deadline, f"never began: {sorted(waiting)}"
        time.sleep(0.005)
    return {name: Interrupted(process.wait(timeout=120), (root / name / "stderr").read_text(), root / name,
                              commands[name][1]) for name, process in running.items()}


def _whole(folder: Path) -> list[Path]:
    """Every file under ``folder``, each checked whole: checkpoints load, JSON parses, PNGs decode."""
    files = _files(folder)
    assert not [p for p in files if p.name.endswith(".tmp")], files
    for path in files:
        if path.suffix == ".pt":
            load_checkpoint(path)
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".png":
            with Image.open(path) as image:
                image.load()
    return files


@pytest.mark.parametrize("name", ["train", "verify", "figures", "paper_runs", "lra", "listops", "pathfinder"])
def test_a_signal_stops_the_command_with_one_line_and_whole_files(name, interrupted):
    done = interrupted[name]
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[done.signum], done.stderr
    lines = done.stderr.rstrip("\n").split("\n")  # (progress bars redraw themselves with \r)
    expected = interrupted_line(done.signum, GENERATING if name in ("listops", "pathfinder") else TRAINING)
    assert lines[-1] == expected and lines.count(lines[-1]) == 1, done.stderr
    _whole(done.folder)


def test_interrupted_generators_leave_nothing_half_written(interrupted):
    assert _files(interrupted["listops"].folder / "out") == []  # stopped while drawing trees
    root = interrupted["pathfinder"].folder / "curv_contour_length_14"
    images = {p.relative_to(root).as_posix() for p in root.glob("imgs/*/*.png")}
    assert images  # stopped while writing images: metadata lists none that is missing
    for metadata in root.glob("metadata/*.npy"):
        for line in metadata.read_text().splitlines():
            folder, name = line.split()[:2]
            assert f"{folder}/{name}" in images, (metadata, line)


def test_interrupted_training_resumes_to_the_uninterrupted_result(interrupted, tmp_path, capsys, one_torch_thread):
    folder = interrupted["train"].folder
    assert not (folder / "summary.json").exists()
    last = max(folder.glob("cache/*/epoch_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    done = load_checkpoint(last)["history"]  # with the interrupted process's own timings
    for out in (folder, tmp_path):  # the rerun, and an uninterrupted run
        assert train_cli.main([*WALK, "--cache-dir", str(out / "cache"), "--json", str(out / "summary.json")]) == 0
    capsys.readouterr()
    resumed = json.loads((folder / "summary.json").read_text())
    assert resumed["history"][0][:len(done)] == done  # those epochs were not trained again
    assert _timeless(resumed) == _timeless(json.loads((tmp_path / "summary.json").read_text()))

"""What several test files share: the repository root, the one-thread environment of the command
lines run as subprocesses, the checks of a command's one ``error:`` line and of the files it left,
and tiny data sets in the LRA release layout.  Test files import it (``from helpers import ...``),
never each other: ``tests/`` is on the import path (pyproject's ``pythonpath``; without pyproject,
pytest puts the folder of ``tests/conftest.py`` there itself)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
from PIL import Image

from spt_theory import train as train_cli
from spt_theory.walk.experiments import stage_key
from synthetic import listops, pathfinder

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Subprocesses import this checkout's code and use one thread: on a loaded machine torch's thread
pool makes tiny runs many times slower, and the bitwise comparisons are between one-thread runs."""


def full_git_history() -> bool:
    """Whether the checkout under test is a git clone with its whole history (not shallow)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return False
    shallow = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True)
    return shallow.returncode == 0 and shallow.stdout.strip() == "false"


def _one_error_line(stderr: str, *names: str) -> str:
    """The single ``error:`` line of ``stderr``; it names every one of ``names``."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for name in names:
        assert str(name) in lines[0], (name, lines[0])
    return lines[0]


def _files(folder: Path) -> list[Path]:
    """The files under ``folder`` but the stage locks' ``.<key>.lock`` (spt_theory.util.locks: a
    lock file stays in place, empty, so that every waiter locks the same file)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not (p.name.startswith(".") and p.suffix == ".lock")
                  ) if folder.exists() else []


def _stage_dirs(cache: Path, argv: list[str]) -> list[Path]:
    """The cache folder of each stage of the run ``python -m spt_theory.train *argv`` would do."""
    spec = train_cli.build_spec(train_cli.parse_args(argv))
    return [cache / stage_key(spec, k) for k in range(len(spec.stages))]


def _timeless(summary: dict) -> list[list[dict]]:
    """A ``train`` summary's history without the seconds, which differ from run to run."""
    return [[{k: v for k, v in e.items() if k != "seconds"} for e in stage] for stage in summary["history"]]


# LRA data on tiny files in the release layout (reader API cases: tests/lra/test_lra_readers.py).

def _listops(root: Path, train: str = "", val: str | None = None) -> Path:
    """ListOps splits of 12 good rows under ``root/listops-1000``; ``train`` is appended to the
    training split, ``val`` replaces the validation split."""
    folder = root / "listops-1000"
    folder.mkdir(parents=True, exist_ok=True)
    good = "".join(f"( [MAX {i % 10} 3 ] )\t{max(i % 10, 3)}\n" for i in range(12))
    for split, body in (("train", good + train), ("val", good if val is None else val), ("test", good)):
        (folder / f"basic_{split}.tsv").write_text("Source\tTarget\n" + body if body else "")
    return folder


def _pathfinder(root: Path, n: int = 20, truncated: int | None = None) -> Path:
    """A Pathfinder-32 folder of ``n`` images and their metadata; image ``truncated`` cut short."""
    base = root / "pathfinder32/curv_contour_length_14"
    (base / "imgs/0").mkdir(parents=True)
    (base / "metadata").mkdir()
    for i in range(n):
        Image.fromarray(np.full((32, 32), 10 * i, np.uint8)).save(base / f"imgs/0/sample_{i}.png")
    (base / "metadata/0.npy").write_text("".join(f"imgs/0 sample_{i}.png {i} {i % 2} 14\n" for i in range(n)))
    if truncated is not None:
        png = base / f"imgs/0/sample_{truncated}.png"
        png.write_bytes(png.read_bytes()[:40])
    return base


def _write_lra(root: Path) -> Path:
    """Tiny copies of the five tasks in the release layout under ``root``."""
    rng = np.random.default_rng(0)
    for split, rows in listops.generate_splits({"train": 24, "val": 8, "test": 8}, 5, 40, seed=0).items():
        listops.write_split(root / f"listops-1000/basic_{split}.tsv", rows)
    words = ["good", "bad", "film", "plot", "great", "awful", "the", "a"]
    for split in ("train", "test"):
        for polarity in ("neg", "pos"):
            folder = root / f"aclImdb/{split}/{polarity}"
            folder.mkdir(parents=True)
            for i in range(10):
                (folder / f"{i}_7.txt").write_text(" ".join(rng.choice(words, size=rng.integers(3, 12))))
    for split, n in (("train", 24), ("eval", 8), ("test", 8)):
        lines = [f"{i % 2}\tid{i}a\tid{i}b\t{' '.join(rng.choice(words, 4))}\t{' '.join(rng.choice(words, 6))}\n"
                 for i in range(n)]
        (root / f"new_aan_pairs.{split}.tsv").write_text("".join(lines))
    cifar = root / "cifar-10-batches-py"
    cifar.mkdir()
    for b, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        batch = {"data": rng.integers(0, 256, size=(8, 3072), dtype=np.uint8),
                 "labels": [(b + r) % 10 for r in range(8)]}
        (cifar / name).write_bytes(pickle.dumps(batch, protocol=4))
    pathfinder.write_dataset(root / "pathfinder32", 30, seed=0)
    return root


def _stub_train_stage(monkeypatch, record) -> None:
    """``train_stage`` replaced by a stub that calls ``record(model, cache)`` and writes a 1-epoch
    checkpoint of the model as it stands (what a finetune stage transplants from), so a recipe
    runs through its stages without training."""
    import torch

    from spt_theory.training import loop as training_loop

    def stub(model, task, stage, seed, cache, **kwargs):
        record(model, cache)
        cache.dir.mkdir(parents=True, exist_ok=True)
        torch.save({"format": 2, "model": model.state_dict(), "optimizer": {}, "epoch": 1, "step_in_epoch": 0,
                    "loss_sum": 0.0, "history": []}, cache.checkpoint(1))
        return [{"epoch": 1, "loss": 1.0, "seconds": 0.0, "val_loss": 1.0, "val_accuracy": 0.5, "test_accuracy": 0.5}]

    monkeypatch.setattr(training_loop, "train_stage", stub)

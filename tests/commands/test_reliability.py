"""Reliability: determinism, kill and resume, atomic writes, bad input, unsafe checkpoints, divergence.

The command lines run as real subprocesses where the contract is about the process (exit code,
no traceback, surviving SIGKILL); the other bad-input cases call ``main([...])`` in-process.
Subprocesses and in-process training use one thread: on a loaded machine torch's thread pool makes
tiny runs many times slower, and the bitwise comparisons below are between one-thread runs.

Bad-input cases of the LRA readers' API, and the CIFAR reader refusing pickled code, are in
``tests/lra/test_lra_readers.py``; here the LRA reader cases go through
``python -m spt_theory.lra``.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ENV, REPO, _files, _listops, _one_error_line, _pathfinder, _stage_dirs, _timeless

from spt_theory import train as train_cli
from spt_theory import verify as verify_cli
from spt_theory.lra import __main__ as lra_cli
from spt_theory.training.cache import StageCache, StageState, load_checkpoint, save_checkpoint
from spt_theory.training.loop import DatasetTask, TrainingDiverged, stage_loss, train_stage
from spt_theory.training.optim import make_optimizer
from spt_theory.training.recipes import Budget
from spt_theory.util.files import InputError, write_json
from spt_theory.walk.experiments import initial_model, recipe, run

KILL_SEED = int(os.environ.get("SPT_KILL_SEED", "0"))
"""Seeds where the kill tests strike (set SPT_KILL_SEED to explore other kill points)."""

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-test", "32", "--d-model", "16",
        "--heads", "2", "--no-progress"]
# 32 steps per epoch, 5 epochs in two stages: long enough for a kill to land mid-run.
LONG = [*WALK, "--n-train", "256", "--batch-size", "8", "--mode", "spt", "--epochs", "3",
        "--finetune-epochs", "2"]


# ---------------------------------------------------------------------------------- helpers

def _start(module: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen, timeout: float = 120) -> subprocess.CompletedProcess:
    out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _checkpoints(stage_dirs: list[Path]) -> dict[str, dict]:
    """Every epoch checkpoint of the run, by stage and file name."""
    return {f"{k}/{p.name}": load_checkpoint(p) for k, d in enumerate(stage_dirs)
            for p in sorted(d.glob("epoch_*.pt"))}


def _same_tensors(a, b) -> bool:
    """Nested dicts / lists of tensors and numbers, compared bitwise."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_tensors(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_tensors(x, y) for x, y in zip(a, b))
    return a == b


def _weights_and_optimizer(ckpt: dict) -> dict:
    return {"model": ckpt["model"], "optimizer": ckpt["optimizer"]}


@dataclass
class CliRun:
    """One finished command line: its result, its folder (cache, JSON, data) and run arguments."""

    result: subprocess.CompletedProcess
    folder: Path
    argv: list[str]


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory) -> dict[str, CliRun]:
    """The command lines that depend on nothing else here, started at once as real processes.

    ``reference``: the long walk run, seed 0.  Then three that must fail with exit 2: a malicious
    checkpoint in the cache, a diverging learning rate, a truncated PNG in the LRA Pathfinder data.
    """
    root = tmp_path_factory.mktemp("cli")
    folders = {name: root / name for name in ("reference", "malicious", "diverged", "lra_png")}
    argv = {"reference": [*LONG, "--seed", "0"]}
    argv["malicious"], (stage_dir,) = _cached_run(folders["malicious"], "--epochs", "1")
    _malicious_checkpoint(stage_dir / "epoch_1.pt", folders["malicious"] / "side_effect_happened")
    argv["diverged"], _ = _cached_run(folders["diverged"], "--epochs", "3", "--batch-size", "96", "--lr", "1e30")
    started = {name: _start("spt_theory.train", *args, "--cache-dir", str(folders[name] / "cache"),
                            "--json", str(folders[name] / "summary.json"))
               for name, args in argv.items()}
    _pathfinder(folders["lra_png"] / "data", truncated=3)
    argv["lra_png"] = ["scratch", "--task", "pathfinder", "--data-dir", str(folders["lra_png"] / "data"),
                       "--tiny", "--out", str(folders["lra_png"] / "out"), "--no-progress"]
    started["lra_png"] = _start("spt_theory.lra", *argv["lra_png"])
    return {name: CliRun(_finish(process), folders[name], argv[name]) for name, process in started.items()}


# ------------------------------------------------------------------ 1. determinism (CLI, bitwise)

def _train_in_process(argv: list[str], folder: Path, capsys) -> None:
    """``python -m spt_theory.train *argv`` in this process (as a rerun or a second run would be)."""
    assert train_cli.main([*argv, "--cache-dir", str(folder / "cache"), "--json", str(folder / "summary.json")]) == 0
    assert "stage 1 supervised epoch" in capsys.readouterr().out


@pytest.mark.slow
def test_same_seed_gives_identical_metrics_and_weights_different_seed_differs(cli_runs, tmp_path, capsys,
                                                                              one_torch_thread):
    """Run ``a`` in its own process; ``b`` (same seed) and ``c`` (seed 1) here, after other tests."""
    reference = cli_runs["reference"]
    assert reference.result.returncode == 0, reference.result.stderr
    runs = {"a": (reference.folder, reference.argv), "b": (tmp_path / "b", reference.argv),
            "c": (tmp_path / "c", [*LONG, "--seed", "1"])}
    _train_in_process(runs["b"][1], runs["b"][0], capsys)
    _train_in_process(runs["c"][1], runs["c"][0], capsys)
    summaries, checkpoints = {}, {}
    for name, (folder, argv) in runs.items():
        summaries[name] = json.loads((folder / "summary.json").read_text())
        checkpoints[name] = _checkpoints(_stage_dirs(folder / "cache", argv))
    assert len(checkpoints["a"]) == 5  # 3 SPT + 2 supervised epochs
    assert _timeless(summaries["a"]) == _timeless(summaries["b"])
    assert checkpoints["a"].keys() == checkpoints["b"].keys()
    for key in checkpoints["a"]:
        assert _same_tensors(_weights_and_optimizer(checkpoints["a"][key]),
                             _weights_and_optimizer(checkpoints["b"][key])), key
    assert _timeless(summaries["a"]) != _timeless(summaries["c"])
    final = sorted(checkpoints["a"])[-1]
    assert not _same_tensors(checkpoints["a"][final]["model"], checkpoints["c"][final]["model"])


# ------------------------------------------------------------------------ 2. kill and resume

@pytest.mark.slow
def test_cli_killed_at_a_random_step_resumes_to_the_uninterrupted_result(cli_runs, tmp_path, capsys, one_torch_thread):
    folder, argv = cli_runs["reference"].folder, cli_runs["reference"].argv
    assert cli_runs["reference"].result.returncode == 0, cli_runs["reference"].result.stderr
    stages = _stage_dirs(tmp_path / "cache", argv)
    rng = random.Random(KILL_SEED)
    # Strike after an SPT epoch checkpoint that leaves at least three epochs, plus a random delay:
    # the kill lands anywhere from SPT epoch 2 to early finetuning (kills inside a write: below).
    trigger = stages[0] / f"epoch_{rng.choice([1, 2])}.pt"
    delay = rng.uniform(0.0, 0.1)
    process = _start("spt_theory.train", *argv, "--cache-dir", str(tmp_path / "cache"),
                     "--json", str(tmp_path / "summary.json"))
    deadline = time.monotonic() + 120
    while not trigger.exists():
        assert process.poll() is None, f"run ended before {trigger}: {process.communicate()[1]}"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    time.sleep(delay)
    process.kill()
    killed = _finish(process)
    where = f"trigger {trigger.parent.name}/{trigger.name} + {delay:.3f} s"
    assert killed.returncode == -signal.SIGKILL, where
    assert not (stages[1] / "epoch_2.pt").exists() and not (tmp_path / "summary.json").exists(), where
    for path in _files(tmp_path / "cache"):  # a kill leaves no half-written checkpoint or JSON
        if path.suffix == ".pt" and not path.name.startswith("."):
            load_checkpoint(path)
        elif path.suffix == ".json":
            json.loads(path.read_text())

    _train_in_process(argv, tmp_path, capsys)  # the rerun: only the files on disk carry over
    reference = json.loads((folder / "summary.json").read_text())
    assert _timeless(json.loads((tmp_path / "summary.json").read_text())) == _timeless(reference), where
    expected, got = _checkpoints(_stage_dirs(folder / "cache", argv)), _checkpoints(stages)
    assert expected.keys() == got.keys(), where
    for key in expected:
        assert _same_tensors(_weights_and_optimizer(expected[key]), _weights_and_optimizer(got[key])), (key, where)
    assert not any(d.joinpath("last.pt").exists() for d in stages)


_TRAIN_WITH_STEP_CHECKPOINTS = """
import sys
from pathlib import Path
import torch
torch.set_num_threads(1)
from spt_theory.training.cache import StageCache
from spt_theory.training.loop import DatasetTask, train_stage
from spt_theory.training.recipes import Budget
from spt_theory.walk.experiments import WalkData, initial_model, recipe
walk = WalkData(vocab=5, length=12, p=0.9, n_train=192, n_test=32)
spec = recipe("scratch", walk, 0, Budget(scratch_epochs=2, batch_size=4), d_model=16, n_heads=2, d_ff=32)
train_stage(initial_model(spec), DatasetTask(walk.build()), spec.stages[0], 0, StageCache.folder(Path(sys.argv[1])),
            checkpoint_every=1, progress=False)
"""


@pytest.mark.slow
def test_kill_during_step_checkpoints_resumes_bit_identically(tmp_path, one_torch_thread):
    """``last.pt`` rewritten after every step: the kill usually lands inside a checkpoint write."""
    from spt_theory.walk.experiments import WalkData
    walk = WalkData(vocab=5, length=12, p=0.9, n_train=192, n_test=32)  # 48 steps per epoch
    spec = recipe("scratch", walk, 0, Budget(scratch_epochs=2, batch_size=4), d_model=16, n_heads=2, d_ff=32)
    data, stage = walk.build(), spec.stages[0]
    killed_dir = tmp_path / "killed"
    rng = random.Random(KILL_SEED + 1)
    process = subprocess.Popen([sys.executable, "-c", _TRAIN_WITH_STEP_CHECKPOINTS, str(killed_dir)],
                               cwd=REPO, env=ENV, text=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (killed_dir / "last.pt").exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.1))
    process.kill()
    assert process.wait() == -signal.SIGKILL
    assert not (killed_dir / "epoch_2.pt").exists()
    resume_from = StageCache.folder(killed_dir).latest(stage.epochs)  # loads last.pt: it is whole
    assert resume_from is not None
    position = load_checkpoint(resume_from)
    done_before_kill = position["epoch"] * 48 + position["step_in_epoch"]
    assert 0 < done_before_kill < 96

    reference = initial_model(spec)
    expected = train_stage(reference, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / "reference"),
                           progress=False)
    resumed = initial_model(spec)  # what a rerun does: fresh init, then the checkpoint
    got = train_stage(resumed, DatasetTask(data), stage, 0, StageCache.folder(killed_dir), progress=False)
    assert [{k: v for k, v in e.items() if k != "seconds"} for e in got] == \
           [{k: v for k, v in e.items() if k != "seconds"} for e in expected]
    assert _same_tensors(reference.state_dict(), resumed.state_dict())


_DIE_INSIDE_ATOMIC_WRITE = """
import os, signal, sys
from pathlib import Path
from spt_theory.util.files import atomic_write
new = Path(sys.argv[2]).read_bytes()
def write(tmp):
    with open(tmp, "wb") as file:
        file.write(new[: len(new) // 2])
        file.flush()
        os.fsync(file.fileno())
    os.kill(os.getpid(), signal.SIGKILL)
atomic_write(sys.argv[1], write)
"""


def _small_checkpoint(path: Path, tiny_walk, overrides: dict, seed: int) -> Path:
    spec = recipe("scratch", tiny_walk, seed, Budget(), **overrides)
    model = initial_model(spec)
    save_checkpoint(path, model, make_optimizer(model, spec.stages[0].lr), StageState(1, 0, 0.0, [{"epoch": 1}]),
                    {"seed": seed})
    return path


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["checkpoint", "json"])
def test_kill_inside_atomic_write_keeps_the_previous_file(kind, tmp_path, tiny_walk, tiny_model_overrides):
    target = tmp_path / "out" / ("epoch_1.pt" if kind == "checkpoint" else "run.json")
    new = tmp_path / "new"
    if kind == "checkpoint":
        _small_checkpoint(target, tiny_walk, tiny_model_overrides, seed=0)
        _small_checkpoint(new, tiny_walk, tiny_model_overrides, seed=1)
    else:
        write_json(target, {"history": [1, 2, 3]})
        new.write_text(json.dumps({"history": list(range(1000))}))
    old_bytes = target.read_bytes()
    died = subprocess.run([sys.executable, "-c", _DIE_INSIDE_ATOMIC_WRITE, str(target), str(new)],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert target.read_bytes() == old_bytes  # the old file, whole
    strays = [p for p in target.parent.iterdir() if p != target]
    assert len(strays) == 1 and strays[0].name.startswith(f".{target.name}.")  # the half-written temp
    assert strays[0].stat().st_size == new.stat().st_size // 2
    if kind == "checkpoint":
        assert load_checkpoint(target)["meta"] == {"seed": 0}
        assert StageCache.folder(target.parent).latest(5) == target  # the stray temp is never picked
    else:
        assert json.loads(target.read_text()) == {"history": [1, 2, 3]}


def test_exception_inside_checkpoint_write_keeps_old_file_and_removes_temp(tmp_path, tiny_walk,
                                                                           tiny_model_overrides, monkeypatch):
    target = _small_checkpoint(tmp_path / "last.pt", tiny_walk, tiny_model_overrides, seed=0)
    old_bytes = target.read_bytes()

    def dies_halfway(obj, file):  # checkpoints are saved through an open file (see save_checkpoint)
        file.write(old_bytes[: len(old_bytes) // 3])
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        _small_checkpoint(target, tiny_walk, tiny_model_overrides, seed=1)
    assert target.read_bytes() == old_bytes and list(tmp_path.iterdir()) == [target]
    monkeypatch.undo()
    assert load_checkpoint(target)["meta"] == {"seed": 0}


# ----------------------------------------------------------------------------- 3. bad input

def _train_main(argv, capsys) -> str:
    """Run the walk CLI in-process on a failing command line: exit 2, one stderr line, no stdout."""
    assert train_cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize("args, names", [
    (["--mask-ratio", "1.0"], ["mask_ratio", "[0, 1)", "1.0"]),
    (["--mask-ratio", "-0.1"], ["mask_ratio", "-0.1"]),
    (["--d-model", "10", "--heads", "3"], ["d_model (10)", "n_heads (3)"]),
    (["--heads", "0"], ["n_heads"]),
    (["--d-model", "-1"], ["model config", "d_model and n_heads must be positive"]),
    (["--epochs", "-1"], ["epochs", "-1"]),
    (["--finetune-epochs", "-2"], ["epochs", "-2"]),
    (["--task", "listops"], ["--task", "'listops'"]),
    (["--length", "1"], ["length", "1"]),
    (["--vocab", "1"], ["vocab", "1"]),
    (["--p", "1.5"], ["p must be in [0, 1]", "1.5"]),
    (["--batch-size", "0"], ["batch_size", "0"]),
    (["--lr", "nan"], ["lr", "nan"]),
])
def test_walk_cli_bad_config_one_line_exit_2_nothing_written(args, names, tmp_path, capsys):
    out = tmp_path / "summary.json"
    err = _train_main([*WALK, "--n-train", "96", "--epochs", "1", "--finetune-epochs", "1", *args,
                       "--cache-dir", str(tmp_path / "cache"), "--json", str(out)], capsys)
    _one_error_line(err, *names)
    assert _files(tmp_path) == []


@pytest.mark.parametrize("args, names", [
    (["--seed", "-1"], ["--seed", "non-negative", "'-1'"]),
    (["--data-seed", "-3"], ["--data-seed", "non-negative", "'-3'"]),
    (["--n-train", "0"], ["--n-train", ">= 1"]),
    (["--threads", "1.0"], ["--threads", "'1.0'"]),
])
def test_walk_cli_bad_numbers_are_refused_by_argparse_nothing_written(args, names, tmp_path, argparse_refusal):
    argparse_refusal(train_cli.main, [*WALK, "--epochs", "1", *args, "--cache-dir", str(tmp_path / "cache"),
                                      "--json", str(tmp_path / "summary.json")], *names)
    assert _files(tmp_path) == []


def _cached_run(tmp_path, *extra) -> tuple[list[str], list[Path]]:
    argv = [*WALK, "--n-train", "96", "--mode", "scratch", *extra]
    return argv, _stage_dirs(tmp_path / "cache", argv)


@pytest.mark.parametrize("content", ["garbage", "truncated", "tensor", "no_history"])
def test_corrupt_checkpoint_in_the_cache_is_named(content, tmp_path, capsys, tiny_walk, tiny_model_overrides):
    argv, (stage_dir,) = _cached_run(tmp_path, "--epochs", "1")
    path = stage_dir / "epoch_1.pt"
    stage_dir.mkdir(parents=True)
    if content == "garbage":
        path.write_bytes(b"PK\x03\x04 not a zip archive at all")
    elif content == "truncated":
        whole = _small_checkpoint(tmp_path / "whole.pt", tiny_walk, tiny_model_overrides, 0).read_bytes()
        (tmp_path / "whole.pt").unlink()
        path.write_bytes(whole[: len(whole) // 2])
    elif content == "tensor":
        torch.save(torch.zeros(3), path)
    else:
        torch.save({"model": {}, "optimizer": {}, "epoch": 1, "step_in_epoch": 0, "loss_sum": 0.0}, path)
    before = path.read_bytes()
    err = _train_main([*argv, "--cache-dir", str(tmp_path / "cache"), "--json", str(tmp_path / "s.json")], capsys)
    _one_error_line(err, path, "checkpoint")
    assert path.read_bytes() == before and _files(tmp_path) == [path]


def test_checkpoint_of_another_architecture_is_named(tmp_path, capsys, tiny_walk):
    """A cache folder whose checkpoint was written by a d_model 8 model, read by a d_model 16 run."""
    argv, (stage_dir,) = _cached_run(tmp_path, "--epochs", "2")
    path = _small_checkpoint(stage_dir / "epoch_1.pt", tiny_walk, dict(d_model=8, n_heads=2, d_ff=32), 0)
    before = path.read_bytes()
    err = _train_main([*argv, "--cache-dir", str(tmp_path / "cache")], capsys)
    _one_error_line(err, path, "another architecture", "(6, 8)", "(6, 16)")
    assert path.read_bytes() == before and _files(tmp_path) == [path]  # nothing trained, nothing written


def test_sequence_longer_than_the_positional_table(tmp_path, tiny_walk, tiny_model_overrides):
    spec = recipe("scratch", tiny_walk, 0, Budget(scratch_epochs=1), **tiny_model_overrides, max_len=8)
    with pytest.raises(InputError, match=r"x_train: sequence length 12 exceeds .* \(max_len 8\)"):
        run(spec, tmp_path / "cache", progress=False)
    assert _files(tmp_path) == []


@pytest.mark.slow
def test_lra_cli_truncated_png_exits_2_without_traceback_in_a_real_process(cli_runs):
    done = cli_runs["lra_png"].result
    assert done.returncode == 2, done.stderr
    _one_error_line(done.stderr, "sample_3.png", "unreadable PNG", "metadata/0.npy:4")
    assert done.stdout == ""
    folder = cli_runs["lra_png"].folder
    assert _files(folder) == _files(folder / "data")  # nothing besides the input data


def test_verify_unknown_claim_and_negative_seeds(capsys, tmp_path, argparse_refusal):
    assert verify_cli.main(["--only", "Z9", "--json", str(tmp_path / "report.json"), "--no-progress"]) == 2
    captured = capsys.readouterr()
    _one_error_line(captured.err, "--only", "'Z9'")
    assert captured.out == "" and _files(tmp_path) == []
    argparse_refusal(verify_cli.main, ["--seeds", "0", "-1", "--json", str(tmp_path / "report.json")],
                     "--seeds", "non-negative")
    assert _files(tmp_path) == []


# LRA command line on tiny files in the release layout (ListOps and Pathfinder: helpers.py; the reader
# API cases: tests/lra/test_lra_readers.py).

def _cifar(root: Path, bad_batch: str | None = None) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        width = 3000 if name == bad_batch else 3072
        batch = {"data": rng.integers(0, 256, size=(4, width), dtype=np.uint8), "labels": [0, 1, 2, 3]}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=4))
    return folder


def _lra_case(name: str, root: Path) -> tuple[list[str], list[str]]:
    """Write the data of one bad-input case; returns (extra CLI args, what the error names)."""
    lo = root / "listops-1000"
    if name == "wrong_column_count":
        _listops(root, train="[MAX 1 2 ]\t2\textra\n")
        return ["--task", "listops"], [f"{lo / 'basic_train.tsv'}:14", "expected 2 tab-separated columns"]
    if name == "non_integer_label":
        _listops(root, train="[MAX 1 2 ]\t2.5\n")
        return ["--task", "listops"], [f"{lo / 'basic_train.tsv'}:14", "label '2.5' is not an integer"]
    if name == "malformed_row":
        _listops(root, train="[MAX 1 [FOO 3 ] ]\t1\n")
        return ["--task", "listops"], [f"{lo / 'basic_train.tsv'}:14", "unknown token '[FOO'"]
    if name == "empty_file":
        _listops(root, val="")
        return ["--task", "listops"], [lo / "basic_val.tsv", "no examples"]
    if name == "retrieval_columns":
        root.mkdir(parents=True)
        for split in ("train", "eval", "test"):
            (root / f"new_aan_pairs.{split}.tsv").write_text("1\ta\tb\tq\tr\n" * 3 + "0\ta\tb\tq\n")
        return ["--task", "retrieval"], [f"{root / 'new_aan_pairs.train.tsv'}:4", "expected 5"]
    if name == "truncated_png":
        base = _pathfinder(root, truncated=7)
        return ["--task", "pathfinder"], [base / "imgs/0/sample_7.png", "unreadable PNG"]
    if name == "cifar_wrong_shape":
        folder = _cifar(root, bad_batch="data_batch_4")
        return ["--task", "image"], [folder / "data_batch_4", "field 'data'", "(4, 3000)"]
    if name == "missing_data_dir":
        return ["--task", "text"], ["missing", root / "aclImdb", "expected layout"]
    if name == "heads_not_dividing_d_model":
        _listops(root)
        return ["--task", "listops", "--set", "n_heads=3"], ["field d_model", "divisible by n_heads (3)"]
    if name == "mask_ratio_outside":
        _listops(root)
        return ["--task", "listops", "--set", "mask_ratio=1.0"], ["field mask_ratio", "[0, 1)"]
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["wrong_column_count", "non_integer_label", "malformed_row", "empty_file",
                                  "retrieval_columns", "truncated_png", "cifar_wrong_shape",
                                  "missing_data_dir", "heads_not_dividing_d_model", "mask_ratio_outside"])
def test_lra_cli_bad_input_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    root = tmp_path / "data"
    args, names = _lra_case(name, root)
    out = tmp_path / "out"
    assert lra_cli.main(["scratch", *args, "--data-dir", str(root), "--tiny", "--out", str(out),
                         "--no-progress"]) == 2
    captured = capsys.readouterr()
    _one_error_line(captured.err, *names)
    assert captured.out == "" and not out.exists()


# -------------------------------------------------------------------------------- 4. security

class _Payload:
    """Unpickles as a call to os.system that creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


def _malicious_checkpoint(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": {}, "optimizer": {}, "epoch": 1, "step_in_epoch": 0, "loss_sum": 0.0,
                "history": [{"epoch": 1, "note": _Payload(marker)}]}, path)
    return path


def test_load_checkpoint_refuses_pickled_code_and_never_runs_it(tmp_path):
    marker = tmp_path / "side_effect_happened"
    path = _malicious_checkpoint(tmp_path / "epoch_1.pt", marker)
    with pytest.raises(InputError) as error:
        load_checkpoint(path)
    assert str(path) in str(error.value) and "GLOBAL posix.system" in str(error.value)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # control: an unrestricted load runs the payload
    assert marker.exists()


@pytest.mark.slow
def test_cli_refuses_a_malicious_checkpoint_in_the_cache(cli_runs):
    run_ = cli_runs["malicious"]
    tmp_path, done = run_.folder, run_.result
    marker = tmp_path / "side_effect_happened"
    (path,) = [p for p in _files(tmp_path) if p.suffix == ".pt"]
    assert done.returncode == 2, done.stderr
    _one_error_line(done.stderr, path, "not a loadable spt-theory checkpoint", "GLOBAL posix.system")
    assert not marker.exists() and not (tmp_path / "summary.json").exists()


# ----------------------------------------------------------------------- 5. numerical faults

@pytest.mark.slow
def test_cli_divergence_names_the_step_and_keeps_the_last_good_checkpoint(cli_runs):
    """lr 1e30, one step per epoch: step 0 is finite, step 1 (epoch 2) is NaN; epoch_1.pt stays."""
    tmp_path, done = cli_runs["diverged"].folder, cli_runs["diverged"].result
    (stage_dir,) = _stage_dirs(tmp_path / "cache", cli_runs["diverged"].argv)
    assert done.returncode == 1, done.stderr  # divergence is a result (1), not bad input (2): as the LRA runner
    said, *rest = done.stderr.splitlines()  # the --json folder, checked and created before training
    assert said == f"created folder {tmp_path}"
    _one_error_line("\n".join(rest), "training diverged", "non-finite loss", "at step 1 (epoch 2)", stage_dir)
    assert sorted(p.name for p in stage_dir.iterdir()) == ["epoch_1.pt"]  # no run.json, no later epoch
    kept = load_checkpoint(stage_dir / "epoch_1.pt")
    assert kept["epoch"] == 1 and len(kept["history"]) == 1 and math.isfinite(kept["history"][0]["loss"])
    assert all(torch.isfinite(t).all() for t in kept["model"].values())
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("fault", [math.nan, math.inf])
def test_injected_non_finite_loss_stops_at_its_step_keeping_a_resumable_checkpoint(
        fault, tmp_path, tiny_walk, tiny_model_overrides, one_torch_thread):
    """96 examples, batch 16: 6 steps per epoch.  Step 9 (epoch 2) is poisoned; with a checkpoint
    every 2 steps the last good one holds 8 steps, bit-identical to a clean run cut there, and a
    rerun from it ends where an uninterrupted run ends."""
    spec = recipe("scratch", tiny_walk, 0, Budget(scratch_epochs=2, batch_size=16), **tiny_model_overrides)
    data, stage = tiny_walk.build(), spec.stages[0]
    calls = []

    class Poisoned(DatasetTask):
        def loss(self, model, stage, x, y, mask_generator):
            calls.append(1)
            loss = stage_loss(model, data, stage, x, y, mask_generator)
            return loss * fault if len(calls) == 10 else loss

    faulty = tmp_path / "faulty"
    with pytest.raises(TrainingDiverged) as error:
        train_stage(initial_model(spec), Poisoned(data), stage, 0, StageCache.folder(faulty), checkpoint_every=2,
                    progress=False)
    assert f"non-finite loss ({fault}) at step 9 (epoch 2)" in str(error.value) and str(faulty) in str(error.value)
    assert sorted(p.name for p in faulty.iterdir()) == ["epoch_1.pt", "last.pt"]
    kept = load_checkpoint(faulty / "last.pt")
    assert (kept["epoch"], kept["step_in_epoch"]) == (1, 2)

    clean = tmp_path / "clean"
    train_stage(initial_model(spec), DatasetTask(data), stage, 0, StageCache.folder(clean), stop_after_steps=8,
                progress=False)
    assert _same_tensors(_weights_and_optimizer(kept), _weights_and_optimizer(load_checkpoint(clean / "last.pt")))

    reference = initial_model(spec)
    expected = train_stage(reference, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / "reference"),
                           progress=False)
    resumed = initial_model(spec)
    got = train_stage(resumed, DatasetTask(data), stage, 0, StageCache.folder(faulty), progress=False)
    assert [e["loss"] for e in got] == [e["loss"] for e in expected]
    assert _same_tensors(reference.state_dict(), resumed.state_dict())

"""Issue 17: the ListOps generator's impossible windows, checkpoint retention, file modes, stale
temporary files, ListOps file format, CIFAR pickles from Python 3, probes without masked tokens,
``--threads``, two processes on one cache, disk trouble and checkpoint format versions."""

from __future__ import annotations

import errno
import io
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from spt_theory import io as spt_io
from spt_theory import train as train_cli
from spt_theory import experiments
from spt_theory import verify as verify_cli
from spt_theory.experiments import Budget, recipe, run, stage_key
from spt_theory.io import atomic_write, write_json
from spt_theory.lra import __main__ as lra_cli
from spt_theory.lra import runner as runner_module
from spt_theory.lra.readers import load_cifar_batch, read_listops
from spt_theory.lra.task import LRATask
from spt_theory.model import Encoder
from spt_theory.probes import gradient_proximity_shares
from spt_theory.training import Stage, load_checkpoint, train_stage
from synthetic import listops

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "64", "--n-test", "32",
        "--d-model", "16", "--heads", "2", "--batch-size", "32", "--no-progress"]


def _one_error_line(stderr: str, *names) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("waiting for")]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for name in names:
        assert str(name) in lines[0], (name, lines[0])
    return lines[0]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, env=ENV, text=True, capture_output=True,
                          timeout=timeout)


# ------------------------------------------------------------------ 1. ListOps: impossible windows

@pytest.mark.parametrize("args, possible", [(["--min-len", "1", "--max-len", "3", "--train", "50"], 0),
                                            (["--min-len", "0", "--max-len", "5", "--train", "500"], 410)])
def test_listops_window_with_too_few_trees_stops_with_one_line(args, possible, tmp_path):
    out = tmp_path / "out"
    result = _python("-m", "synthetic.listops", "--out", str(out), *args, "--val", "5", "--test", "5",
                     timeout=60)
    assert result.returncode == 2
    _one_error_line(result.stderr, f"only {possible} distinct trees", "--min-len", "--max-len")
    assert not out.exists()


def test_listops_count_of_distinct_trees_matches_enumeration():
    assert listops.count_trees(0, 2) == 10  # the digits
    assert listops.count_trees(0, 5) == 10 + 4 * 10**2  # plus one operator over two digits
    assert listops.count_trees(4, 6) == 4 * 10**3  # length 5: one operator over three digits
    # a window exactly as large as asked for is filled (every tree drawn, none twice)
    rows = listops.generate_splits({"train": 410}, 0, 5, seed=0)["train"]
    assert len({source for source, _ in rows}) == 410


# ------------------------------------------------------------------ 8. ListOps file format

def test_listops_writer_uses_the_release_crlf_line_endings(tmp_path):
    path = listops.write_split(tmp_path / "basic_train.tsv", [("( ( ( [MAX 2 ) 9 ) ] )", 9), ("4", 4)])
    assert path.read_bytes() == b"Source\tTarget\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n4\t4\r\n"
    split = read_listops(_listops_dir(tmp_path, path.read_bytes()), "train")
    assert split.labels.tolist() == [9, 4]


def _listops_dir(root: Path, content: bytes) -> Path:
    folder = root / "data" / "listops-1000"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "basic_train.tsv").write_bytes(content)
    return root / "data"


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_listops_reader_accepts_trailing_blank_lines(ending, tmp_path):
    content = ending.join([b"Source\tTarget", b"( ( [MAX 2 ) 9 ] )\t9", b"( ( [MIN 2 ) 9 ] )\t2", b"", b""])
    split = read_listops(_listops_dir(tmp_path, content), "train")
    assert split.labels.tolist() == [9, 2]


@pytest.mark.parametrize("source, line, words", [
    ("( ( [MAX 2 ) 9 )", 3, "missing ']'"),               # operator never closed
    ("( ( [MAX 2 ) 9 ] ] )", 3, "']'"),                   # one ']' too many
    ("( ( [MAX 2 ) 9 ]", 3, "parenthes"),                 # '(' never closed
    ("( [MAX 2 ) 9 ] ) )", 3, "parenthes"),               # ')' without '('
    ("[MAX 2 9 ] 4", 3, "after the end"),                 # two expressions
    ("", 3, "empty"),
])
def test_listops_reader_rejects_unbalanced_sources_naming_file_and_line(source, line, words, tmp_path):
    content = f"Source\tTarget\n( ( [MIN 2 ) 9 ] )\t2\n{source}\t3\n".encode()
    with pytest.raises(spt_io.InputError) as error:
        read_listops(_listops_dir(tmp_path, content), "train")
    assert f"basic_train.tsv:{line}:" in str(error.value) and words in str(error.value)


def test_listops_reader_rejects_a_blank_line_between_rows(tmp_path):
    content = b"Source\tTarget\n( ( [MIN 2 ) 9 ] )\t2\n\n( ( [MAX 2 ) 9 ] )\t9\n"
    with pytest.raises(spt_io.InputError, match=r"basic_train.tsv:3: blank line"):
        read_listops(_listops_dir(tmp_path, content), "train")


def test_generated_listops_reads_back(tmp_path):
    splits = listops.generate_splits({"train": 20}, 5, 60, seed=1)
    listops.write_split(tmp_path / "data" / "listops-1000" / "basic_train.tsv", splits["train"])
    split = read_listops(tmp_path / "data", "train")
    assert split.labels.tolist() == [label for _, label in splits["train"]]


# ------------------------------------------------------------------ 5. file modes

@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_honours_the_umask(umask, tmp_path):
    previous = os.umask(umask)
    try:
        path = write_json(tmp_path / "r.json", {"a": 1})
        plain = tmp_path / "plain"
        plain.write_text("x")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777 == 0o666 & ~umask


# ------------------------------------------------------------------ 6. stale temporary files

def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_write_removes_temp_files_of_dead_writers_but_not_of_live_ones(tmp_path):
    dead = tmp_path / f".epoch_3.pt.{_dead_pid()}.abc123de.tmp"
    live_other = tmp_path / f".run.json.{os.getppid()}.zz9_abcd.tmp"  # a live process (pytest's parent)
    own = tmp_path / f".r.json.{os.getpid()}.q1q1q1q1.tmp"  # this process, e.g. another thread's write
    legacy_old, legacy_new = tmp_path / ".r.json.k2j3l4m5.tmp", tmp_path / ".r.json.m5n6o7p8.tmp"
    unrelated = tmp_path / ".notes.tmp"  # not named like a temp file of atomic_write
    for path in (dead, live_other, own, legacy_old, legacy_new, unrelated):
        path.write_bytes(b"partial")
    old = time.time() - 2 * spt_io.LEGACY_TEMP_AGE_S
    os.utime(legacy_old, (old, old))
    write_json(tmp_path / "r.json", {"a": 1})
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([p.name for p in (live_other, own, legacy_new, unrelated)] + ["r.json"])


def test_sigkill_mid_write_leaves_a_temp_file_that_the_next_start_removes(tmp_path):
    """A real process killed inside atomic_write; the next training start in that folder cleans up."""
    script = (f"import os, signal; from spt_theory.io import atomic_write\n"
              f"def write(tmp):\n    tmp.write_bytes(b'half'); os.kill(os.getpid(), signal.SIGKILL)\n"
              f"atomic_write({str(tmp_path / 'epoch_1.pt')!r}, write)\n")
    result = _python("-c", script)
    assert result.returncode == -9
    (leftover,) = tmp_path.glob(".epoch_1.pt.*.tmp")
    removed = spt_io.remove_stale_temps(tmp_path)
    assert removed == [leftover] and not leftover.exists()


# ------------------------------------------------------------------ 9. CIFAR pickles of Python 3

def _cifar_batch(n: int = 4) -> dict:
    rng = np.random.default_rng(0)
    return {"batch_label": "training batch 1 of 5", "labels": [int(v) for v in rng.integers(0, 10, n)],
            "data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
            "filenames": [f"img_{i}.png" for i in range(n)]}


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("bytes_keys", [False, True])
def test_cifar_batches_pickled_by_python3_with_any_protocol_load(protocol, bytes_keys, tmp_path):
    batch = _cifar_batch()
    if bytes_keys:  # the release's own keys are bytes
        batch = {key.encode(): value for key, value in batch.items()}
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    data, labels = load_cifar_batch(path)
    reference = _cifar_batch()
    assert np.array_equal(data, reference["data"]) and labels.tolist() == reference["labels"]


class _Exploit:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("protocol", [2, 5])
def test_cifar_loader_still_refuses_code(protocol, tmp_path):
    marker = tmp_path / "side_effect"
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({"data": _Exploit(marker), "labels": [1]}, protocol=protocol))
    with pytest.raises(spt_io.InputError, match="refusing to load global"):
        load_cifar_batch(path)
    assert not marker.exists()


class _Call:
    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


@pytest.mark.parametrize("call", [
    _Call(__import__("codecs").encode, "abc", "rot13"),
    _Call(__import__("codecs").encode, b"x\x9c\x03\x00\x00\x00\x00\x01", "zlib_codec"),
    _Call((np._core if hasattr(np, "_core") else np.core).numeric._frombuffer,
          b"\x00" * 8, np.dtype("O"), (1,), "C"),
])
def test_cifar_loader_refuses_misused_allowed_globals(call, tmp_path):
    """_codecs.encode only turns text into latin-1 bytes; _frombuffer never builds an object array."""
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({"data": call, "labels": [1]}, protocol=2))
    with pytest.raises(spt_io.InputError, match="data_batch_1"):
        load_cifar_batch(path)


# ------------------------------------------------------------------ 10. probes

def test_gradient_shares_are_finite_when_an_example_has_no_masked_token(tiny_walk, tiny_model_overrides):
    data = tiny_walk.build()
    torch.manual_seed(0)
    model = Encoder(tiny_walk.model_config(**tiny_model_overrides))
    x, y = data.x_train[:16], data.y_train[:16]
    # 12 tokens at ratio 0.05: about half of the examples have no masked token
    shares = gradient_proximity_shares(model, x, y, mask_id=tiny_walk.vocab, mask_ratio=0.05)
    for objective in ("supervised", "spt"):
        for value in shares[objective].values():
            assert np.isfinite(value) and 0.0 <= value <= 1.0, shares


# ------------------------------------------------------------------ 11. --threads

def test_train_and_verify_take_threads(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr("spt_theory.cpu.set_intra_op_threads", calls.append)
    assert verify_cli.main(["--list", "--threads", "1"]) == 0
    assert train_cli.main([*WALK, "--mode", "scratch", "--epochs", "1", "--threads", "2",
                           "--cache-dir", str(tmp_path / "c")]) == 0
    assert calls == [1, 2]
    capsys.readouterr()
    for main in (verify_cli.main, train_cli.main):
        assert main(["--threads", "0", "--cache-dir", str(tmp_path / "c0")]) == 2
        _one_error_line(capsys.readouterr().err, "--threads")
    assert not (tmp_path / "c0").exists()



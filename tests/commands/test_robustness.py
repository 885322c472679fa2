"""Issue 17: the ListOps generator's impossible windows, checkpoint retention, file modes, other
programs' files (issue 28), ListOps file format, CIFAR pickles from Python 3, probes without masked tokens,
``--threads``, two processes on one cache, disk trouble and checkpoint format versions."""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ENV, REPO, _files, _one_error_line, _stage_dirs

from spt_theory import train as train_cli
from spt_theory import verify as verify_cli
from spt_theory.analysis.gradient_shares import gradient_proximity_shares
from spt_theory.core.model import Encoder
from spt_theory.lra import __main__ as lra_cli
from spt_theory.lra.inputs import LRATask
from spt_theory.lra.readers.image import load_cifar_batch
from spt_theory.lra.readers.listops import read_listops
from spt_theory.training import loop as training_loop
from spt_theory.training.cache import StageCache, load_checkpoint
from spt_theory.training.loop import DatasetTask, Stage, train_stage
from spt_theory.training.recipes import Budget
from spt_theory.util import files as spt_files
from spt_theory.util import locks as spt_locks
from spt_theory.util.files import atomic_write, write_json
from spt_theory.walk.experiments import recipe, run, stage_key
from synthetic import listops

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "64", "--n-test", "32",
        "--d-model", "16", "--heads", "2", "--batch-size", "32", "--no-progress"]


def _python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, env=ENV, text=True, capture_output=True,
                          timeout=timeout)


# ------------------------------------------------------------------ 1. ListOps: impossible windows

@pytest.mark.slow
@pytest.mark.parametrize("args, possible", [(["--min-len", "1", "--max-len", "3", "--train", "50"], 0),
                                            (["--min-len", "0", "--max-len", "5", "--train", "500"], 410)])
def test_listops_window_with_too_few_trees_stops_with_one_line(args, possible, tmp_path):
    out = tmp_path / "out"
    result = _python("-m", "synthetic.listops", "--out", str(out), *args, "--val", "5", "--test", "5",
                     timeout=180)
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
    with pytest.raises(spt_files.InputError) as error:
        read_listops(_listops_dir(tmp_path, content), "train")
    assert f"basic_train.tsv:{line}:" in str(error.value) and words in str(error.value)


def test_listops_reader_rejects_a_blank_line_between_rows(tmp_path):
    content = b"Source\tTarget\n( ( [MIN 2 ) 9 ] )\t2\n\n( ( [MAX 2 ) 9 ] )\t9\n"
    with pytest.raises(spt_files.InputError, match=r"basic_train.tsv:3: blank line"):
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


# ------------------------------------------------------------------ 6. other programs' files

def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _foreign_files(folder: Path, target: str) -> dict[Path, tuple[bytes, int]]:
    """Two-day-old files of other programs in ``folder``, most named like the temporary files of
    atomic_write writing ``target`` (a name cannot tell them from those of a writer killed by
    SIGKILL); their bytes and modification times."""
    names = [f".{target}.{_dead_pid()}.abc123de.tmp",  # by a process that is gone
             f".{target}.{os.getpid()}.q1q1q1q1.tmp",  # by this very process id
             f".{target}.k2j3l4m5.tmp",  # as an older version named them (no pid)
             f".epoch_3.pt.{_dead_pid()}.zz9_abcd.tmp", ".notes.tmp", "scratch.tmp"]
    folder.mkdir(parents=True, exist_ok=True)
    old = time.time() - 2 * 24 * 3600
    for name in names:
        (folder / name).write_bytes(f"{name} of another program".encode())
        os.utime(folder / name, (old, old))
    return {folder / name: ((folder / name).read_bytes(), (folder / name).stat().st_mtime_ns) for name in names}


@pytest.mark.slow
def test_writers_remove_no_file_but_their_own_temporary_one(tmp_path):
    """An atomic write, a generator (a real process) and a training run, among others' files."""
    foreign = _foreign_files(tmp_path / "json", "r.json")
    write_json(tmp_path / "json" / "r.json", {"a": 1})
    out = tmp_path / "listops"
    foreign |= _foreign_files(out, "basic_train.tsv")
    result = _python("-m", "synthetic.listops", "--out", str(out), "--train", "5", "--val", "2", "--test", "2",
                     "--min-len", "1", "--max-len", "30")
    assert result.returncode == 0, result.stderr
    argv = [*WALK, "--mode", "scratch", "--epochs", "1", "--cache-dir", str(tmp_path / "cache")]
    (stage_dir,) = _stage_dirs(tmp_path / "cache", argv)
    foreign |= _foreign_files(stage_dir, "epoch_1.pt")
    assert train_cli.main(argv) == 0 and (stage_dir / "epoch_1.pt").exists()
    for path, (content, mtime) in foreign.items():
        assert path.exists() and path.read_bytes() == content and path.stat().st_mtime_ns == mtime, path


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
    with pytest.raises(spt_files.InputError, match="refusing to load global"):
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
    with pytest.raises(spt_files.InputError, match="data_batch_1"):
        load_cifar_batch(path)


_PEAK_MEMORY = """
import resource, sys
from pathlib import Path
from spt_theory.util.files import InputError
from spt_theory.lra.readers.image import load_cifar_batch
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_cifar_batch(Path(sys.argv[1]))
except InputError as error:
    print(error, file=sys.stderr)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


_RECONSTRUCT = (np._core if hasattr(np, "_core") else np.core).multiarray._reconstruct


@pytest.mark.slow
@pytest.mark.parametrize("bomb, refusal", [
    # LONG_BINPUT 2**26 (the fuzz test found 2**30): the C unpickler grows its memo to the index
    (b"\x80\x02N" + b"r" + (2**26).to_bytes(4, "little") + b".", "expected a dict"),
    # numpy's constructor asked for 2**27 Nones (its own pickles ask for an empty array)
    (pickle.dumps({"data": _Call(_RECONSTRUCT, np.ndarray, (2**27,), b"O"), "labels": [1]}, protocol=2),
     "only an empty ndarray"),
], ids=["memo_index", "object_array"])
def test_cifar_loader_allocates_nothing_a_pickle_asks_for(bomb, refusal, tmp_path):
    """Each would take 1 GB; the loader refuses it, or reads it, in a few MB."""
    path = tmp_path / "data_batch_1"
    path.write_bytes(bomb)
    result = _python("-c", _PEAK_MEMORY, str(path))
    assert result.returncode == 0 and refusal in result.stderr, result.stderr
    assert int(result.stdout) < 100_000, f"peak memory grew by {int(result.stdout)} kB"  # ru_maxrss: kB


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

def test_train_and_verify_take_threads(monkeypatch, tmp_path, capsys, argparse_refusal):
    calls = []
    monkeypatch.setattr("spt_theory.core.cpu.set_intra_op_threads", calls.append)
    assert verify_cli.main(["--list", "--threads", "1"]) == 0
    assert train_cli.main([*WALK, "--mode", "scratch", "--epochs", "1", "--threads", "2",
                           "--cache-dir", str(tmp_path / "c")]) == 0
    assert calls == [1, 2]
    capsys.readouterr()
    for main in (verify_cli.main, train_cli.main):  # argparse's refusal: the usage, then the error line
        argparse_refusal(main, ["--threads", "0", "--cache-dir", str(tmp_path / "c0")], "--threads", ">= 1")
    assert not (tmp_path / "c0").exists()


# ------------------------------------------------------------------ 3. checkpoint retention

def _tiny_stage_run(tiny_walk, tiny_model_overrides, folder, epochs=4, val_losses=None, **kwargs):
    data = tiny_walk.build()
    torch.manual_seed(0)
    model = Encoder(tiny_walk.model_config(**tiny_model_overrides))
    values = iter(val_losses or [])
    metrics = (lambda m: {"val_loss": next(values)}) if val_losses else None
    return train_stage(model, DatasetTask(data, metrics), Stage("spt", epochs, batch_size=48), 0,
                       StageCache.folder(folder), progress=False, **kwargs), model


def _pt(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.pt"))


@pytest.mark.slow
def test_pretraining_keeps_the_last_and_the_best_epoch_by_default(tiny_walk, tiny_model_overrides, tmp_path):
    history, _ = _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "s", val_losses=[3.0, 1.0, 2.0, 4.0])
    assert [r["val_loss"] for r in history] == [3.0, 1.0, 2.0, 4.0]
    assert _pt(tmp_path / "s") == ["epoch_2.pt", "epoch_4.pt"]
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "a", val_losses=[3.0, 1.0, 2.0, 4.0],
                    keep_checkpoints="all")
    assert _pt(tmp_path / "a") == [f"epoch_{e}.pt" for e in (1, 2, 3, 4)]
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "n")  # no validation metric: the last
    assert _pt(tmp_path / "n") == ["epoch_4.pt"]


def test_keep_all_from_the_environment(tiny_walk, tiny_model_overrides, tmp_path, monkeypatch):
    monkeypatch.setenv("SPT_KEEP_CHECKPOINTS", "all")
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path, epochs=2)
    assert _pt(tmp_path) == ["epoch_1.pt", "epoch_2.pt"]
    monkeypatch.setenv("SPT_KEEP_CHECKPOINTS", "some")
    with pytest.raises(spt_files.InputError, match="SPT_KEEP_CHECKPOINTS"):
        _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "x", epochs=2)


def test_resume_after_a_kill_with_pruned_checkpoints_matches_the_uninterrupted_run(
        tiny_walk, tiny_model_overrides, tmp_path):
    losses = [3.0, 1.0, 2.0, 4.0]
    reference, ref_model = _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "ref", val_losses=losses)
    # killed in epoch 3 (2 steps per epoch: after step 5), then resumed by a new call
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "k", val_losses=losses, stop_after_steps=5)
    assert _pt(tmp_path / "k") == ["epoch_2.pt", "last.pt"]  # epoch 2: the best and the last so far
    resumed, model = _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "k", val_losses=losses[2:])
    strip = lambda h: [{k: v for k, v in r.items() if k != "seconds"} for r in h]  # noqa: E731
    assert strip(resumed) == strip(reference) and _pt(tmp_path / "k") == ["epoch_2.pt", "epoch_4.pt"]
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), ref_model.state_dict().values()))


def test_a_shorter_run_in_a_longer_runs_folder_never_deletes_the_longer_ones(
        tiny_walk, tiny_model_overrides, tmp_path):
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path, epochs=4, val_losses=[3.0, 1.0, 2.0, 4.0])
    _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path, epochs=3, val_losses=[3.0, 1.0, 2.0])
    assert _pt(tmp_path) == ["epoch_2.pt", "epoch_3.pt", "epoch_4.pt"]


@pytest.mark.slow
def test_walk_experiments_keep_every_epoch_they_reuse(tiny_walk, tiny_model_overrides, tmp_path, monkeypatch):
    """E9 loads epochs 1, 2, 4 of one pretraining; X6 reads every epoch of a stage."""
    budget = Budget(pretrain_epochs=4, finetune_epochs=1, batch_size=48)
    long = run(recipe("sweep_4", tiny_walk, 0, budget, **tiny_model_overrides), tmp_path, progress=False)
    folder = tmp_path / stage_key(long.spec, 0)
    assert _pt(folder) == [f"epoch_{e}.pt" for e in (1, 2, 3, 4)]
    calls = []
    real = training_loop.train_stage
    monkeypatch.setattr(training_loop, "train_stage", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    run(recipe("sweep_2", tiny_walk, 0, budget, **tiny_model_overrides), tmp_path, progress=False)
    assert [stage.objective for stage in calls] == ["supervised"]  # the pretraining was reused


def _lra_listops(root: Path) -> Path:
    for split, rows in listops.generate_splits({"train": 24, "val": 8, "test": 8}, 5, 40, seed=0).items():
        listops.write_split(root / f"listops-1000/basic_{split}.tsv", rows)
    return root


def test_lra_finetunes_from_the_best_epoch_which_is_kept(tmp_path, monkeypatch, capsys):
    val_losses = iter([0.5, 0.2, 0.9])
    monkeypatch.setattr(LRATask, "reconstruction_loss", lambda *args, **kwargs: next(val_losses))
    data = _lra_listops(tmp_path / "data")
    out = tmp_path / "out"
    assert lra_cli.main(["finetune", "--task", "listops", "--tiny", "--epochs", "3", "--max-steps", "18",
                         "--data-dir", str(data), "--out", str(out), "--no-progress"]) == 0
    (pretrain,) = [json.loads(p.read_text()) for p in (out / "results").rglob("pretrain-*.json")]
    assert pretrain["metrics"]["best_epoch"] == 2
    assert _pt(out / "cache" / pretrain["cache"]) == ["epoch_2.pt", "epoch_3.pt"]
    capsys.readouterr()
    # a rerun reloads everything: nothing retrained, same results
    assert lra_cli.main(["finetune", "--task", "listops", "--tiny", "--epochs", "3", "--max-steps", "18",
                         "--data-dir", str(data), "--out", str(out), "--no-progress"]) == 0


# ------------------------------------------------------------------ guarantees: two processes

@pytest.mark.slow
def test_directory_lock_excludes_a_second_process_and_is_released_on_kill(tmp_path):
    folder = tmp_path / "stage"
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from spt_theory.util.locks import directory_lock\n"
                               f"with directory_lock({str(folder)!r}):\n"
                               "    print('held', flush=True); time.sleep(600)\n"],
                              cwd=REPO, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        probe = ("import fcntl, os, sys\n"
                 f"fd = os.open({str(tmp_path / '.stage.lock')!r}, os.O_RDWR)\n"
                 "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
                 "except BlockingIOError:\n    print('busy')\n")
        assert _python("-c", probe).stdout.strip() == "busy"
        holder.kill()
        holder.wait()
        with spt_locks.directory_lock(folder, wait_message=False):  # a killed holder's lock is taken over
            assert _python("-c", probe).stdout.strip() == "busy"
        assert _python("-c", probe).stdout.strip() == "free"  # released on leaving (the file stays)
    finally:
        holder.kill()
        holder.wait()


def test_directory_lock_admits_one_holder_at_a_time(tmp_path):
    """Threads (each lock is its own open file, so they exclude each other as processes do) taking
    the lock in turns: never two inside."""
    import threading

    inside, most, errors = [0], [0], []
    guard = threading.Lock()

    def worker():
        try:
            for _ in range(40):
                with spt_locks.directory_lock(tmp_path / "stage", wait_message=False):
                    with guard:
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                    time.sleep(0.0005)
                    with guard:
                        inside[0] -= 1
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and most[0] == 1


@pytest.mark.slow
def test_two_cli_runs_on_one_cache_train_each_stage_once(tmp_path):
    """Two `train` processes started together on one cache: one trains, the other waits and reloads."""
    argv = [*WALK, "--mode", "spt", "--epochs", "2", "--finetune-epochs", "2", "--cache-dir", str(tmp_path / "c")]
    trace = ("import sys, spt_theory.training.cache as t\n"  # print every checkpoint written
             "real = t.save_checkpoint\n"
             "def traced(path, *args):\n"
             "    print('SAVED', path.parent.name, path.name, flush=True)\n"
             "    return real(path, *args)\n"
             "t.save_checkpoint = traced\n"
             "from spt_theory.train import main\n"
             f"sys.exit(main({argv!r} + ['--json', sys.argv[1]]))\n")
    processes = [subprocess.Popen([sys.executable, "-c", trace, str(tmp_path / f"{i}.json")], cwd=REPO, env=ENV,
                                  text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in processes]
    assert [code for *_, code in results] == [0, 0], results
    summaries = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(2)]
    strip = lambda s: [[{k: v for k, v in r.items() if k != "seconds"} for r in h] for h in s["history"]]  # noqa: E731
    assert strip(summaries[0]) == strip(summaries[1])
    spec = train_cli.build_spec(train_cli.parse_args(argv))
    saved = sorted(line for out, *_ in results for line in out.splitlines() if line.startswith("SAVED"))
    expected = sorted(f"SAVED {stage_key(spec, k)} epoch_{e}.pt" for k in range(2) for e in (1, 2))
    assert saved == expected  # every checkpoint written once: no stage trained twice
    for k in range(2):
        folder = tmp_path / "c" / stage_key(spec, k)
        assert [load_checkpoint(folder / f"epoch_{e}.pt")["epoch"] for e in (1, 2)] == [1, 2]


def test_train_stage_takes_the_lock_and_a_waiter_reloads_the_finished_stage(tiny_walk, tiny_model_overrides,
                                                                           tmp_path, monkeypatch):
    seen = []
    real_lock = spt_locks.directory_lock

    def recording_lock(directory, **kwargs):
        seen.append(Path(directory))
        return real_lock(directory, **kwargs)

    monkeypatch.setattr("spt_theory.training.cache.directory_lock", recording_lock)
    first, model1 = _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "s", epochs=2)
    calls = []
    monkeypatch.setattr("spt_theory.training.cache.save_checkpoint", lambda *a, **k: calls.append(a))
    second, model2 = _tiny_stage_run(tiny_walk, tiny_model_overrides, tmp_path / "s", epochs=2)
    assert seen == [tmp_path / "s"] * 2 and calls == [] and second == first
    assert all(torch.equal(a, b) for a, b in zip(model1.state_dict().values(), model2.state_dict().values()))


# ------------------------------------------------------------------ guarantees: disk trouble

def _fail_on(monkeypatch, name: str, error: OSError, after: int = 0):
    """Make the ``after``-th and later ``torch.save`` calls to a file named ``name*`` fail as a
    full disk makes torch.save fail: a RuntimeError raised while handling the file's OSError."""
    real = torch.save
    count = {"n": 0}

    def failing(obj, f, *args, **kwargs):
        if Path(getattr(f, "name", f)).name.startswith(f".{name}"):
            count["n"] += 1
            if count["n"] > after:
                try:
                    raise error
                except OSError:  # from None: the OSError stays the context (not the cause), as torch's
                    raise RuntimeError("[enforce fail at inline_container.cc:672] . "
                                       "unexpected pos 704 vs 598") from None
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", failing)


def test_full_disk_during_a_checkpoint_write_one_line_exit_2_then_resume(tmp_path, monkeypatch, capsys):
    argv = [*WALK, "--mode", "scratch", "--epochs", "3", "--cache-dir", str(tmp_path / "c")]
    _fail_on(monkeypatch, "epoch_2.pt", OSError(errno.ENOSPC, "No space left on device"))
    assert train_cli.main(argv) == 2
    line = _one_error_line(capsys.readouterr().err, "epoch_2.pt", "No space left on device")
    (folder,) = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]
    assert _pt(folder) == ["epoch_1.pt"] and load_checkpoint(folder / "epoch_1.pt")["epoch"] == 1, line
    assert not list(folder.glob(".*.tmp"))
    monkeypatch.undo()  # space freed
    assert train_cli.main(argv + ["--json", str(tmp_path / "s.json")]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert [r["epoch"] for r in summary["history"][0]] == [1, 2, 3]


@pytest.mark.parametrize("where", ["cache", "json"])
def test_read_only_cache_or_output_one_line_exit_2(where, tmp_path, monkeypatch, capsys):
    """A read-only folder (root ignores modes, so the refusal is injected at the system calls)."""
    target = tmp_path / ("c" if where == "cache" else "out")
    real_mkdir, real_mkstemp = Path.mkdir, tempfile.mkstemp

    def refuse(path: Path):
        if str(path).startswith(str(target)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))

    def mkdir(self, *args, **kwargs):
        refuse(self)
        return real_mkdir(self, *args, **kwargs)

    def mkstemp(*args, dir=None, **kwargs):
        refuse(Path(dir))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    argv = [*WALK, "--mode", "scratch", "--epochs", "1", "--cache-dir", str(tmp_path / "c"),
            "--json", str(tmp_path / "out" / "s.json")]
    assert train_cli.main(argv) == 2
    err = capsys.readouterr().err  # the folders created before the refusal are said, then one error line
    said = [line for line in err.splitlines() if line.startswith("created folder ")]
    _one_error_line("\n".join(line for line in err.splitlines() if line not in said), target, "Read-only file system")
    assert said == ([f"created folder {tmp_path / 'out'}"] if where == "cache" else [])


def test_lra_full_disk_one_line_exit_2(tmp_path, monkeypatch, capsys):
    data = _lra_listops(tmp_path / "data")
    _fail_on(monkeypatch, "epoch_1.pt", OSError(errno.ENOSPC, "No space left on device"))
    assert lra_cli.main(["scratch", "--task", "listops", "--tiny", "--finetune-epochs", "2", "--data-dir", str(data),
                         "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err  # the created --out said, the runner's progress lines, then one error line
    assert err.startswith(f"created folder {tmp_path / 'out'}\n")
    _one_error_line("\n".join(line for line in err.splitlines()[1:] if not line.startswith("scratch: ")),
                    "epoch_1.pt", "No space left on device")


def test_verify_full_disk_one_line_exit_2(tmp_path, monkeypatch, capsys):
    _fail_on(monkeypatch, "epoch_1.pt", OSError(errno.ENOSPC, "No space left on device"))
    monkeypatch.setattr(verify_cli, "all_claims", lambda: [_training_claim(tmp_path)])
    assert verify_cli.main(["--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 2
    out = capsys.readouterr()
    _one_error_line(out.err, "epoch_1.pt", "No space left on device")


def test_figures_full_disk_one_line_exit_2(tmp_path, monkeypatch, capsys):
    from spt_theory.figures import cli, registry

    def draw(ctx):
        return [atomic_write(ctx.out / "f.json", lambda tmp: (_ for _ in ()).throw(
            OSError(errno.ENOSPC, "No space left on device")))]

    monkeypatch.setitem(registry.FIGURES, "attention_maps", registry.Figure("attention_maps", draw, "E4", "-"))
    assert cli.main(["--only", "attention_maps", "--out", str(tmp_path / "fig"),
                         "--cache-dir", str(tmp_path / "c")]) == 2
    said, *rest = capsys.readouterr().err.splitlines()  # the --out folder checked and created first
    assert said == f"created folder {tmp_path / 'fig'}"
    _one_error_line("\n".join(rest), "f.json", "No space left on device")
    assert _files(tmp_path / "fig") == []


def _training_claim(tmp_path):
    from spt_theory.claims.registry import Claim, Measurement
    from spt_theory.walk.experiments import WalkData

    def check(ctx):
        data = WalkData(vocab=5, length=12, p=0.9, n_train=48, n_test=16)
        run(recipe("scratch", data, 0, Budget(scratch_epochs=1, batch_size=48), d_model=16, n_heads=2, d_ff=32),
            ctx.cache_dir, progress=False)
        return Measurement(1.0, "-", True)

    return Claim("E0", "a tiny training", "test", "train once", check)


# ------------------------------------------------------------------ guarantees: checkpoint formats

def _old_format_checkpoint(path: Path, **changes) -> None:
    """A checkpoint as the previous commit wrote it (no format field), with ``changes``."""
    ckpt = torch.load(path, weights_only=True)
    ckpt.pop("format", None)
    ckpt.update(changes)
    torch.save(ckpt, path)


def test_checkpoint_without_a_format_loads_as_format_1_and_resumes(tmp_path, capsys):
    base = [*WALK, "--mode", "scratch", "--cache-dir", str(tmp_path / "c")]
    argv = [*base, "--epochs", "2"]
    assert train_cli.main([*base, "--epochs", "1"]) == 0
    (folder,) = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]
    _old_format_checkpoint(folder / "epoch_1.pt")
    assert load_checkpoint(folder / "epoch_1.pt")["format"] == 1
    assert train_cli.main(argv) == 0
    assert load_checkpoint(folder / "epoch_2.pt")["format"] >= 2


@pytest.mark.parametrize("change, words", [({"format": 99}, "format 99"),
                                           ({"format": "x"}, "format 'x'")])
def test_checkpoint_of_an_unknown_format_is_refused_naming_it(change, words, tmp_path, capsys):
    argv = [*WALK, "--mode", "scratch", "--epochs", "1", "--cache-dir", str(tmp_path / "c")]
    assert train_cli.main(argv) == 0
    (folder,) = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]
    _old_format_checkpoint(folder / "epoch_1.pt", **change)
    capsys.readouterr()
    assert train_cli.main(argv) == 2
    _one_error_line(capsys.readouterr().err, "epoch_1.pt", words)


def test_a_signal_while_the_temporary_file_is_created_leaves_no_file_behind(tmp_path, monkeypatch):
    """SIGINT arriving right after ``mkstemp`` made the file but before its name is bound: the
    signal is held until the name is known, so the interrupted write removes its own file."""
    import signal
    import tempfile

    from spt_theory.util import files

    made = tempfile.mkstemp

    def mkstemp_then_signal(*args, **kwargs):
        fd, name = made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            files.atomic_write(tmp_path / "out.txt", lambda tmp: tmp.write_text("x"))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []

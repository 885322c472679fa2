"""``lra audit`` (issue 57, item 9): a split with one class is refused in one line naming the split
and the class counts, before any fit (one class in train was a scikit-learn traceback, one class
in test a "window 11.7 points" with a ceiling below chance); and the command says on stderr what
it does, at least once a minute while one step runs on (the ListOps audit was silent 8 minutes).
No training, no real fit: the data are tensors, the fits stubbed where the test is of the words."""

import time

import numpy as np
import pytest
import torch

from spt_theory.lra import audit as audit_module
from spt_theory.lra import data as data_module
from spt_theory.lra.__main__ import main
from spt_theory.lra.audit import audit
from spt_theory.lra.data import LRAData
from spt_theory.lra.readers.common import PIXEL_VOCAB
from spt_theory.util.files import InputError


def _data(train=(30, 30), val=(10, 10), test=(20, 20), seed=0) -> LRAData:
    rng = np.random.default_rng(seed)
    tensors = []
    for counts in (train, val, test):
        y = np.concatenate([np.full(n, label) for label, n in enumerate(counts)]).astype(np.int64)
        tensors += [torch.as_tensor(rng.integers(0, 256, (len(y), 64))), torch.as_tensor(y)]
    return LRAData(*tensors, PIXEL_VOCAB)


@pytest.mark.parametrize("counts, split, said", [
    (dict(train=(0, 60)), "train", "train 1: 60; val 0: 10, 1: 10; test 0: 20, 1: 20"),
    (dict(test=(40, 0)), "test", "train 0: 30, 1: 30; val 0: 10, 1: 10; test 0: 40"),
    (dict(val=(0, 20)), "val", "val 1: 20"),
], ids=["one class in train", "one class in test", "one class in val"])
def test_a_split_with_one_class_is_refused_naming_the_split_and_counts(counts, split, said, monkeypatch):
    fitted = []
    monkeypatch.setattr(audit_module, "fit", lambda *a: fitted.append(a) or pytest.fail("fitted"))
    with pytest.raises(InputError) as error:
        audit(_data(**counts))
    message = str(error.value)
    assert message.startswith(f"{split} split: one class (class counts ") and said in message, message
    assert "at least two classes" in message and "\n" not in message and not fitted


def test_the_command_refuses_one_class_before_writing_anything(tmp_path, monkeypatch, capsys, error_line):
    monkeypatch.setattr(data_module, "load_task_data", lambda config, data_dir: _data(test=(40, 0)))
    out = tmp_path / "sub" / "audit.json"
    assert main(["audit", str(tmp_path), "--set", "resolution=8", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    error_line(err, "test split: one class", "test 0: 40")
    assert not (tmp_path / "sub").exists()


def test_two_classes_pass_the_check():
    audit_module.check_classes(_data())


def _row(*args):
    time.sleep(0.25)  # a fit that takes a while
    return {"test_accuracy": 60.0, "low": 50.0, "high": 70.0, "val_accuracy": 60.0, "C": 1.0, "features": 1}


def _slow_load(config, data_dir):
    time.sleep(0.25)  # a large ListOps set
    return _data()


def test_the_command_says_each_step_on_stderr_and_again_while_one_runs_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data_module, "load_task_data", _slow_load)
    monkeypatch.setattr(data_module, "data_source", lambda config, data_dir: {"kind": "test"})
    monkeypatch.setattr(audit_module, "fit", _row)
    monkeypatch.setattr(audit_module, "HEARTBEAT", 0.1)  # a minute, scaled down
    assert main(["audit", str(tmp_path), "--set", "resolution=8"]) == 0
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if line.startswith("audit: ")]
    assert said[0].startswith("audit: still loading pathfinder from ")  # said only when it takes a while
    for name in ("histogram", "per_position", "ink", "patterns3", "patterns5"):
        assert f"audit: fitting {name} ..." in said
    assert any(line.startswith("audit: still fitting ") for line in said), said
    assert "fitting" not in captured.out and "window" in captured.out


def test_the_heartbeat_speaks_at_least_once_per_period_of_silence(capsys):
    with audit_module.Heartbeat(every=0.1) as say:
        say("fitting ngrams3")
        time.sleep(0.55)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "audit: fitting ngrams3 ..."
    assert 3 <= sum(line.startswith("audit: still fitting ngrams3 (") for line in lines) <= 6, lines

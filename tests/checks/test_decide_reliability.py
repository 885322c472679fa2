"""Decided evidence bound to its registration (issue 50): curves held to their own steps, every
registered field checked by verify and by a promote, promotes under a lock, absence an ERROR, and
recorded hashes of the committed evidence and of the pre-registration documents."""

import copy
import json
import os
import shutil
import threading
import time

import numpy as np
import pytest
from test_lra_sequential import _check, _evidence, _l1b

from spt_theory import evidence
from spt_theory.checks import lra_sequential as rules
from spt_theory.claims import records, registry
from spt_theory.claims.registry import Context
from spt_theory.evidence import EvidenceError, correctness, schema, sweep_schema
from spt_theory.lra import decide
from spt_theory.verify import main as verify_main


def _parse(found):
    schema.parse(json.dumps(found), sweep_schema.DecideEvidence, "edited")


def _spt_run(found, seed=100):
    row = next(r for r in found["cells"] if r["cell"]["recipe"] == "spt")
    return next(r for r in row["runs"] if r["seed"] == seed)


# ------------------------------------------------------------------------ curves against their steps
def test_an_evaluation_inserted_between_epochs_is_refused():
    found = _evidence("l1b", _l1b([0.0] * 4))
    run = _spt_run(found)
    extra = {**run["curve"][-1], "step": 7999, "val_accuracy": 0.99}
    run["curve"].insert(-1, extra)
    with pytest.raises(EvidenceError, match="epochs|step"):
        _parse(found)


def test_steps_relabelled_against_steps_per_epoch_are_refused():
    found = _evidence("l3b", {"recipe=scratch,finetune_epochs=20": {100: 40.0},
                              "recipe=scratch,freeze=qk,finetune_epochs=20": {100: 30.0}}, "listops", 0.2)
    run = found["cells"][1]["runs"][0]
    for point in run["curve"]:
        point["step"] = point["epoch"] * 78
    with pytest.raises(EvidenceError, match="steps_per_epoch 157"):
        _parse(found)


def test_a_dropped_evaluation_is_refused():
    found = _evidence("l1b", _l1b([0.0] * 4))
    del _spt_run(found)["curve"][3]
    with pytest.raises(EvidenceError, match="epochs"):
        _parse(found)


def test_a_stored_std_that_is_not_its_seeds_is_refused():
    found = _evidence("l1b", _l1b([1.0, 2.0, 3.0, 4.0]))
    found["cells"][1]["test_accuracy"]["std"] = 0.5
    with pytest.raises(EvidenceError, match="std"):
        _parse(found)


# ------------------------------------------------------------------------ verify holds evidence to its registration
@pytest.mark.parametrize("edit, field", [
    (lambda f: f["data"].update(n_train=18), "data.n_train"),
    (lambda f: f["data_source"]["settings"].update(seed=2), "data_source.settings"),
    (lambda f: f["data_source"]["settings"].update(contour_length=4), "data_source.settings"),
    (lambda f: f["config"].update(d_model=128), "config.d_model"),
    (lambda f: f["options"]["overrides"].__setitem__(3, ["lr_finetune", "0.5"]), "options.overrides"),
    (lambda f: f.update(registered="docs/preregistration/other.md"), "registered"),
    (lambda f: f["data"].update(fingerprint="0123456789abcdef"), "data.fingerprint"),
])
def test_verify_refuses_evidence_that_differs_from_its_registration(tmp_path, edit, field):
    found = _evidence("l1b", _l1b([0.0] * 4))
    edit(found)
    with pytest.raises(EvidenceError, match=field.replace(".", r"\.")):
        _check(tmp_path, found)


def test_an_unregistered_seed_is_refused(tmp_path):
    with pytest.raises(EvidenceError, match="seeds"):
        _check(tmp_path, _evidence("l6", {"recipe=scratch,init=proximity,finetune_epochs=20": {200: 80.0, 202: 80.0},
                                          "recipe=scratch,layers=2,finetune_epochs=20": {200: 50.0}}))


def test_a_missing_registered_arm_is_an_error_not_a_reason(tmp_path):
    arms = {**_l1b([5.0] * 4)}
    arms["recipe=spt,keep=qk"] = {s: 60.0 for s in range(100, 103)}  # the hybrid of seed 103 missing
    with pytest.raises(EvidenceError, match=r"keep=qk\) seed 103 must be present"):
        _check(tmp_path, _evidence("l4b", arms))


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_fifo_or_a_folder_at_the_evidence_path_is_an_error_not_no_run(tmp_path, kind):
    (tmp_path / "decide").mkdir()
    target = tmp_path / "decide" / "l6.json"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    with pytest.raises(EvidenceError, match="not a regular file"):
        rules.check(Context(lra_evidence=tmp_path), "l6")


# ------------------------------------------------------------------------ promotes
@pytest.fixture
def evidence_root(tmp_path, monkeypatch):
    root = tmp_path / "evidence"
    (root / "lra" / "decide").mkdir(parents=True)
    monkeypatch.setattr(evidence, "root", lambda: root)
    return root


def test_two_promotes_at_once_keep_both_lanes(evidence_root, tmp_path, monkeypatch):
    """Each lane's promote reads, merges and writes under one lock: 8 seeds, not 4.  (The merge is
    slowed so that, without the lock, both lanes read the file before either writes.)"""
    merge = decide.merge

    def slow_merge(found, committed):
        time.sleep(0.3)
        return merge(found, committed)

    monkeypatch.setattr(decide, "merge", slow_merge)
    full = _evidence("l1b", _l1b([1.0] * 8, seeds=range(100, 108)))
    lanes = []
    for seeds in (range(100, 104), range(104, 108)):
        lane = copy.deepcopy(full)
        lane["seeds"] = list(seeds)
        for row in lane["cells"]:
            row["runs"] = [r for r in row["runs"] if r["seed"] in seeds]
            row["test_accuracy"] = {"per_seed": [r["test_accuracy"] for r in row["runs"]],
                                    "mean": float(np.mean([r["test_accuracy"] for r in row["runs"]]))}
        lane["sweeps"] = {str(s): lane["sweeps"][str(s)] for s in seeds}
        lanes.append(lane)
    seed_lane = copy.deepcopy(lanes[0])  # something committed before, so both lanes merge
    seed_lane["seeds"] = [100]
    for row in seed_lane["cells"]:
        row["runs"] = row["runs"][:1]
        row["test_accuracy"] = {"per_seed": [row["runs"][0]["test_accuracy"]], "mean": row["runs"][0]["test_accuracy"]}
    seed_lane["sweeps"] = {"100": seed_lane["sweeps"]["100"]}
    (evidence_root / "lra" / "decide" / "l1b.json").write_text(json.dumps(seed_lane))
    errors = []

    def promote(lane, out):
        try:
            decide.promote(lane, out)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=promote, args=(lane, tmp_path / f"out{i}")) for i, lane in enumerate(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    promoted = json.loads((evidence_root / "lra" / "decide" / "l1b.json").read_text())
    assert promoted["seeds"] == list(range(100, 108))


def test_a_promote_of_an_unregistered_seed_or_a_cut_run_is_refused(evidence_root, tmp_path):
    found = _evidence("l6", {"recipe=scratch,init=proximity,finetune_epochs=20": {200: 80.0},
                             "recipe=scratch,layers=2,finetune_epochs=20": {200: 50.0}})
    cut = copy.deepcopy(found)
    run = cut["cells"][0]["runs"][0]
    del run["curve"][-1]
    run["best_epoch"], run["val_accuracy"] = len(run["curve"]), run["curve"][-1]["val_accuracy"]
    with pytest.raises(EvidenceError, match="registered 10000 steps"):
        decide.promote(cut, tmp_path)
    stray = copy.deepcopy(found)
    stray["seeds"] = [200, 202]
    stray["sweeps"]["202"] = {"name": decide.sweep_name("l6", 202)}
    stray["cells"][0]["runs"].append({**copy.deepcopy(found["cells"][0]["runs"][0]), "seed": 202})
    stray["cells"][0]["test_accuracy"] = {"per_seed": [0.8, 0.8], "mean": 0.8}
    with pytest.raises(EvidenceError, match="seeds"):
        decide.promote(stray, tmp_path)
    assert not (evidence_root / "lra" / "decide" / "l6.json").exists()


# ------------------------------------------------------------------------ recorded hashes
def _copy_evidence(tmp_path):
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root)
    return root


def test_a_consistent_edit_of_committed_evidence_is_an_error_naming_file_and_commit(tmp_path, capsys):
    """Per-example bits permuted the same way in every arm of a seed: the schema holds and every
    summary agrees, but the recorded hash does not."""
    root = _copy_evidence(tmp_path)
    path = root / "lra" / "decide" / "l1b.json"
    found = json.loads(path.read_text())
    order = np.random.default_rng(0).permutation(found["data"]["n_test"])
    for row in found["cells"]:
        for run in row["runs"]:
            if run["seed"] == 100:
                for point in run["curve"]:
                    bits = correctness.decode(point["test_correct"])
                    point["test_correct"] = correctness.encode(bits[order])
    path.write_text(json.dumps(found))
    code = verify_main(["--only", "L1b", "--evidence", str(root), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and "ERROR" in out and records.L1B_RESULT in out and "l1b.json" in out


def test_an_edit_of_the_race_rules_is_an_error(tmp_path, capsys):
    root = _copy_evidence(tmp_path)
    path = root / "race" / "pathfinder16.json"
    path.write_text(path.read_text().replace('"eval_every": 500', '"eval_every": 250'))
    code = verify_main(["--only", "L5", "--evidence", str(root), "--no-progress"])
    assert code == 1 and "ERROR" in capsys.readouterr().out


def test_evidence_read_without_a_recorded_hash_is_an_error(tmp_path):
    (tmp_path / "lra").mkdir()
    stray = tmp_path / "lra" / "new.json"
    stray.write_text("{}")
    with pytest.raises(EvidenceError, match="recorded nowhere"):
        registry.check_read_evidence({stray.resolve()}, tmp_path)


def test_every_pre_registration_document_is_recorded_and_unchanged(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    documents = sorted(f"docs/preregistration/{name}" for name in os.listdir(os.path.join(repo, "docs/preregistration"))
                       if name.endswith(".md"))
    assert sorted(records.DOCUMENTS) == documents
    registry.check_documents(repo)
    copy_root = tmp_path / "repo"
    shutil.copytree(os.path.join(repo, "docs"), copy_root / "docs")
    doc = copy_root / "docs/preregistration/2026-12-02-lra-decide.md"
    doc.write_text(doc.read_text().replace("D >= 3.5", "D >= 0.5"))
    with pytest.raises(EvidenceError, match="2026-12-02-lra-decide.md"):
        registry.check_documents(copy_root)


@pytest.mark.parametrize("controls", [None, {}, {"majority": 0.2}])
def test_a_summary_without_its_majority_control_is_an_evidence_error(tmp_path, controls):
    """Found by tests/lra/test_fuzz_readers.py in a fresh clone: a summary without ``controls`` was a
    KeyError traceback (an ERROR row with a traceback), not one line naming the field."""
    from spt_theory.checks.lra import read_evidence

    data = json.loads((evidence.path(evidence.LRA) / "listops.json").read_text())
    if controls is None:
        del data["controls"]
    else:
        data["controls"] = controls
    path = tmp_path / "listops.json"
    path.write_text(json.dumps(data))
    with pytest.raises(EvidenceError, match="controls"):
        read_evidence(path, "listops")

"""Evidence is whole or it is an ERROR (issue 44): edited, incomplete or impossible evidence never
gets a verdict; L5 reads nothing past its registered cap; a pre-registered file cannot change;
``lra race`` trusts only checkpoints that hold weights and a history matching them."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from spt_theory import evidence
from spt_theory.checks import race as rules
from spt_theory.claims.registry import check_registered_files
from spt_theory.evidence import EvidenceError, lra_schema, schema
from spt_theory.lra import race
from spt_theory.util.files import InputError
from spt_theory.verify import main as verify_main


@pytest.fixture
def root(tmp_path):
    out = tmp_path / "evidence"
    shutil.copytree(evidence.root(), out, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return out


def _edit(root, *parts):
    path = root.joinpath(*parts)

    def apply(change):
        tree = json.loads(path.read_text())
        change(tree)
        path.write_text(json.dumps(tree))
    return apply


def _rows(root, tmp_path, *only) -> dict:
    report = tmp_path / "report.json"
    verify_main(["--only", *only, "--evidence", str(root), "--no-progress", "--json", str(report)])
    return {r["id"]: r for r in json.loads(report.read_text())["claims"]}


def _error(rows, claim_id, *words):
    row = rows[claim_id]
    assert row["verdict"] == "ERROR" and "traceback" not in row["details"], row
    for word in words:
        assert word in row["details"]["evidence_error"], (word, row["details"])


# ------------------------------------------------------------------------------ plateau grid
def _drop_n200_adamw(tree):
    tree["runs"] = [r for r in tree["runs"] if not (r["length"] == 200 and r["optimiser"] == "adamw"
                                                    and r["kind"] == "scratch")]


@pytest.mark.parametrize("change, words", [
    (_drop_n200_adamw, ("runs", "whole registered grid", "n = 200")),
    (lambda t: t.update(partial=True), ("partial",)),
    (lambda t: t["runs"][0].update(value=999999, capped=False), ("over its cap",)),
])
def test_an_incomplete_or_impossible_plateau_grid_is_an_error(change, words, root, tmp_path):
    _edit(root, "plateau", "plateau_runs.json")(change)
    rows = _rows(root, tmp_path, "P1", "P3")
    for claim_id in ("P1", "P3", "P3b"):
        _error(rows, claim_id, *words)


# ------------------------------------------------------------------------------ LRA sweeps
@pytest.mark.parametrize("keep_bits, message", [(False, "best validation epoch"),
                                                (True, "is not the stored test_accuracy")])
def test_curves_edited_beside_their_stored_accuracy_are_an_error(keep_bits, message, root, tmp_path):
    """Curves 25 points up, stored accuracies left: an ERROR, whether the file keeps per-example
    correctness (its bits no longer give the edited accuracy) or not (the stored run's accuracy is
    not its curve's at the best epoch)."""
    def plus_25(tree):
        for row in tree["cells"]:
            for run in row["runs"]:
                for point in run["curve"]:
                    point["test_accuracy"] = min(1.0, point["test_accuracy"] + 0.25)
                    if not keep_bits:
                        point.pop("test_correct", None)
    _edit(root, "lra", "listops.json")(plus_25)
    _error(_rows(root, tmp_path, "L1"), "L1", "listops.json", message)


# ------------------------------------------------------------------------------ race
@pytest.mark.parametrize("change, field", [
    (lambda t: t.update(seeds=[0, 2], arms=[a for a in t["arms"] if a["seed"] != 1]), "seeds"),
    (lambda t: t["data"].update(fingerprint="0123456789abcdef"), "data.fingerprint"),
    (lambda t: t["rules"].update(total_steps=30000), "rules.total_steps"),
    (lambda t: t.update(task="listops"), "task"),
    (lambda t: t.update(arms=[a for a in t["arms"] if a["arm"] != "scratch"]), "arms"),
])
def test_a_race_that_is_not_the_registered_one_is_an_error(change, field, root, tmp_path):
    _edit(root, "race", race.NAME)(change)
    _error(_rows(root, tmp_path, "L5"), "L5", "pathfinder16.json", field)


def test_l5_reads_nothing_past_its_registered_cap(root, tmp_path, monkeypatch):
    def run_on(tree):  # scratch of seed 0 runs on past 20,000 steps and reaches 70% at 24,000
        arm = next(a for a in tree["arms"] if a["seed"] == 0 and a["arm"] == "scratch")
        last = arm["curve"][-1]
        arm["curve"] += [{**last, "step": step, "val_accuracy": 0.75, "seconds": last["seconds"] + step}
                         for step in range(20500, 24500, 500)]
    before = _rows(root, tmp_path, "L5")["L5"]
    _edit(root, "race", race.NAME)(run_on)
    import hashlib

    from spt_theory.claims import records  # the edited race recorded, so only the cap is under test here
    edited = hashlib.sha256((root / "race" / race.NAME).read_bytes()).hexdigest()
    monkeypatch.setitem(records.EVIDENCE_HASHES, f"race/{race.NAME}", (edited, "test"))
    after = _rows(root, tmp_path, "L5")["L5"]
    assert after["verdict"] == before["verdict"] == "INCONCLUSIVE" and after["measured"] == before["measured"]
    found = rules.load_race(root)
    arm = next(a for a in found["arms"] if a["seed"] == 0 and a["arm"] == "scratch")
    assert rules.within_cap(arm)["curve"][-1]["step"] == rules.CAP


# ------------------------------------------------------------------------------ strict JSON
BASE = json.loads(evidence.path("race", race.NAME).read_text())


@pytest.mark.parametrize("text, words", [
    (json.dumps({**BASE, "schema_version": True}), ("schema_version",)),
    (json.dumps({**BASE, "schema_version": 1.0}), ("schema_version",)),
    (json.dumps({**BASE, "unread": {"x": float("nan")}}), ("unread.x: not a finite number",)),
    (json.dumps({**BASE, "unread": [1e308]}).replace("1e+308", "1e999"), ("unread[0]: not a finite number",)),
    (json.dumps({**BASE, "arms": [{**BASE["arms"][0], "seed": 10**40}]}), ("digits",)),
    (json.dumps({**BASE, "arms": [{**BASE["arms"][0], "seed": 2**64}]}), ("seed",)),
    (json.dumps(BASE)[:-1] + ', "task": "pathfinder"}', ("'task' appears twice",)),
    ("[" * 200_000 + "]" * 200_000, ("nested deeper",)),
    ('{"schema_version": ' + "9" * 5000 + "}", ("digits",)),
])
def test_strict_json_refuses_in_one_line(text, words):
    with pytest.raises(EvidenceError) as error:
        schema.parse(text, lra_schema.RaceEvidence, "race.json")
    message = str(error.value)
    assert message.startswith("race.json: ") and "\n" not in message
    for word in words:
        assert word in message, (word, message)


def test_a_deep_or_huge_file_is_one_error_row_without_a_traceback(root, tmp_path, capsys):
    (root / "race" / race.NAME).write_text("[" * 200_000 + "]" * 200_000)
    _error(_rows(root, tmp_path, "L5"), "L5", "nested deeper")
    assert "Traceback" not in capsys.readouterr().err


# ------------------------------------------------------------------------------ pre-registration
def test_a_pre_registered_file_that_changed_is_an_error_naming_it_and_its_commit(root, tmp_path):
    check_registered_files("P6", root)  # as committed
    _edit(root, "plateau", "prediction_n400.json")(
        lambda t: t["predictions"]["adamw_escape"].update(interval=[10000.0, 40000.0]))
    rows = _rows(root, tmp_path, "P6", "P7")
    for claim_id in ("P6", "P7"):
        _error(rows, claim_id, "prediction_n400.json", "bd8a28f", "changed since its registration")


def test_registrations_list_files_with_their_hashes():
    from spt_theory.claims import records
    from spt_theory.claims.row import Registration

    registered = {row.id: row.registration.files for row in records.TABLE.values() if row.registration.files}
    assert set(registered) == {"P6", "P7"}
    with pytest.raises(ValueError, match="sha256"):
        Registration("pre", "abc", "abc", files=(("x.json", "not a hash"),))


# ------------------------------------------------------------------------------ race checkpoints
def _stage(tmp_path, key, name, history, model=None, epoch=None):
    from spt_theory.lra.runner import RunOptions, options_json
    from spt_theory.training.cache import StageState, save_checkpoint

    net = torch.nn.Linear(1, 1)
    options = RunOptions(task="pathfinder", data_dir=tmp_path, layers=1, overrides=race.OVERRIDES, seed=0,
                         finetune_epochs=race.SCRATCH_EPOCHS)
    meta = {"task": "pathfinder", "options": options_json(options), "stage": {"objective": "supervised"}}
    path = tmp_path / "cache" / key / name
    save_checkpoint(path, net, torch.optim.SGD(net.parameters(), lr=0.1),
                    StageState(len(history) if epoch is None else epoch, 0, 0.0, history), meta)
    if model is not None:
        ckpt = torch.load(path, weights_only=True)
        ckpt["model"] = model
        torch.save(ckpt, path)


POINT = {"epoch": 1, "seconds": 1.0, "val_accuracy": 0.9, "test_accuracy": 0.9}


@pytest.mark.parametrize("case", ["no weights", "history longer than the epoch", "epochs skipped"])
def test_the_race_refuses_checkpoints_it_cannot_check(case, tmp_path):
    history = [POINT, {**POINT, "epoch": 2}]
    if case == "no weights":
        _stage(tmp_path, "a", "epoch_2.pt", history, model={})
    elif case == "history longer than the epoch":
        _stage(tmp_path, "a", "epoch_1.pt", history, epoch=1)
    else:
        _stage(tmp_path, "a", "last.pt", [POINT, {**POINT, "epoch": 5}])
    with pytest.raises(InputError, match="not a run the race can trust"):
        race.find_stages(tmp_path)


def test_promote_checks_the_weights_are_the_race_models(tmp_path):
    _stage(tmp_path, "a", "epoch_1.pt", [POINT])
    assert set(race.find_stages(tmp_path)) == {(0, "scratch")}
    reference = {"encoder.weight": torch.zeros(64, 64)}
    with pytest.raises(InputError, match="not the race model's"):
        race.find_stages(tmp_path, reference)

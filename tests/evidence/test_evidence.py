"""The committed evidence travels with the package and is read through one schema: every claim
that reads evidence gives an ERROR row (never a recorded verdict) when its file is removed,
truncated, or has one field made impossible; a file made with other model settings is refused;
the evidence holds no machine path; a wheel carries it."""

import dataclasses
import json
import math
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

from spt_theory import evidence
from spt_theory.core.model import ModelConfig
from spt_theory.evidence import EvidenceError, schema, sweep_schema
from spt_theory.plateau import design
from spt_theory.verify import main

READERS = {
    "lra/listops.json": ("L1", "L2", "L3", "L4"),
    "lra/pathfinder.json": ("L1", "L2", "L3", "L4"),
    "plateau/plateau_runs.json": ("P1", "P2", "P3", "P3b", "P4", "P5", "P6", "P7"),
    "plateau/gradient_rms.json": ("P1", "P2", "P4", "P5"),
    "plateau/prediction_n400.json": ("P6", "P7"),
    "race/pathfinder16.json": ("L5",),
}
"""Every evidence file verify reads, and the claims that read it."""


def _nan_in_first_accuracy(tree: dict) -> None:
    """One field made impossible: the first accuracy-like number found becomes NaN-like (a string)."""
    if "cells" in tree:
        tree["cells"][0]["runs"][0]["test_accuracy"] = 5.0
    elif "arms" in tree:
        tree["arms"][0]["curve"][0]["val_accuracy"] = -0.1
    elif "predictions" in tree:
        tree["predictions"]["adamw_escape"]["steps"] = -1.0
    elif "runs" in tree:
        tree["runs"][0]["seed"] = "zero"
    else:
        first = next(iter(tree["rms"]["supervised"]))
        tree["rms"]["supervised"][first][0] = -1.0


DAMAGE = {
    "removed": lambda path: path.unlink(),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2]),
    "one field changed": lambda path: path.write_text(json.dumps(_edit(json.loads(path.read_text())))),
}


def _edit(tree):
    _nan_in_first_accuracy(tree)
    return tree


@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return root


def _rows(root, claims, tmp_path, capsys):
    report = tmp_path / "report.json"
    code = main(["--only", *claims, "--evidence", str(root), "--no-progress", "--json", str(report)])
    out = capsys.readouterr().out
    return code, {row["id"]: row for row in json.loads(report.read_text())["claims"]}, out


def test_the_committed_evidence_gives_every_recorded_verdict(copy, tmp_path, capsys):
    claims = sorted({c for ids in READERS.values() for c in ids})
    code, rows, _ = _rows(copy, claims, tmp_path, capsys)
    assert code == 0 and all(row["matches_record"] for row in rows.values()), {
        k: r["verdict"] for k, r in rows.items()}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", READERS)
def test_damaged_evidence_is_an_error_row_for_every_claim_that_reads_it(name, damage, copy, tmp_path, capsys):
    DAMAGE[damage](copy / name)
    code, rows, out = _rows(copy, READERS[name], tmp_path, capsys)
    assert code == 1
    for claim_id in READERS[name]:
        row = rows[claim_id]
        assert row["verdict"] == "ERROR" and row["matches_record"] is False, (claim_id, row["verdict"])
        assert Path(name).name in row["details"]["evidence_error"]
    assert "Traceback" not in out


def _drop_last_seed(row: dict) -> None:
    """A cell with one seed fewer, its own statistics consistent (only the seed set is wrong)."""
    row["runs"].pop()
    for value in row.values():
        if isinstance(value, dict) and "per_seed" in value:
            value["per_seed"].pop()
            value["mean"] = sum(value["per_seed"]) / len(value["per_seed"])
            if value.get("std") is not None:
                import statistics

                value["std"] = statistics.stdev(value["per_seed"]) if len(value["per_seed"]) > 1 else 0.0


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["cells"][1]["runs"][0].__setitem__("test_accuracy", math.nan),
     "cells[1].runs[0].test_accuracy: not a finite number"),
    (lambda t: t.__setitem__("schema_version", 2), "schema_version: schema version 2, this toolkit reads 1"),
    (lambda t: t["cells"].append(t["cells"][0]), "appears twice"),
    (lambda t: t.__setitem__("seeds", [0, 0, 0]), "seed 0 appears twice"),
    (lambda t: _drop_last_seed(t["cells"][1]), "are not the summary's seeds"),
    (lambda t: t["cells"][0]["runs"][0].__setitem__("test_accuracy", 5.0), "less than or equal to 1"),
    (lambda t: t["cells"][0]["test_accuracy"].__setitem__("mean", 0.9), "is not the mean of per_seed"),
    (lambda t: t["cells"][0]["runs"][0].__setitem__("seed", 7), "seeds [7, 1, 2]"),
])
def test_the_schema_names_the_field_of_impossible_evidence(edit, message):
    """One line naming the file and the field's path, for each kind of impossible evidence."""
    tree = json.loads(evidence.path("lra", "listops.json").read_text())
    edit(tree)
    with pytest.raises(EvidenceError) as error:
        schema.parse(json.dumps(tree), sweep_schema.SweepSummary, "listops.json")
    text = str(error.value)
    assert text.startswith("listops.json: ") and message in text and "\n" not in text


def test_a_duplicated_plateau_row_is_refused():
    tree = json.loads(design.SUMMARY.read_text())
    tree["runs"].append(next(r for r in tree["runs"] if r["length"] == 200))
    with pytest.raises(EvidenceError, match="appears twice"):
        schema.parse(json.dumps(tree), schema.PlateauRuns, "plateau_runs.json")


def test_evidence_made_with_other_model_defaults_is_refused(monkeypatch, copy, tmp_path, capsys):
    fields = [f.name for f in dataclasses.fields(ModelConfig)]
    defaults = list(ModelConfig.__init__.__defaults__)
    run = design.PlateauRun("scratch", length=25, seed=0)
    before = run.cache(tmp_path).key
    defaults[fields.index("d_model")] = 32
    monkeypatch.setattr(ModelConfig.__init__, "__defaults__", tuple(defaults))
    assert ModelConfig().d_model == 32
    assert run.cache(tmp_path).key != before  # the plateau key carries the model
    code, rows, _ = _rows(copy, ("P1", "L2", "L5"), tmp_path, capsys)
    assert code == 1 and rows["P1"]["verdict"] == "ERROR"  # the plateau runs took the model's defaults
    assert "evidence made at d_model=64; asked for d_model=32" in rows["P1"]["details"]["evidence_error"]
    assert rows["L2"]["verdict"] != "ERROR" and rows["L5"]["verdict"] != "ERROR"  # the LRA runs: their task config


def _strings(node):
    """Every string of a JSON tree but the per-example correctness bits (base64, which may begin with '/')."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key != "test_correct":
                yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def test_committed_evidence_holds_no_machine_path():
    found = [(str(p.relative_to(evidence.root())), s) for p in evidence.root().rglob("*.json")
             for s in _strings(json.loads(p.read_text())) if s.startswith(("/", "~")) or ":\\" in s]
    assert not found, found[:5]


def test_scrubbing_keeps_the_path_inside_the_run_folder():
    record = {"options": {"data_dir": "/m/data", "out": "/m/runs"}, "ckpt": "/m/runs/cache/k/epoch_1.pt", "n": 1}
    assert evidence.scrub_paths(record) == {"options": {"data_dir": "DATA_DIR", "out": "OUT"},
                                            "ckpt": "OUT/cache/k/epoch_1.pt", "n": 1}


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "pyproject.toml").exists(), reason="needs the source tree")
def test_a_wheel_carries_every_evidence_file(tmp_path):
    source = tmp_path / "source"  # a copy: building in the checkout would leave build/ behind
    for part in ("spt_theory", "synthetic"):
        shutil.copytree(REPO / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / part, source / part)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path), str(source)], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"no wheel could be built here: {built.stderr.strip().splitlines()[-1:]}")
    wheel = next(tmp_path.glob("*.whl"))
    inside = set(zipfile.ZipFile(wheel).namelist())
    committed = {f"spt_theory/evidence/{p.relative_to(evidence.root())}" for p in evidence.root().rglob("*")
                 if p.is_file() and p.suffix in (".json", ".txt")}
    assert committed and committed <= inside, sorted(committed - inside)[:5]


def test_set_d_model_changes_the_run_keys_and_refuses_evidence_made_with_another(copy, tmp_path, capsys):
    """``verify --set d_model=32``: the settings are a value passed down (``Context.model_settings``):
    the walk runs' models, hence their cache keys, carry them, and the committed evidence (made at
    width 64) is an ERROR row of one line naming both widths."""
    from spt_theory.walk.experiments import WalkData, recipe, stage_key

    spec = recipe("scratch", WalkData(), 0)
    wider = recipe("scratch", WalkData(), 0, d_model=32)
    assert wider.model.d_model == 32 and stage_key(wider, 0) != stage_key(spec, 0)
    assert schema.model_defaults({"d_model": 32})["d_model"] == 32 and schema.model_defaults()["d_model"] == 64
    code, rows, out = _rows(copy, ("P1", "L1", "L2", "--set", "d_model=32"), tmp_path, capsys)
    rows = {k: v for k, v in rows.items() if k in {"P1", "L1", "L2"}}  # --only selects by prefix: L1b too
    assert code == 1 and {r["verdict"] for r in rows.values()} == {"ERROR"} and set(rows) == {"P1", "L1", "L2"}
    for row in rows.values():
        assert "evidence made at d_model=64; asked for d_model=32" in row["details"]["evidence_error"]
    errors = [line for line in out.splitlines() if line.strip().startswith("ERROR:")]
    assert len(errors) >= 3 and all("d_model=64" in e and "d_model=32" in e for e in errors), out
    assert "model settings (--set): d_model=32" in out and "Traceback" not in out
    assert json.loads((tmp_path / "report.json").read_text())["model_settings"] == {"d_model": 32}
    assert recipe("scratch", WalkData(), 0) == spec  # nothing left behind: no global

"""The pooling factorial's learning-curve figure: median and range of the seeds per arm, drawn only
from evidence whose content is recorded (issue 56, item 6)."""

import hashlib
import json
from pathlib import Path

import pytest

from spt_theory.claims import records
from spt_theory.evidence import EvidenceError
from spt_theory.figures import pooling_factorial as pf
from spt_theory.figures.context import FigureContext, FigureSkipped

PACKAGE_L6F = Path(pf.__file__).resolve().parents[1] / "evidence" / "lra" / "decide" / "l6f.json"


def test_the_summary_is_the_median_and_range_of_the_seeds_at_each_step():
    curves = {1: [(500, 50.0), (1000, 60.0)], 2: [(500, 70.0), (1000, 90.0)], 3: [(500, 55.0)]}
    assert pf.summary(curves) == [{"step": 500, "median": 55.0, "low": 50.0, "high": 70.0, "seeds": 3},
                                  {"step": 1000, "median": 75.0, "low": 60.0, "high": 90.0, "seeds": 2}]


def _evidence_root(tmp_path: Path, monkeypatch, record: bool = True) -> Path:
    """An evidence folder holding fmax.json: the committed L6f runs relabelled as max pooling's
    proximity arm (16 epochs), its content recorded (``record``) in a patched EVIDENCE_HASHES."""
    found = json.loads(PACKAGE_L6F.read_text())
    found["experiment"] = "fmax"
    found["cells"][0]["cell"]["finetune_epochs"] = 16
    path = tmp_path / "lra" / "decide" / "fmax.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(found))
    if record:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        monkeypatch.setitem(records.EVIDENCE_HASHES, "lra/decide/fmax.json", (digest, "test"))
    else:
        monkeypatch.delitem(records.EVIDENCE_HASHES, "lra/decide/fmax.json", raising=False)
    return tmp_path


def test_a_recorded_pooling_is_drawn_and_the_missing_one_says_not_run(tmp_path, monkeypatch):
    root = _evidence_root(tmp_path, monkeypatch)
    paths = pf.pooling_factorial(FigureContext(out=tmp_path / "out", evidence_root=root))
    drawn = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    assert drawn["poolings"]["mean"]["arms"] == {}
    arm = drawn["poolings"]["max"]["arms"]["proximity"]
    assert arm["seeds"] == [600, 601, 602, 603]
    last = json.loads(PACKAGE_L6F.read_text())["cells"][0]["runs"]
    finals = sorted(100 * run["curve"][-1]["test_accuracy"] for run in last)
    end = arm["points"][-1]
    assert end["low"] == pytest.approx(finals[0]) and end["high"] == pytest.approx(finals[-1])


def test_an_unrecorded_file_is_an_error_never_a_figure(tmp_path, monkeypatch):
    root = _evidence_root(tmp_path, monkeypatch, record=False)
    with pytest.raises(EvidenceError, match="recorded nowhere"):
        pf.pooling_factorial(FigureContext(out=tmp_path / "out", evidence_root=root))
    assert not (tmp_path / "out").exists()


def test_an_edited_file_is_an_error_never_a_figure(tmp_path, monkeypatch):
    root = _evidence_root(tmp_path, monkeypatch)
    path = root / "lra" / "decide" / "fmax.json"
    path.write_text(path.read_text().replace('"written": "2026', '"written": "2025', 1))
    with pytest.raises(EvidenceError, match="differs from the content recorded"):
        pf.pooling_factorial(FigureContext(out=tmp_path / "out", evidence_root=root))
    assert not (tmp_path / "out").exists()


def test_no_evidence_at_all_skips_the_figure(tmp_path):
    with pytest.raises(FigureSkipped, match="no committed evidence"):
        pf.pooling_factorial(FigureContext(out=tmp_path / "out", evidence_root=tmp_path))


def test_the_table_is_the_median_and_range_at_the_best_validation_evaluation(tmp_path, monkeypatch):
    root = _evidence_root(tmp_path, monkeypatch)
    rows = pf.table_rows(pf.load_all(FigureContext(out=tmp_path / "out", evidence_root=root)))
    assert [(r["pooling"], r["arm"], r["seeds"]) for r in rows] == [("max", "proximity", [600, 601, 602, 603])]
    from spt_theory.lra.curves import best_within
    runs = json.loads(PACKAGE_L6F.read_text())["cells"][0]["runs"]
    assert rows[0]["at_common"] == [100 * best_within(run["curve"], 8_000) for run in runs]
    line = pf.markdown_table(rows).splitlines()[-1]
    values = sorted(rows[0]["at_budget"])
    assert line.startswith("| max | proximity2d init | 600-603 (4) | ")
    assert f"[{values[0]:.1f}, {values[-1]:.1f}]" in line


def test_the_two_layer_arms_are_rows_below_the_poolings_where_their_evidence_is_recorded(tmp_path, monkeypatch):
    """L7f's fdepth arms (mean pooling, 2 layers) are table rows of their own, after both poolings'."""
    root = _evidence_root(tmp_path, monkeypatch)
    found = json.loads(PACKAGE_L6F.read_text())
    found["experiment"] = "fdepth"
    found["cells"][0]["cell"].update(init="default", layers=2, finetune_epochs=24)
    path = root / "lra" / "decide" / "fdepth.json"
    path.write_text(json.dumps(found))
    monkeypatch.setitem(records.EVIDENCE_HASHES, "lra/decide/fdepth.json",
                        (hashlib.sha256(path.read_bytes()).hexdigest(), "test"))
    rows = pf.table_rows(pf.load_all(FigureContext(out=tmp_path / "out", evidence_root=root)))
    assert [(r["pooling"], r["arm"]) for r in rows] == [("max", "proximity"), ("mean, 2 layers", "scratch")]
    assert pf.markdown_table(rows).splitlines()[-1].startswith("| mean, 2 layers | scratch | 600-603 (4) | ")
    path.write_text(path.read_text().replace('"fdepth"', '"fdepth" ', 1))
    with pytest.raises(EvidenceError, match="differs from the content recorded"):
        pf.table_rows(pf.load_all(FigureContext(out=tmp_path / "out", evidence_root=root)))


def test_the_results_page_holds_the_table_the_committed_evidence_gives():
    page = (Path(pf.__file__).resolve().parents[2] / "docs" / "results-lra.md").read_text()
    loaded = pf.load_all(FigureContext())
    table = pf.page_text(pf.table_rows(loaded), pf.interaction(loaded))
    assert table in page, "docs/results-lra.md's factorial table is not the one the evidence gives " \
                          "(python -m spt_theory.figures --only pooling_factorial writes figures/pooling_factorial.md)"



def test_the_descriptive_interaction_is_the_four_arm_contrast_of_the_common_seeds(tmp_path):
    """On the committed evidence: I per seed = (SPT - scratch) under mean - (SPT - scratch) under
    max, each arm's test accuracy at its best validation evaluation within 8,000 steps; I is their
    mean over the seeds all four arms have.  Absent while a pooling has no evidence."""
    from spt_theory.checks import lra_sequential as base

    loaded = pf.load_all(FigureContext())
    found = pf.interaction(loaded)
    rows = {(p, a): base.cell(loaded[p][0], specs[a]) for p, _, specs, _ in pf.POOLINGS for a in ("spt", "scratch")}
    assert found["seeds"] == sorted(base.seeds_in(*rows.values())) and len(found["seeds"]) >= 2
    for seed in found["seeds"]:
        acc = {key: base.accuracy(row, seed, 8_000) for key, row in rows.items()}
        expected = (acc["mean", "spt"] - acc["mean", "scratch"]) - (acc["max", "spt"] - acc["max", "scratch"])
        assert found["interaction"]["per_seed"][seed] == pytest.approx(expected, abs=0.006)  # rounded to 0.01
    assert found["interaction"]["value"] == pytest.approx(
        sum(found["interaction"]["per_seed"].values()) / len(found["seeds"]), abs=0.011)
    assert pf.interaction({"mean": loaded["mean"], "max": (None, tmp_path)}) is None


def test_the_interaction_is_named_l9fs_look_only_on_its_registered_seeds():
    """On the registered seeds 600-607 of both poolings the line is L9f's look, with verify's
    interval; on fewer seeds it says it is descriptive, not the look."""
    import copy

    from spt_theory import evidence
    from spt_theory.checks import lra_pooling as rules
    from spt_theory.claims.registry import Context

    loaded = pf.load_all(FigureContext())
    found = pf.interaction(loaded)
    assert found["seeds"] == list(rules.EIGHT) and found["text"].startswith("L9f's registered look")
    judged = rules.verdict(Context(lra_evidence=evidence.root() / "lra"), "L9f")[2]["difference"]
    assert found["interaction"]["interval"] == judged["interval"]
    fewer = {}
    for pooling, _, _, _ in pf.POOLINGS:
        data, path = copy.deepcopy(loaded[pooling][0]), loaded[pooling][1]
        for row in data["cells"]:
            row["runs"] = [run for run in row["runs"] if run["seed"] < 606]
        fewer[pooling] = (data, path)
    partial = pf.interaction(fewer)
    assert partial["seeds"] == list(range(600, 606)) and partial["text"].startswith("Descriptive, not L9f's")

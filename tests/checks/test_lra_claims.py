"""Claims L1-L4 judge committed sweep summaries per task: each can pass and fail, reads scratch at
equal steps with the neutral (mean-of-ties) selection, pairs arms by seed id, and is INCONCLUSIVE
where the control (or, for the claims about SPT's arms, SPT) did not learn, no arm learned or no
model has headroom (the gain claims L1, L4), or the interval covers the threshold.  No evidence,
or evidence without per-example correctness, is an ERROR, never a verdict."""

import json

import numpy as np
import pytest

from spt_theory import stats
from spt_theory.checks import lra
from spt_theory.checks.lra import check_l1, check_l2, check_l3, check_l4
from spt_theory.claims.registry import Context
from spt_theory.evidence import EvidenceError, correctness
from spt_theory.evidence.schema import model_defaults
from spt_theory.lra.sweep_cells import DEFAULTS

CHECKS = (check_l1, check_l2, check_l3, check_l4)
REFS = {"marginal": 1.0, "neighbour": 0.6}
N_TEST = 10_000
"""The test split; accuracies of the fixtures are whole numbers of its examples."""


def _correct(accuracy: float) -> dict:
    """The first accuracy x N_TEST examples right: every arm gets the easy examples first."""
    return correctness.encode(np.arange(N_TEST) < round(accuracy * N_TEST))


def _curve(accuracy, epochs, start=0, per_epoch=10):
    """A run whose test (and validation) accuracy after epoch e is accuracy(e)."""
    return [{"epoch": e, "step": start + e * per_epoch, "val_accuracy": accuracy(e),
             "test_accuracy": round(accuracy(e) * N_TEST) / N_TEST, "test_correct": _correct(accuracy(e))}
            for e in range(1, epochs + 1)]


def _stat(values):
    return {"per_seed": values, "mean": sum(values) / len(values)}


def _row(accuracies, ratios, spt_ratios=None, epochs=2, pretrain=0, scratch_late=None, seeds=(0, 1, 2), **axes):
    cell = {**DEFAULTS, **axes}
    runs = []
    for s, a, r in zip(seeds, accuracies, ratios):
        curve = _curve(lambda e, a=a: a if scratch_late is None or e <= epochs // 2 else scratch_late,
                       epochs, pretrain * 10)
        run = {"seed": s, "pretrain_steps": pretrain * 10, "curve": curve, "test_accuracy": curve[-1]["test_accuracy"],
               "val_accuracy": curve[-1]["val_accuracy"], "best_epoch": epochs, "band_ratio": r}
        runs.append(run)
    row = {"label": cell["recipe"], "cell": cell, "runs": runs,
           "test_accuracy": _stat([run["test_accuracy"] for run in runs]), "band_ratio": _stat(list(ratios))}
    if spt_ratios is not None:
        for run, r in zip(runs, spt_ratios):
            run["spt_band_ratio"], run["spt_val_loss"] = r, 0.7
        row["spt_band_ratio"], row["spt_val_loss"] = _stat(list(spt_ratios)), _stat([0.7] * len(runs))
    return row


def summary(task, scratch, spt, frozen, hybrid, scratch_ratio=1.0, spt_ratio=(3.0, 3.1, 2.9), control=0.9,
            spt_loss=0.7, scratch_late=None, majority=0.2):
    cells = [_row(scratch, [scratch_ratio] * 3, recipe="scratch", finetune_epochs=4, epochs=4,
                  scratch_late=scratch_late),
             _row(spt, [1.2] * 3, list(spt_ratio), pretrain=2), _row(frozen, [1.0] * 3, recipe="scratch", freeze="qk"),
             _row(hybrid, [1.1] * 3, [2.0] * 3, pretrain=2, keep="qk")]
    cells[1]["spt_val_loss"] = _stat([spt_loss] * 3)
    for run in cells[1]["runs"]:
        run["spt_val_loss"] = spt_loss
    kind = lra.CONTROLS[task]
    control_runs = [{"seed": s, "curve": _curve(lambda e: control, 4), "test_accuracy": control,
                     "val_accuracy": control, "best_epoch": 4} for s in (0, 1, 2)]
    controls = {kind: {"test_accuracy": _stat([control] * 3), "runs": control_runs},
                "majority": {"test_accuracy": majority}, "bag": {"test_accuracy": 0.3}}
    return {"schema_version": 1, "task": task, "seeds": [0, 1, 2], "options": {},
            "config": {"task": task, "masking": "token", "num_classes": 2},
            "cells": cells, "controls": controls, "references": REFS, "model_defaults": model_defaults(),
            "data": {"fingerprint": "f", "width": 8, "n_train": 100, "n_val": 10, "n_test": N_TEST}}


def _write(folder, task, *args, **kwargs):
    (folder / f"{task}.json").write_text(json.dumps(summary(task, *args, **kwargs)))


GOOD = ([0.5, 0.5, 0.52], [0.7, 0.72, 0.71], [0.5, 0.5, 0.52], [0.65, 0.66, 0.64])


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    monkeypatch.setattr(lra, "SETTINGS", {task: {"pretrain_epochs": 2, "finetune_epochs": 2, "scratch_epochs": 4}
                                          for task in lra.TASKS})
    return Context(lra_evidence=tmp_path)


def test_every_claim_passes_on_evidence_that_shows_the_paper(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    results = [check(ctx) for check in CHECKS]
    assert all(r.verdict == "PASS" for r in results), [r.lines for r in results]
    tasks = [[line for line in r.lines if "setting's gate" not in line] for r in results]  # gate lines apart
    assert all(len(t) == 2 and t[0].startswith("listops: PASS") for t in tasks)
    assert "lstm learned 90.0%" in results[0].lines[0]
    assert "SPT learned (closed 75% of a 0.400-nat (40.0% of the marginal) gap)" in results[0].lines[0]
    assert "95% t, " in results[0].lines[0]


def test_each_claim_fails_where_its_prediction_does_not_hold(ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    # listops: no gain, weak proximity, frozen much better, (L4: no gain to recover)
    _write(tmp_path, "listops", [0.60, 0.61, 0.60], [0.60, 0.61, 0.60], [0.75, 0.76, 0.74], [0.41, 0.41, 0.41],
           scratch_ratio=1.1, spt_ratio=(1.2, 1.25, 1.2))
    for check in (check_l1, check_l2, check_l3):
        result = check(ctx)
        assert result.verdict == "FAIL" and result.details["pathfinder"]["verdict"] == "PASS"
        assert result.details["listops"]["verdict"] == "FAIL"
    assert check_l4(ctx).details["listops"]["verdict"] == "INCONCLUSIVE"
    # L4 fails where SPT gains and the hybrid recovers nothing
    _write(tmp_path, "listops", *GOOD[:3], [0.5, 0.5, 0.51])
    assert check_l4(ctx).verdict == "FAIL"


def test_scratch_is_read_at_spt_total_steps_so_a_late_scratch_cancels_the_gain(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD, scratch_late=0.75)
    result = check_l1(ctx)
    assert result.verdict == "FAIL" and result.details["listops"]["scratch_equal_steps"] == {0: 75.0, 1: 75.0, 2: 75.0}
    assert result.details["listops"]["scratch_equal_supervised_steps"] == {0: 50.0, 1: 50.0, 2: 52.0}


@pytest.mark.parametrize("change, reason, gated", [
    ({"control": 0.33}, "control lstm did not learn", CHECKS),
    ({"spt_loss": 0.9}, "SPT did not learn", (check_l1, check_l2, check_l4))])
def test_a_setting_whose_control_or_spt_did_not_learn_is_inconclusive(change, reason, gated, ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    _write(tmp_path, "listops", *GOOD, **change)
    for check in gated:
        result = check(ctx)
        assert result.verdict == "INCONCLUSIVE" and reason in result.inconclusive
        assert result.details["pathfinder"]["verdict"] == "PASS"
    if check_l3 not in gated:  # the SPT gate is for the claims about SPT's arms: L3 has none
        assert check_l3(ctx).verdict == "PASS"


def test_no_arm_learned_and_no_headroom_are_inconclusive_not_fail(ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    # every Transformer arm below chance + 10 points: nothing can be said of SPT
    _write(tmp_path, "listops", [0.25] * 3, [0.24] * 3, [0.22] * 3, [0.25] * 3, majority=0.22)
    for check in (check_l1, check_l4):
        result = check(ctx)
        assert result.verdict == "INCONCLUSIVE" and "no arm learned at this budget" in result.inconclusive
    result = check_l3(ctx)  # L3's own gate: scratch near chance is no comparison
    assert result.verdict == "INCONCLUSIVE" and "is not 5 pts above the majority class" in result.inconclusive
    # scratch learned but no model beats it by 5 points (the control is no better)
    _write(tmp_path, "listops", [0.60] * 3, [0.59, 0.6, 0.58], [0.5] * 3, [0.6] * 3, control=0.62)
    result = check_l1(ctx)
    assert result.verdict == "INCONCLUSIVE" and "no headroom: no model passes 62.0%" in result.inconclusive


def test_no_headroom_does_not_hide_a_harm_l3_is_judged_by_its_interval(ctx, tmp_path):
    """The headroom rule is for gain claims: frozen 10 points below scratch with no model above
    scratch is a FAIL of L3 (|D| <= 3), not INCONCLUSIVE."""
    _write(tmp_path, "pathfinder", *GOOD)
    _write(tmp_path, "listops", [0.60] * 3, [0.59, 0.6, 0.58], [0.50, 0.49, 0.51], [0.6] * 3, control=0.62)
    assert "no headroom" in check_l1(ctx).inconclusive
    result = check_l3(ctx)
    assert result.verdict == "FAIL" and result.details["listops"]["difference"]["interval"][1] < -3


def test_noise_that_covers_the_threshold_is_inconclusive_and_the_interval_is_printed(ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    # mean gain 3 points, seeds spread widely: the interval contains 2
    _write(tmp_path, "listops", [0.5, 0.5, 0.5], [0.45, 0.56, 0.58], *GOOD[2:])
    result = check_l1(ctx)
    assert result.verdict == "INCONCLUSIVE" and "the interval covers the threshold" in result.inconclusive
    gain = result.details["listops"]["gain"]
    assert gain["interval"][0] < 2 < gain["interval"][1] and "(95% t, " in result.lines[0]


def test_the_interval_is_the_paired_one_on_the_shared_test_examples(ctx, tmp_path):
    """L1's interval is stats.paired_difference of the decoded per-example correctness: seeds with
    k - 1 = 2 df when every seed errs on the same examples, and a test term beside it."""
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    gain = check_l1(ctx).details["listops"]["gain"]
    spt = {s: np.arange(N_TEST) < round(a * N_TEST) for s, a in zip((0, 1, 2), GOOD[1])}
    scratch = {s: np.arange(N_TEST) < round(a * N_TEST) for s, a in zip((0, 1, 2), GOOD[0])}
    expected = stats.paired_difference([(1, spt), (-1, scratch)])
    assert gain["interval"] == pytest.approx([expected.low, expected.high])
    assert gain["se_parts"]["test"] > 0 and gain["df"] >= 2 and "Satterthwaite" in gain["method"]


def test_arms_are_paired_by_seed_id_not_by_position(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    before = check_l1(ctx).details["listops"]["gain"]["per_seed"]
    data = json.loads((tmp_path / "listops.json").read_text())
    data["cells"][1]["runs"].reverse()  # SPT's runs listed 2, 1, 0
    data["cells"][1]["test_accuracy"] = _stat([run["test_accuracy"] for run in data["cells"][1]["runs"]])
    data["cells"][1]["spt_band_ratio"] = _stat([run["spt_band_ratio"] for run in data["cells"][1]["runs"]])
    data["cells"][1]["band_ratio"] = _stat([run["band_ratio"] for run in data["cells"][1]["runs"]])
    data["cells"][1]["spt_val_loss"] = _stat([run["spt_val_loss"] for run in data["cells"][1]["runs"]])
    (tmp_path / "listops.json").write_text(json.dumps(data))
    assert check_l1(ctx).details["listops"]["gain"]["per_seed"] == before


def test_ties_are_read_at_their_mean_and_the_other_rules_are_kept(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    data = json.loads((tmp_path / "listops.json").read_text())
    for run in data["cells"][1]["runs"]:  # SPT: two epochs tie on validation, test 0.6 then 0.8
        run["curve"][0].update(val_accuracy=0.9, test_accuracy=0.6, test_correct=_correct(0.6))
        run["curve"][1].update(val_accuracy=0.9, test_accuracy=0.8, test_correct=_correct(0.8))
        run.update(val_accuracy=0.9, test_accuracy=0.8)  # the stored run: its best epoch (the last of the tie)
    data["cells"][1]["test_accuracy"] = _stat([run["test_accuracy"] for run in data["cells"][1]["runs"]])
    (tmp_path / "listops.json").write_text(json.dumps(data))
    details = check_l1(ctx).details["listops"]
    assert details["spt"] == {0: pytest.approx(70.0), 1: pytest.approx(70.0), 2: pytest.approx(70.0)}
    assert details["other_rules"]["spt"]["first"][0] == pytest.approx(60.0)
    assert details["other_rules"]["spt"]["last"][0] == pytest.approx(80.0)


def test_no_evidence_is_an_error_never_a_verdict(ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    for check in CHECKS:
        with pytest.raises(EvidenceError, match="listops.json: missing"):
            check(ctx)


def test_evidence_without_per_example_correctness_is_an_error(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    data = json.loads((tmp_path / "listops.json").read_text())
    for cell in data["cells"]:
        for run in cell["runs"]:
            for point in run["curve"]:
                point.pop("test_correct")
    (tmp_path / "listops.json").write_text(json.dumps(data))
    for check in (check_l1, check_l3, check_l4):
        with pytest.raises(EvidenceError, match="test_correct: missing"):
            check(ctx)
    assert check_l2(ctx).verdict == "PASS"  # L2 reads ratios, not accuracies

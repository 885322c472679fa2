"""Claims L1-L4 judge committed sweep summaries: each can pass and fail, reads scratch at equal
steps, is INCONCLUSIVE where the control or SPT did not learn, and fails without evidence."""

import json

import pytest

from spt_theory.checks import lra
from spt_theory.checks.lra import check_l1, check_l2, check_l3, check_l4
from spt_theory.claims import Context

CHECKS = (check_l1, check_l2, check_l3, check_l4)
REFS = {"marginal": 1.0, "neighbour": 0.6}


def _curve(accuracy, epochs, start=0, per_epoch=10):
    """A run whose test (and validation) accuracy after epoch e is accuracy(e)."""
    return [{"epoch": e, "step": start + e * per_epoch, "val_accuracy": accuracy(e), "test_accuracy": accuracy(e)}
            for e in range(1, epochs + 1)]


def _row(accuracies, ratio, spt_ratio=None, epochs=2, pretrain=0, scratch_late=None, **axes):
    cell = {**lra.DEFAULTS, **axes}
    runs = [{"seed": s, "pretrain_steps": pretrain * 10,
             "curve": _curve(lambda e, a=a: a if scratch_late is None or e <= epochs // 2 else scratch_late,
                             epochs, pretrain * 10)} for s, a in enumerate(accuracies)]
    row = {"label": cell["recipe"], "cell": cell, "runs": runs,
           "test_accuracy": {"per_seed": accuracies, "mean": sum(accuracies) / len(accuracies)},
           "band_ratio": {"mean": ratio}}
    if spt_ratio is not None:
        row["spt_band_ratio"] = {"mean": spt_ratio}
        row["spt_val_loss"] = {"mean": 0.7}
    return row


def _write(folder, task, scratch, spt, frozen, hybrid, scratch_ratio=1.0, spt_ratio=3.0, control=0.9,
           spt_loss=0.7, scratch_late=None):
    cells = [_row(scratch, scratch_ratio, recipe="scratch", finetune_epochs=4, epochs=4, scratch_late=scratch_late),
             _row(spt, 1.2, spt_ratio, pretrain=2), _row(frozen, 1.0, recipe="scratch", freeze="qk"),
             _row(hybrid, 1.1, 2.0, pretrain=2, keep="qk")]
    cells[1]["spt_val_loss"]["mean"] = spt_loss
    kind = lra.CONTROLS[task]
    controls = {kind: {"test_accuracy": {"mean": control}, "runs": []}, "majority": {"test_accuracy": 0.2},
                "bag": {"test_accuracy": {"mean": 0.3}, "runs": []}}
    (folder / f"{task}.json").write_text(json.dumps({
        "task": task, "seeds": [0, 1, 2], "cells": cells, "controls": controls, "references": REFS,
        "data": {"n_train": 100}}))


GOOD = ([0.5, 0.5, 0.52], [0.7, 0.72, 0.71], [0.51, 0.5, 0.5], [0.65, 0.66, 0.6])


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    monkeypatch.setattr(lra, "SETTINGS", {task: {"pretrain_epochs": 2, "finetune_epochs": 2, "scratch_epochs": 4}
                                          for task in lra.TASKS})
    return Context(lra_evidence=tmp_path)


def test_every_claim_passes_on_evidence_that_shows_the_paper(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD)
    results = [check(ctx) for check in CHECKS]
    assert all(r.verdict == "PASS" for r in results), [r.measured for r in results]
    assert "lstm learned 90.0%" in results[0].measured and "SPT learned (gap 75%)" in results[0].measured


def test_each_claim_fails_where_its_prediction_does_not_hold(ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    # listops: SPT behind on one seed, weak proximity, frozen much better, hybrid recovers little
    _write(tmp_path, "listops", [0.40, 0.40, 0.40], [0.50, 0.50, 0.39], [0.47, 0.46, 0.45], [0.41, 0.41, 0.41],
           scratch_ratio=1.1, spt_ratio=1.4)
    for check in CHECKS:
        result = check(ctx)
        assert result.verdict == "FAIL" and result.details["pathfinder"]["passed"]
        assert not result.details["listops"]["passed"]


def test_scratch_is_read_at_spt_total_steps_so_a_late_scratch_cancels_the_gain(ctx, tmp_path):
    for task in lra.TASKS:
        _write(tmp_path, task, *GOOD, scratch_late=0.75)
    result = check_l1(ctx)
    assert result.verdict == "FAIL" and result.details["listops"]["scratch_equal_steps"] == [75.0] * 3
    assert result.details["listops"]["scratch_equal_supervised_steps"] == [50.0, 50.0, 52.0]


@pytest.mark.parametrize("change, reason", [({"control": 0.33}, "control lstm did not learn"),
                                            ({"spt_loss": 0.9}, "SPT did not learn")])
def test_a_setting_whose_control_or_spt_did_not_learn_is_inconclusive(change, reason, ctx, tmp_path):
    _write(tmp_path, "pathfinder", *GOOD)
    _write(tmp_path, "listops", *GOOD, **change)
    for check in CHECKS:
        result = check(ctx)
        assert result.verdict == "INCONCLUSIVE" and reason in result.inconclusive
        assert result.details["pathfinder"]["verdict"] == "PASS"
    # a task that can decide and fails outweighs one that cannot decide
    _write(tmp_path, "pathfinder", [0.5] * 3, [0.5] * 3, [0.1] * 3, [0.5] * 3, spt_ratio=1.0)
    assert all(check(ctx).verdict == "FAIL" for check in CHECKS if check is not check_l4)


def test_no_gain_leaves_nothing_to_recover_and_no_evidence_fails(ctx, tmp_path):
    assert check_l1(ctx).verdict == "FAIL" and "no evidence" in check_l1(ctx).measured
    for task in lra.TASKS:
        _write(tmp_path, task, [0.4] * 3, [0.41] * 3, [0.4] * 3, [0.41] * 3)
    result = check_l4(ctx)
    assert result.verdict == "INCONCLUSIVE" and "no gain to recover" in result.measured

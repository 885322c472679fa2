"""Claims L1-L4 judge committed sweep summaries: each can pass, fail, and fails without evidence."""

import json

import pytest

from spt_theory.checks.lra import check_l1, check_l2, check_l3, check_l4
from spt_theory.claims import Context


def _row(recipe, accuracies, ratio, spt_ratio=None, **axes):
    cell = {"recipe": recipe, "pretrain_epochs": None, "layers": None, "freeze": "none", "keep": "all",
            "pretrain_task": "self", **axes}
    row = {"label": recipe, "cell": cell, "test_accuracy": {"per_seed": accuracies},
           "band_ratio": {"mean": ratio}}
    if spt_ratio is not None:
        row["spt_band_ratio"] = {"mean": spt_ratio}
    return row


def _write(folder, task, scratch, spt, frozen, hybrid, scratch_ratio=1.0, spt_ratio=3.0):
    cells = [_row("scratch", scratch, scratch_ratio), _row("spt", spt, 1.2, spt_ratio),
             _row("scratch", frozen, 1.0, freeze="qk"), _row("spt", hybrid, 1.1, 2.0, keep="qk")]
    (folder / f"{task}.json").write_text(json.dumps({"task": task, "seeds": [0, 1, 2], "cells": cells}))


@pytest.fixture
def ctx(tmp_path):
    return Context(lra_evidence=tmp_path)


def test_every_claim_passes_on_evidence_that_shows_the_paper(ctx, tmp_path):
    for task in ("listops", "pathfinder"):
        _write(tmp_path, task, [0.5, 0.5, 0.52], [0.7, 0.72, 0.71], [0.51, 0.5, 0.5], [0.65, 0.66, 0.6])
    assert all(check(ctx).passed for check in (check_l1, check_l2, check_l3, check_l4))


def test_each_claim_fails_where_its_prediction_does_not_hold(ctx, tmp_path):
    _write(tmp_path, "pathfinder", [0.5, 0.5, 0.52], [0.7, 0.72, 0.71], [0.51, 0.5, 0.5], [0.65, 0.66, 0.6])
    # listops: SPT behind on one seed, weak proximity, frozen much better, hybrid recovers little
    _write(tmp_path, "listops", [0.40, 0.40, 0.40], [0.50, 0.50, 0.39], [0.47, 0.46, 0.45], [0.41, 0.41, 0.41],
           scratch_ratio=1.1, spt_ratio=1.4)
    for check in (check_l1, check_l2, check_l3, check_l4):
        result = check(ctx)
        assert not result.passed and result.details["pathfinder"]["passed"]
        assert not result.details["listops"]["passed"]


def test_no_gain_means_nothing_to_recover_and_no_evidence_fails(ctx, tmp_path):
    assert not check_l1(ctx).passed and "no evidence" in check_l1(ctx).measured
    _write(tmp_path, "listops", [0.4] * 3, [0.41] * 3, [0.4] * 3, [0.41] * 3)
    _write(tmp_path, "pathfinder", [0.4] * 3, [0.41] * 3, [0.4] * 3, [0.41] * 3)
    result = check_l4(ctx)
    assert not result.passed and "no gain to recover" in result.measured

"""Every figure renders from tiny runs into PNG + PDF + JSON; --only selects; LRA table skips cleanly."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from spt_theory.experiments import Budget, WalkData
from spt_theory.figures import ablations, cli, context as figure_context, lra_evidence, lra_table
from spt_theory.figures.registry import FIGURES
from spt_theory.io import InputError

TINY_DATA = WalkData(vocab=5, length=12, p=0.9, n_train=96, n_test=32)
TINY_BUDGET = Budget(scratch_epochs=2, pretrain_epochs=2, finetune_epochs=1, batch_size=32)
TINY_MODEL = dict(d_model=16, n_heads=2, d_ff=32)
DRAWN = [name for name in FIGURES if name not in ("lra_table", "lra_evidence")]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


def tiny_context(cache: Path, out: Path, **kw) -> figure_context.FigureContext:
    return figure_context.FigureContext(data=TINY_DATA, budget=TINY_BUDGET, model=dict(TINY_MODEL), seeds=(0, 1),
                                 cache_dir=cache, out=out, progress=False, sweep=(1, 2), t3_count=3,
                                 lra_results=out / "no-lra-results", **kw)


@pytest.fixture(scope="module")
def context(cache, tmp_path_factory) -> figure_context.FigureContext:
    return tiny_context(cache, tmp_path_factory.mktemp("figures"))


def assert_written(out: Path, name: str) -> dict:
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        assert path.stat().st_size > 1000, path
    assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    record = json.loads((out / f"{name}.json").read_text())
    assert record["figure"] == name and record["seeds"] == [0, 1]
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporary files
    return record


@pytest.mark.parametrize("name", DRAWN)
def test_figure_renders(context, name):
    paths = FIGURES[name].draw(context)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    record = assert_written(context.out, name)
    text = json.dumps(record)
    if name != "gradient_blindness":  # every trained-run figure names its runs by config hash
        assert "config_hash" in text and "stage_keys" in text


def test_plotted_numbers_come_from_the_runs(context):
    FIGURES["ablations"].draw(context)
    record = json.loads((context.out / "ablations.json").read_text())
    scratch = next(b for b in record["bars"] if b["recipe"] == "scratch")["test_accuracy_percent"]
    runs = [context.result("scratch", s) for s in context.seeds]
    assert scratch["per_seed"] == pytest.approx([100 * r.final["test_accuracy"] for r in runs])


def test_lra_table_skipped_without_results(context):
    with pytest.raises(figure_context.FigureSkipped, match="no LRA results"):
        lra_table.lra_table(context)


def test_lra_table_from_result_json(cache, tmp_path):
    result = {"kind": "scratch", "task": "listops", "seed": 0,
              "options": {"keep": [], "freeze": [], "tiny": True},
              "config": {"layers": 1, "d_model": 16}, "metrics": {"test_accuracy": 0.3, "epochs_run": 2},
              "stages": [{"objective": "supervised"}], "data": {"fingerprint": "x"}, "model": {}}
    (tmp_path / "res" / "listops").mkdir(parents=True)
    (tmp_path / "res" / "listops" / "scratch-0.json").write_text(json.dumps(result))
    ctx = tiny_context(cache, tmp_path / "out", )
    ctx.lra_results = tmp_path / "res"
    lra_table.lra_table(ctx)
    record = assert_written(ctx.out, "lra_table")
    assert record["rows"][0]["test_accuracy_percent"]["mean"] == pytest.approx(30.0)


def test_cli_only_selects_and_skips_lra(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figure_context, "DEFAULT_DATA", TINY_DATA)
    monkeypatch.setattr(figure_context, "DEFAULT_BUDGET", TINY_BUDGET)
    monkeypatch.setattr(figure_context, "DEFAULT_MODEL", TINY_MODEL)
    monkeypatch.setattr(figure_context, "DEFAULT_SWEEP", (1, 2))
    out = tmp_path / "out"
    code = cli.main(["--only", "pe_toeplitz", "lra_table", "--seeds", "0", "1", "--cache-dir", str(cache),
                         "--out", str(out), "--lra-results", str(tmp_path / "none"), "--no-progress"])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["pe_toeplitz.json", "pe_toeplitz.pdf", "pe_toeplitz.png"]
    printed = capsys.readouterr().out
    assert "lra_table: skipped (no LRA results" in printed


def test_cli_fresh_uses_a_new_cache(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figure_context, "DEFAULT_DATA", TINY_DATA)
    monkeypatch.setattr(figure_context, "DEFAULT_BUDGET", TINY_BUDGET)
    monkeypatch.setattr(figure_context, "DEFAULT_MODEL", TINY_MODEL)
    base = tmp_path / "runs"
    code = cli.main(["--only", "pe_toeplitz", "--seeds", "0", "--cache-dir", str(base), "--fresh",
                         "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    fresh = [p for p in base.iterdir() if p.name.startswith("fresh-")]
    assert len(fresh) == 1 and any(fresh[0].iterdir())
    assert "training pretrain seed 0" in capsys.readouterr().out
    shutil.rmtree(base)


def test_cli_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for name in FIGURES:
        assert name in text
    with pytest.raises(SystemExit) as done:
        cli.main(["--only", "no_such_figure"])
    assert done.value.code == 2
    assert cli.main(["--seeds", "-1"]) == 2


def test_control_runs_match_verify():
    """The ablation figure's control bars are the very runs (same specs, so same cache) of X1-X5."""
    controls = pytest.importorskip("spt_theory.checks.controls")
    ctx = figure_context.FigureContext(seeds=(0,))
    entries = ablations.control_entries(ctx)
    assert entries, "controls module present but no control run found"
    for _, name in entries:
        assert ablations.control_spec(ctx, name, 0) == controls.control_spec(name, 0)


def test_lra_evidence_redraws_committed_sweeps_or_skips(context, tmp_path):
    out = tmp_path / "figs"
    with pytest.raises(figure_context.FigureSkipped, match="no committed LRA sweep"):
        lra_evidence.lra_evidence(dataclasses.replace(context, out=out))
    (out / "lra").mkdir(parents=True)
    summary = {"task": "listops", "seeds": [0, 1], "config": {"num_classes": 10},
               "data": {"width": 40, "n_train": 100},
               "cells": [{"label": "scratch", "cell": {"recipe": "scratch"},
                          "test_accuracy": {"per_seed": [0.2, 0.3], "mean": 0.25, "std": 0.07},
                          "band_ratio": {"per_seed": [1.0, 1.1], "mean": 1.05, "std": 0.07}},
                         {"label": "spt", "cell": {"recipe": "spt"},
                          "test_accuracy": {"per_seed": [0.4, 0.5], "mean": 0.45, "std": 0.07},
                          "band_ratio": {"per_seed": [2.0, 2.2], "mean": 2.1, "std": 0.1},
                          "spt_band_ratio": {"per_seed": [5.0, 6.0], "mean": 5.5, "std": 0.7}}]}
    (out / "lra/listops.json").write_text(json.dumps(summary))
    paths = lra_evidence.lra_evidence(dataclasses.replace(context, out=out))
    assert sorted(p.name for p in paths) == ["listops.pdf", "listops.png"]
    assert (out / "lra/listops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (out / "lra/listops.json").write_text(json.dumps({"task": "listops"}))
    with pytest.raises(InputError, match="not an LRA sweep summary"):
        lra_evidence.lra_evidence(dataclasses.replace(context, out=out))

"""Every figure renders from tiny runs into PNG + PDF + JSON; --only selects; LRA table skips cleanly;
the paper figures' numbers are those of the runs and probes they name."""

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import pytest
import torch
from helpers import REPO

from spt_theory.analysis import probes
from spt_theory.analysis.gradient_shares import chance_share, supervised_share
from spt_theory.figures import ablations, cli, lra_evidence, lra_table
from spt_theory.figures import context as figure_context
from spt_theory.figures.registry import FIGURES
from spt_theory.figures.score_gradients import init_gradients, rank_one_share
from spt_theory.theory.patterns import proximity_directions
from spt_theory.training.cache import config_hash
from spt_theory.training.recipes import Budget
from spt_theory.util.files import InputError
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import WalkData, initial_model

TINY_DATA = WalkData(vocab=5, length=12, p=0.9, n_train=96, n_test=32)
TINY_BUDGET = Budget(scratch_epochs=2, pretrain_epochs=2, finetune_epochs=1, batch_size=32)
TINY_MODEL = dict(d_model=16, n_heads=2, d_ff=32)
DRAWN = [name for name in FIGURES
         if name not in ("lra_table", "lra_evidence", "plateau_law", "escape_race", "verdicts", "pooling_factorial")]
# those six read committed results (their own tests: escape_race in tests/checks/test_race.py, pooling_factorial
# in tests/figures/test_pooling_factorial.py; lra_evidence, escape_race and verdicts also in
# tests/figures/test_committed_figures_equal_a_redraw.py)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module", autouse=True)
def short_ladder():
    """Tiny phase points are never solved, so each walks the whole SPT ladder: two rungs keep it short."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(paper_runs, "SPT_LADDER", (1, 2))
        yield


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


def tiny_context(cache: Path, out: Path, **kw) -> figure_context.FigureContext:
    return figure_context.FigureContext(data=TINY_DATA, budget=TINY_BUDGET, model=dict(TINY_MODEL), seeds=(0, 1),
                                        cache_dir=cache, out=out, progress=False, spt_lengths=(0.5, 1, 2),
                                        data_scales=(2,), depths=(2,), t3_count=3,
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


@pytest.mark.slow
@pytest.mark.parametrize("name", DRAWN)
def test_figure_renders(context, name):
    paths = FIGURES[name].draw(context)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    record = assert_written(context.out, name)
    text = json.dumps(record)
    if name != "gradient_blindness":  # every trained-run figure names its runs by config hash
        assert "config_hash" in text and "stage_keys" in text


@pytest.mark.slow
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
    out = tmp_path / "out"
    code = cli.main(["--only", "pe_toeplitz", "lra_table", "--train", "--seeds", "0", "1", "--cache-dir", str(cache),
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


def test_cli_help_and_bad_arguments(capsys, argparse_refusal):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for name in FIGURES:
        assert name in text
    with pytest.raises(SystemExit) as done:
        cli.main(["--only", "no_such_figure"])
    assert done.value.code == 2
    capsys.readouterr()
    argparse_refusal(cli.main, ["--seeds", "-1"], "--seeds", "non-negative")


def test_control_runs_match_verify():
    """The ablation figure's control bars are the very runs (same specs, so same cache) of X1-X5."""
    controls = pytest.importorskip("spt_theory.checks.controls")
    ctx = figure_context.FigureContext(seeds=(0,))
    entries = ablations.control_entries(ctx)
    assert entries, "controls module present but no control run found"
    for _, name in entries:
        assert ablations.control_spec(ctx, name, 0) == controls.control_spec(name, 0)


def test_lra_evidence_redraws_committed_sweeps_or_skips(context, tmp_path):
    out, evidence = tmp_path / "figs", tmp_path / "evidence"
    ctx = dataclasses.replace(context, out=out, lra_evidence=evidence)
    with pytest.raises(figure_context.FigureSkipped, match="no committed LRA sweep"):
        lra_evidence.lra_evidence(ctx)
    evidence.mkdir()
    summary = {"task": "listops", "seeds": [0, 1], "config": {"num_classes": 10},
               "data": {"width": 40, "n_train": 100},
               "cells": [{"label": "scratch", "cell": {"recipe": "scratch"},
                          "test_accuracy": {"per_seed": [0.2, 0.3], "mean": 0.25, "std": 0.07},
                          "band_ratio": {"per_seed": [1.0, 1.1], "mean": 1.05, "std": 0.07}},
                         {"label": "spt", "cell": {"recipe": "spt"},
                          "test_accuracy": {"per_seed": [0.4, 0.5], "mean": 0.45, "std": 0.07},
                          "band_ratio": {"per_seed": [2.0, 2.2], "mean": 2.1, "std": 0.1},
                          "spt_band_ratio": {"per_seed": [5.0, 6.0], "mean": 5.5, "std": 0.7}}]}
    (evidence / "listops.json").write_text(json.dumps(summary))
    paths = lra_evidence.lra_evidence(ctx)
    assert sorted(p.name for p in paths) == ["listops.pdf", "listops.png", "lra_evidence.json"]
    assert (out / "lra/listops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in evidence.iterdir()) == ["listops.json"]  # inputs are not outputs
    (evidence / "listops.json").write_text(json.dumps({"task": "listops"}))
    with pytest.raises(InputError, match=r"listops.json: field seeds must be an array"):
        lra_evidence.lra_evidence(ctx)


def test_lra_evidence_refuses_a_value_it_would_draw_wrong_and_writes_nothing(context, tmp_path):
    """A string where a number is drawn (matplotlib would draw it as a category), a non-positive
    ratio on a log axis: refused naming the field, before any folder or file is made, even when
    another summary is fine."""
    out, evidence = tmp_path / "figs", tmp_path / "evidence"
    evidence.mkdir()
    good = json.loads((REPO / "spt_theory/evidence/lra/listops.json").read_text())
    (evidence / "listops.json").write_text(json.dumps(good))
    ctx = dataclasses.replace(context, out=out, lra_evidence=evidence)
    for edit, field in ((lambda s: s["cells"][0]["test_accuracy"].update(mean="0.3"), "cells[0].test_accuracy"),
                        (lambda s: s["cells"][1]["band_ratio"]["per_seed"].__setitem__(0, 0.0),
                         "cells[1].band_ratio.per_seed"),
                        (lambda s: s["cells"][0]["runs"][0]["curve"][0].update(step=None), "cells[0].runs[0]")):
        bad = json.loads(json.dumps(good))
        edit(bad)
        (evidence / "pathfinder.json").write_text(json.dumps(bad))
        with pytest.raises(InputError, match=rf"pathfinder.json: field {re.escape(field)} must be"):
            lra_evidence.lra_evidence(ctx)
        assert not out.exists()


# ----------------------------------------------------------------------------- the paper figures
PAPER = ["score_gradients", "pe_scores", "offset_profile", "supervised_curves", "scratch_steps", "spt_length",
         "phase_map", "paper_checks"]
"""The figures of the paper's claims, drawn from the runs of ``spt_theory.walk.paper_runs``."""


def record_of(context, name: str) -> dict:
    """The figure's JSON, drawn now unless an earlier test drew it into the same folder."""
    path = context.out / f"{name}.json"
    if not path.exists():
        FIGURES[name].draw(context)
    return json.loads(path.read_text())


def run_sources(obj):
    if isinstance(obj, dict):
        if "config_hash" in obj:
            yield obj
        for value in obj.values():
            yield from run_sources(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from run_sources(value)


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER)
def test_paper_figure_runs_are_cached_checkpoints(context, name):
    """Every run a paper figure names is a trained run in the cache (its last stage's checkpoint)."""
    sources = list(run_sources(record_of(context, name)))
    assert sources
    for source in sources:
        for key, epochs in zip(source["stage_keys"], source["stage_epochs"]):
            assert epochs == 0 or (context.cache_dir / key / f"epoch_{epochs}.pt").exists(), source


def test_score_gradients_panel_c_is_x6s_share(context):
    record = record_of(context, "score_gradients")
    data = context.dataset()
    x, y = data.x_test[:context.probe_size], data.y_test[:context.probe_size]
    directions = proximity_directions(x.shape[1], 2, circular=False)
    chance = chance_share(directions)
    assert record["panel_c"]["chance_share"] == pytest.approx(chance)
    for name in ("scratch", "spt"):
        curve = record["panel_c"]["curves"][name]
        assert len(curve["epoch"]) == 1 + sum(s.epochs for s in context.spec(name, 0).stages)
        for i, seed in enumerate(context.seeds):
            ends = {0: initial_model(context.spec(name, seed)), -1: context.result(name, seed).model}
            for at, model in ends.items():
                share = supervised_share(model, x, y, directions)["expected"] / chance
                assert curve["share_over_chance_per_seed"][i][at] == pytest.approx(share, rel=1e-4)
    gradients = init_gradients(context, context.seeds[0])
    for objective, g in gradients.items():
        panel = record["panels_a_b"][objective]
        assert panel["colour_scale"][1] == pytest.approx(float(g.abs().max()))
        assert panel["rank_one_share"] == pytest.approx(rank_one_share(g))


def test_pe_scores_r2_is_e7s_and_residual_has_no_toeplitz_part(context):
    record = record_of(context, "pe_scores")
    for seed in context.seeds:  # E7's measurement on the same runs
        fit = probes.pe_toeplitz_fit(context.result("pretrain", seed).model)
        assert record["r2_per_head"][str(seed)]["spt"] == pytest.approx([h["r2"] for h in fit["heads"]], abs=1e-6)
    residual = torch.tensor(record["matrices_seed_plotted"]["residual"])
    spt = torch.tensor(record["matrices_seed_plotted"]["spt"])
    r2 = record["r2_per_head"][str(record["seed_plotted"])]["spt"]
    for h in range(len(spt)):
        assert probes.diagonal_profile(residual[h])[1].abs().max() < 1e-3  # no function of i - j left
        explained = 1 - (residual[h] ** 2).sum() / ((spt[h] - spt[h].mean()) ** 2).sum()
        assert float(explained) == pytest.approx(r2[h], abs=1e-3)


def test_offset_profile_is_the_attention_by_offset(context):
    record = record_of(context, "offset_profile")
    n = context.data.length
    offsets = torch.tensor(record["offsets_i_minus_j"])
    assert offsets.tolist() == list(range(-(n - 1), n))  # tiny: n - 1 < 20, the whole sequence
    x = context.dataset().x_test[:context.probe_size]
    for name in ("scratch", "pretrain", "spt"):
        per_seed = torch.tensor(record["shares"][name]["per_seed"])  # (seeds, heads, offsets)
        assert per_seed.sum(-1) == pytest.approx(torch.ones(per_seed.shape[:2]), abs=1e-4)
        for i, seed in enumerate(context.seeds):
            pattern = probes.attention_patterns(context.result(name, seed).model, x)[0]  # (batch, heads, n, n)
            band = probes.band_mass(pattern)
            assert float(per_seed[i][:, offsets.abs() <= 2].sum(-1).mean()) == pytest.approx(band, abs=1e-5)
            previous = pattern.diagonal(offset=-1, dim1=-2, dim2=-1).sum((0, -1)) / (len(x) * n)  # A[i, i-1]
            assert per_seed[i][:, offsets == 1].flatten() == pytest.approx(previous, abs=1e-5)  # i - j = +1
    assert sum(record["uniform"]) == pytest.approx(1, abs=1e-4)


def test_supervised_curves_continue_the_spt_finetune(context):
    record = record_of(context, "supervised_curves")
    b = context.budget
    full = record["curves"][paper_runs.FULL_SPT_KEEP]
    assert full["supervised_epoch"] == list(range(1, b.scratch_epochs + 1))
    for i, seed in enumerate(context.seeds):
        spt = context.result("spt", seed).history[-1]  # same stage key: its first epochs
        assert full["test_accuracy"]["per_seed"][i][:b.finetune_epochs] == pytest.approx(
            [100 * e["test_accuracy"] for e in spt])
        scratch = context.result("scratch", seed).history[-1]
        for key, scale in (("loss", 1), ("train_accuracy", 100)):
            assert record["curves"]["scratch"][key]["per_seed"][i] == pytest.approx([scale * e[key] for e in scratch])


def test_scratch_steps_puts_every_run_on_one_axis_of_supervised_steps(context):
    record = record_of(context, "scratch_steps")
    b, largest = context.budget, context.data_scales[-1]
    long, *scaled, spt = record["curves"]
    per_epoch = math.ceil(context.data.n_train / b.batch_size)
    assert long["test_accuracy"]["step"] == [e * per_epoch for e in range(1, largest * b.scratch_epochs + 1)]
    assert [c["test_accuracy"]["step"][-1] for c in scaled] == [k * b.scratch_epochs * per_epoch
                                                              for k in context.data_scales]
    assert spt["band_mass"]["step"] == [e * per_epoch for e in range(1, b.scratch_epochs + 1)]
    for i, seed in enumerate(context.seeds):  # E2's scratch run is the prefix of the step-matched one
        scratch = context.result("scratch", seed).history[-1]
        assert long["test_accuracy"]["per_seed"][i][:b.scratch_epochs] == pytest.approx(
            [100 * e["test_accuracy"] for e in scratch])


def test_spt_length_trains_what_is_missing_and_shares_e9s_runs(context, tmp_path, capsys):
    fresh = dataclasses.replace(context, cache_dir=tmp_path / "runs", out=tmp_path / "out", _runs={},
                                        spt_lengths=(1,))
    FIGURES["spt_length"].draw(fresh)
    assert "training spt_length_3_steps seed 0" in capsys.readouterr().out  # 3 steps = 1 tiny epoch
    [point] = json.loads((fresh.out / "spt_length.json").read_text())["points"]
    assert (point["spt_steps"], point["spt_epochs"]) == (3, 1)
    reloaded = dataclasses.replace(fresh, _runs={})
    runs = [reloaded.result("sweep_1", seed) for seed in fresh.seeds]  # E9's recipe: same cache keys
    assert "training" not in capsys.readouterr().out
    assert point["test_accuracy_percent"]["per_seed"] == pytest.approx([100 * r.final["test_accuracy"] for r in runs])
    assert point["band_mass_after_spt"]["per_seed"] == pytest.approx([r.history[0][-1]["band_mass"] for r in runs])


@pytest.mark.slow
def test_phase_map_records_the_unsolved_case(context):
    record = record_of(context, "phase_map")
    assert len(record["points"]) == len(paper_runs.phase_points(context.data))
    unsolved = 0
    for point in record["points"].values():
        for budget, tried in zip(point["spt_epochs_needed"], point["accuracy_by_spt_epochs"]):
            solved = [int(e) for e, acc in tried.items() if acc >= paper_runs.SOLVED]
            assert budget == (min(solved) if solved else None)
            if budget is None:
                assert str(paper_runs.SPT_LADDER[-1]) in tried
                unsolved += 1
        assert point["not_solved"] == [b is None for b in point["spt_epochs_needed"]]
    assert unsolved  # the tiny runs never reach 0.95: the '> 8' case is recorded (and drawn at the top)
    assert record["not_solved_drawn_at"] == 2 * paper_runs.SPT_LADDER[-1]


def test_paper_checks_bars_are_the_claims_runs(context):
    record = record_of(context, "paper_checks")
    panels = {p["panel"].split()[0]: p["bars"] for p in record["panels"]}
    assert [len(panels[k]) for k in ("E5", "E11", "E12", "X5b")] == [4, 2 + len(context.data_scales),
                                                                    2 * (1 + len(context.depths)), 3]
    d, b, m = context.data, context.budget, context.model
    specs = {("E5", 1): lambda s: paper_runs.last_token_spec("frozen", s, d, b, **m),
             ("E5", 3): lambda s: paper_runs.alibi_spec("frozen", s, d, b, **m),
             ("E11", 1): lambda s: paper_runs.scaled_scratch_spec(context.data_scales[0], s, d, b, **m),
             ("E11", -1): lambda s: paper_runs.step_matched_scratch_spec(s, d, b, context.data_scales[-1], **m),
             ("E12", 3): lambda s: paper_runs.depth_spec("spt", context.depths[0], s, d, b, **m),
             ("X5b", 2): lambda s: paper_runs.negative_spec("shuffled", s, d, b, **m)}
    for (panel, i), build in specs.items():
        bar = panels[panel][i]
        runs = [context.result("check", seed, build(seed)) for seed in context.seeds]
        assert bar["config_hashes"] == [config_hash(r.spec) for r in runs]
        assert bar["test_accuracy_percent"]["per_seed"] == pytest.approx([100 * r.final["test_accuracy"] for r in runs])

"""The plateau law's pieces: the SPT-length search, beta_n's closed form, the escape
models of P3 / P3b, the exponent fit, and a tiny cached scratch run."""

import copy
import json
import math
import shutil

import pytest
import torch

from spt_theory.checks import plateau as law
from spt_theory.checks import plateau_grid
from spt_theory.core.model import Encoder
from spt_theory.plateau import design, runs
from spt_theory.theory.per_token import pair_coupling_bound
from spt_theory.training.cache import StageCache
from spt_theory.training.loop import DatasetTask, Stage, StageOptions, train_stage
from spt_theory.walk.experiments import built_data


@pytest.mark.parametrize("least", [None, *design.SPT_GRID])
def test_spt_search_finds_the_least_solving_length(least):
    solves = (lambda s: False) if least is None else (lambda s: s >= least)
    found, tried = design.spt_search(solves)
    assert found == least
    assert len(tried) <= 6
    assert all(ok == solves(s) for s, ok in tried.items())


@pytest.mark.parametrize("n, p", [(2, 0.5), (3, 0.3), (25, 0.5), (200, 0.8)])
def test_beta_n_closed_form(n, p):
    """beta_n(p) = 4 p [n (1 - p) - (1 - p^n)] / ((1 - p)^2 n^2) (proofs/T8), below 4p / ((1-p) n)."""
    closed = 4 * p * (n * (1 - p) - (1 - p ** n)) / ((1 - p) ** 2 * n ** 2)
    assert pair_coupling_bound(n, p) == pytest.approx(closed, rel=1e-12)
    assert closed < 4 * p / ((1 - p) * n)


def test_predicted_sgd_exponent_below_one():
    assert 0.9 < law.predicted_sgd_exponent([25, 50], 0.5) < 1.0
    assert law.predicted_sgd_exponent([1000, 2000], 0.5) == pytest.approx(1.0, abs=1e-2)


@pytest.mark.parametrize("t", [300.0, 975.0, 5000.0])
def test_escape_models(t):
    lam = law.adamw_rate(t)
    assert law.adamw_escape(lam, law.SIGMA) == pytest.approx(t, rel=1e-9)
    assert law.adamw_escape(lam, law.SIGMA / 10) > t  # P3: a smaller init lengthens the plateau
    assert law.scale_free_escape(t, law.SIGMA) == pytest.approx(t, rel=1e-9)
    assert law.scale_free_escape(t, law.SIGMA / 10) < t  # P3b: it shortens it


def summary_of(values: dict[int, list[float]], capped_at: int | None = None) -> dict:
    return {"seeds": [0, 1, 2],
            "runs": [{"kind": "scratch", "optimiser": "adamw", "qk_scale": 1.0, "length": n, "value": v,
                      "cap": 100, "capped": n == capped_at} for n, vs in values.items() for v in vs]}


def test_exponent_fit_recovers_a_power_law_and_fails_a_wrong_one():
    values = {n: [3.0 * n ** 0.8 * f for f in (0.9, 1.0, 1 / 0.9)] for n in (25, 50, 100)}
    cells = plateau_grid.cells(summary_of(values), "scratch")
    good = law.exponent_check(cells, 0.8, {})
    assert good.measured == pytest.approx(0.8, abs=1e-9) and good.verdict == "PASS"
    assert law.exponent_check(cells, 0.8 + 3 * law.EXPONENT_TOL, {}).verdict == "FAIL"
    # a point estimate just outside the window, its interval across the edge: the interval decides
    assert law.exponent_check(cells, 0.8 + 1.01 * law.EXPONENT_TOL, {}).verdict == "INCONCLUSIVE"
    capped = law.exponent_check(plateau_grid.cells(summary_of(values, capped_at=100), "scratch"), 0.8, {})
    assert capped.verdict == "INCONCLUSIVE"
    # a row is whole or absent
    assert 100 not in plateau_grid.cells(summary_of({**values, 100: values[100][:2]}), "scratch")


def test_scratch_run_is_cached_and_deterministic(tmp_path):
    run = design.PlateauRun("scratch", 8, 0, "adamw", 1.0, cap=6)
    first = runs.run_scratch(run, tmp_path / "a")
    again = runs.run_scratch(run, tmp_path / "b")
    assert first["steps"] == 6 and first["capped"] and first["escape_step"] is None
    assert [h["test_accuracy"] for h in first["history"]] == [h["test_accuracy"] for h in again["history"]]
    assert runs.run_scratch(run, tmp_path / "a") == first  # read back from run.json
    assert not math.isnan(first["history"][-1]["test_accuracy"])


@pytest.mark.slow
def test_plateau_figure_draws_the_committed_grid(tmp_path):
    from spt_theory.evidence import EvidenceError
    from spt_theory.figures.context import FigureContext
    from spt_theory.figures.plateau_law import plateau_law

    with pytest.raises(EvidenceError, match="plateau_runs.json: missing"):
        plateau_law(FigureContext(out=tmp_path, evidence_root=tmp_path / "evidence"))
    shutil.copytree(design.EVIDENCE, tmp_path / "evidence" / "plateau")
    paths = plateau_law(FigureContext(out=tmp_path, evidence_root=tmp_path / "evidence"))
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    record = json.loads(paths[2].read_text())
    summary = json.loads(design.SUMMARY.read_text())
    drawn = sum(len(v) for row in record["rows"] for v in row["per_seed"].values())
    assert drawn == sum(len(c["values"]) for kind, opt, scale in {(r["kind"], r["optimiser"], r["qk_scale"])
                                                                   for r in summary["runs"]}
                        for c in plateau_grid.cells(summary, kind, opt, scale).values())


@pytest.mark.parametrize("objective", ["supervised", "spt"])
def test_the_plateau_trainer_is_train_stage_step_by_step(tmp_path, tiny_walk, tiny_model_overrides, objective):
    """One loop: the plateau's step-level Trainer after k steps holds the parameters that
    train_stage gives for the same stage, seed and step cap, across an epoch boundary (the same
    kernels run in one process, so bitwise)."""
    data = built_data(tiny_walk)
    torch.manual_seed(0)
    stepped = Encoder(tiny_walk.model_config(**tiny_model_overrides))
    staged = copy.deepcopy(stepped)
    trainer = runs.Trainer(stepped, data, objective, 7)
    k = 2 * trainer.steps.per_epoch + 1
    trainer.advance(k)
    stage = Stage(objective, math.ceil(k / trainer.steps.per_epoch), lr=design.ADAMW_LR, batch_size=design.BATCH)
    train_stage(staged, DatasetTask(data), stage, 7, StageCache(tmp_path, objective), max_steps=k,
                options=StageOptions(progress=False))
    assert trainer.step == k
    for (name, p), (_, q) in zip(stepped.state_dict().items(), staged.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
    trainer.advance(1)  # the comparison can fail: one step more moves the parameters
    assert any(not torch.equal(p, q) for p, q in zip(stepped.parameters(), staged.parameters(), strict=True))

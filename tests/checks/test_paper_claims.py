"""Claims E5, E6b, E9-E14, X5b (``spt_theory.checks.paper``, ``checks.walk``) and the runs of
``spt_theory.walk.paper_runs``: SPT step caps, the negative pretraining sources, training accuracy per
epoch, every check on tiny data, and each claim's decision on made-up histories (pass and fail)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from spt_theory.checks import paper
from spt_theory.checks import walk as walk_claims
from spt_theory.claims.registry import Context, Measurement, all_claims
from spt_theory.training.cache import StageCache
from spt_theory.training.loop import DatasetTask, train_stage
from spt_theory.training.recipes import Budget
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import (
    PretrainData,
    RunResult,
    RunSpec,
    WalkData,
    initial_model,
    recipe,
    run,
    stage_key,
    walk_metrics,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY_BUDGET = Budget(scratch_epochs=2, pretrain_epochs=1, finetune_epochs=1, batch_size=16)
NEW_IDS = ("E5", "E5b", "E6b", "E9", "E10", "E11", "E11b", "E12", "E13", "E14", "X5b")


def test_new_claims_are_registered_with_short_statements():
    claims = {c.id: c for c in all_claims()}
    assert set(NEW_IDS) <= set(claims)
    assert all(len(claims[i].statement) <= 58 for i in NEW_IDS)
    # the long ones run only with --full / --only
    assert [i for i in NEW_IDS if claims[i].quick] == ["E9", "E10"]


# ---------------------------------------------------------------- runs

def test_spt_step_cap_is_the_prefix_of_the_uncapped_run(tiny_walk, tiny_model_overrides, tmp_path):
    """A stage capped at k optimizer steps ends exactly where the uncapped stage is after k steps
    (same batch order and masks), so a fractional SPT length is a point on the longer run."""
    data = tiny_walk.build()
    stage = replace(recipe("pretrain", tiny_walk, 0, TINY_BUDGET).stages[0], epochs=2)
    models = []
    for name, kw in (("capped", {"max_steps": 5}), ("killed", {"stop_after_steps": 5})):
        torch.manual_seed(0)
        model = initial_model(recipe("pretrain", tiny_walk, 0, TINY_BUDGET, **tiny_model_overrides))
        train_stage(model, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / name), progress=False, **kw)
        models.append(model.state_dict())
    assert all(torch.equal(models[0][k], models[1][k]) for k in models[0])


def test_sptsteps_recipe_caps_the_spt_stage_and_keys_it(tiny_walk, tiny_model_overrides, tmp_path):
    per_epoch = paper_runs.steps_per_epoch(tiny_walk, TINY_BUDGET)  # 96 / 16 = 6
    whole = paper_runs.spt_length_spec(per_epoch, 0, tiny_walk, TINY_BUDGET, **tiny_model_overrides)
    part = paper_runs.spt_length_spec(per_epoch // 2, 0, tiny_walk, TINY_BUDGET, **tiny_model_overrides)
    assert whole.spt_steps is None and whole.stages == recipe("spt", tiny_walk, 0, TINY_BUDGET).stages
    assert part.spt_steps == per_epoch // 2 and part.stages[0].epochs == 1
    assert stage_key(part, 0) != stage_key(whole, 0)
    a, b = (run(s, tmp_path, progress=False) for s in (part, whole))
    assert len(a.history[0]) == 1 and a.history[0][0]["loss"] != b.history[0][0]["loss"]
    with pytest.raises(ValueError, match="spt_steps"):
        RunSpec(tiny_walk, tiny_walk.model_config(), whole.stages, spt_steps=0)


def test_length_grid_is_a_log_grid_from_a_quarter_to_eight_epochs():
    epochs = paper_runs.SPT_LENGTH_EPOCHS
    assert epochs[0] == 0.25 and epochs[-1] == 8 and len(epochs) == 11
    assert all(math.isclose(b / a, math.sqrt(2)) for a, b in zip(epochs, epochs[1:]))
    assert paper_runs.SPT_LENGTH_STEPS[paper_runs.SPT_LENGTH_EPOCHS.index(4.0)] == 500


def neighbour_step_rate(x: torch.Tensor, vocab: int) -> float:
    """Share of positions whose token is the previous one +-1 (mod V): 2 / V without structure."""
    step = (x[:, 1:] - x[:, :-1]) % vocab
    return float(((step == 1) | (step == vocab - 1)).float().mean())


def test_negative_sources_have_no_neighbour_structure():
    walk = PretrainData("walk", n_train=2000).build().x_train
    shuffled = PretrainData("walk", n_train=2000, shuffle_positions=True).build().x_train
    uniform = PretrainData("uniform", n_train=2000).build().x_train
    assert neighbour_step_rate(walk, 16) > 0.5  # p = 0.5 steps plus chance
    for x in (shuffled, uniform):
        assert abs(neighbour_step_rate(x, 16) - 2 / 16) < 0.01
    # shuffling moves tokens, it does not change them: every sequence keeps its token counts
    assert torch.equal(walk.sort(dim=1).values, shuffled.sort(dim=1).values)
    assert not torch.equal(walk, shuffled)
    with pytest.raises(ValueError, match="source"):
        PretrainData("noise")


def test_every_run_records_training_accuracy_on_training_sequences(tiny_walk, tiny_model_overrides, tmp_path):
    result = run(recipe("scratch", tiny_walk, 0, TINY_BUDGET, **tiny_model_overrides), tmp_path, progress=False)
    for record in result.history[0]:
        assert 0.0 <= record["train_accuracy"] <= 1.0 and record["loss"] > 0
    # a data set whose training labels are flipped: the two accuracies must move apart
    data = tiny_walk.build()
    flipped = replace(data, y_train=1 - data.y_train)
    metrics = walk_metrics(flipped)(result.model)
    same = walk_metrics(data)(result.model)
    assert math.isclose(metrics["train_accuracy"] + same["train_accuracy"], 1.0, abs_tol=1e-9)


def test_phase_points_move_one_factor_at_a_time():
    base = paper_runs.WALK
    for point in paper_runs.PHASE_POINTS[1:]:
        changed = [f for f in ("vocab", "length", "p") if getattr(point, f) != getattr(base, f)]
        assert len(changed) == 1
    assert {p.p for p in paper_runs.PHASE_POINTS} == {0.2, 0.5, 0.8}
    assert {p.length for p in paper_runs.PHASE_POINTS} == {50, 100, 200}
    assert {p.vocab for p in paper_runs.PHASE_POINTS} == {4, 16, 64}


def test_solved_budget_bisects_the_ladder_and_reports_every_length_tried():
    calls = []

    def fake(accuracy_by_epochs):
        def train_run(spec):
            epochs = spec.stages[0].epochs
            calls.append(epochs)
            return RunResult(spec, None, [[{"test_accuracy": accuracy_by_epochs[epochs]}]])
        return train_run

    found = paper_runs.solved_budget(WalkData(), 0, None, train_run=fake({1: 0.5, 2: 0.97, 4: 0.99, 8: 1.0}))
    assert found["budget"] == 2 and calls == [2, 1]
    calls.clear()
    never = paper_runs.solved_budget(WalkData(), 0, None, train_run=fake({1: 0.5, 2: 0.5, 4: 0.5, 8: 0.6}))
    assert never["budget"] is None and set(never["accuracy_by_spt_epochs"]) == {"2", "4", "8"}


# ---------------------------------------------------------------- checks on tiny data

@pytest.fixture
def tiny_claims(tiny_walk, monkeypatch):
    monkeypatch.setattr(walk_claims, "WALK", tiny_walk)
    monkeypatch.setattr(paper, "WALK", tiny_walk)
    monkeypatch.setattr(paper, "BUDGET", TINY_BUDGET)
    monkeypatch.setattr(paper_runs, "DATA_SCALES", (2,))
    monkeypatch.setattr(paper_runs, "DEPTHS", (2,))
    monkeypatch.setattr(paper_runs, "SPT_LADDER", (1, 2))


@pytest.mark.slow
@pytest.mark.parametrize("check", [walk_claims.check_e5, paper.check_e5b, paper.check_e6b, paper.check_e10,
                                   paper.check_e11, paper.check_e11b,
                                   paper.check_e12, paper.check_e13, paper.check_e14, paper.check_x5b])
def test_every_paper_check_runs_on_tiny_data(check, tiny_claims, tmp_path):
    m = check(Context(full=True, seeds=(0,), cache_dir=tmp_path, progress=False))
    assert isinstance(m, Measurement) and isinstance(m.passed, bool) and m.details


@pytest.mark.slow
def test_e9_full_mode_walks_the_log_grid(tiny_claims, tiny_walk, tmp_path):
    m = walk_claims.check_e9(Context(full=True, seeds=(0,), cache_dir=tmp_path, progress=False))
    grid = m.details["accuracy_by_spt_epochs"]
    assert (len(grid) == len(set(paper_runs.spt_length_steps(tiny_walk)))
            and m.details["steps_per_epoch"] == paper_runs.steps_per_epoch(tiny_walk))


def test_e9_quick_mode_reads_only_e3s_spt_run(tiny_claims, tiny_walk, tmp_path):
    """Quick mode decides E9 from E3's SPT length (4 epochs) alone: the same spec, so no extra run."""
    assert paper_runs.spt_length_spec(4 * paper_runs.steps_per_epoch(tiny_walk), 0, tiny_walk) == \
        recipe("spt", tiny_walk, 0, paper_runs.BUDGET)
    m = walk_claims.check_e9(Context(full=False, seeds=(0,), cache_dir=tmp_path, progress=False))
    assert list(m.details["accuracy_by_spt_epochs"]) == ["4"] and m.details["one_epoch_enough"] is None


# ---------------------------------------------------------------- decisions on made-up runs

def fake_result(final: dict, per_epoch: list[float] | None = None) -> RunResult:
    epochs = [{"epoch": e + 1, "test_accuracy": a, "train_accuracy": a, "loss": 0.69}
              for e, a in enumerate(per_epoch or [])] or [{"epoch": 1, **final}]
    epochs[-1].update(final)
    return RunResult(None, None, [epochs])


@pytest.mark.parametrize("scratch_fit, passed", [(0.5, True), (0.9, False)])
def test_e10_fails_when_scratch_fits_its_training_set(monkeypatch, scratch_fit, passed):
    runs = {"scratch": [fake_result({"train_accuracy": scratch_fit, "test_accuracy": 0.5, "loss": 0.69})],
            "spt": [fake_result({"train_accuracy": 0.99, "test_accuracy": 0.99, "loss": 0.05})]}
    monkeypatch.setattr(paper, "runs", lambda ctx, name: runs[name])
    assert paper.check_e10(Context()).passed is passed


def test_step_matched_scratch_continues_e2s_run_for_the_largest_scale_of_steps(tiny_walk):
    long = paper_runs.step_matched_scratch_spec(0, tiny_walk, TINY_BUDGET)
    short = recipe("scratch", tiny_walk, 0, TINY_BUDGET)
    scaled = paper_runs.scaled_scratch_spec(paper_runs.DATA_SCALES[-1], 0, tiny_walk, TINY_BUDGET)
    assert stage_key(long, 0) == stage_key(short, 0) and long.data == short.data
    steps = lambda spec: spec.stages[0].epochs * paper_runs.steps_per_epoch(spec.data, TINY_BUDGET)  # noqa: E731
    assert steps(long) == steps(scaled) == paper_runs.DATA_SCALES[-1] * steps(short)


@pytest.mark.parametrize("curve, first_step, solved_step, passed", [
    ([0.5, 0.5, 0.5], None, None, True), ([0.5, 0.55, 0.61], 18, None, False), ([0.5, 0.9, 0.55], 12, None, True),
    ([0.5, 0.7, 0.96], 12, 18, False)])
def test_e11b_judges_the_final_accuracy_and_reports_where_scratch_left_chance(
        monkeypatch, tiny_walk, curve, first_step, solved_step, passed):
    monkeypatch.setattr(paper, "WALK", tiny_walk)
    monkeypatch.setattr(paper, "BUDGET", TINY_BUDGET)  # 96 sequences, batch 16: 6 steps per epoch
    spec = paper_runs.step_matched_scratch_spec(0, tiny_walk, TINY_BUDGET)
    monkeypatch.setattr(paper, "trained", lambda ctx, specs: [RunResult(spec, None, fake_result({}, curve).history)])
    m = paper.check_e11b(Context(seeds=(0,)))
    assert m.passed is passed and m.details["first_step_above_chance"] == [first_step]
    assert m.details["first_step_solved"] == [solved_step]


@pytest.mark.parametrize("budgets, passed", [
    ({"n50": 1, "n200": 8, "p0.2": 8, "p0.5": 2, "p0.8": 1}, True),
    ({"n50": 2, "n200": 2, "p0.2": 8, "p0.5": 2, "p0.8": 1}, False),   # flat in n
    ({"n50": 1, "n200": None, "p0.2": 1, "p0.5": 2, "p0.8": 1}, False),  # not falling in p
    ({"n50": 1, "n200": None, "p0.2": None, "p0.5": 2, "p0.8": 1}, True),  # > 8 counts as infinite
])
def test_e14_needs_the_budget_to_rise_in_n_and_fall_in_p(monkeypatch, budgets, passed):
    def fake_map(ctx):
        out = {}
        for walk in paper_runs.phase_points(paper.WALK):
            if walk.vocab != paper.WALK.vocab:
                budget = 2
            elif walk.length != paper.WALK.length:
                budget = budgets[f"n{walk.length}"]
            else:
                budget = budgets[f"p{walk.p:g}"]
            out[paper_runs.point_label(walk)] = {"scratch": [0.5], "budgets": [budget], "tried": [{}]}
        return out

    monkeypatch.setattr(paper, "phase_map", fake_map)
    assert paper.check_e14(Context()).passed is passed


@pytest.mark.parametrize("qk, mlp, passed", [([0.6, 0.97], [0.5, 0.5], True), ([0.5] * 7 + [0.97], [0.5, 0.5], False),
                                             ([0.6, 0.97], [0.5, 0.96], False)])
def test_e6b_compares_epochs_to_solved(monkeypatch, qk, mlp, passed):
    curves = {"hybrid_qk": qk, "hybrid_vo": [0.5], "hybrid_mlp": mlp, paper_runs.FULL_SPT_KEEP: [0.97]}
    monkeypatch.setattr(paper, "trained", lambda ctx, specs: [fake_result({}, curves[_name(specs[0])])])
    assert paper.check_e6b(Context(seeds=(0,))).passed is passed


def _name(spec: RunSpec) -> str:
    keep = spec.stages[1].keep
    return paper_runs.FULL_SPT_KEEP if len(keep) > 1 and "head" in keep else f"hybrid_{'_'.join(keep)}"


@pytest.mark.parametrize("frozen, scratch, passed", [(0.74, 0.75, True), (0.80, 0.74, False), (0.5, 0.5, False)])
def test_e5_is_two_sided_and_needs_a_setting_where_scratch_learns(monkeypatch, frozen, scratch, passed):
    acc = {"frozen": frozen, "scratch": scratch}
    monkeypatch.setattr(walk_claims, "run", lambda spec, *a, **k: fake_result(
        {"test_accuracy": acc["frozen" if spec.stages[0].freeze else "scratch"]}))
    assert walk_claims.check_e5(Context(seeds=(0,))).passed is passed

"""Mechanism controls X1-X6 (``spt_theory.checks.controls``): the proximity init, the cross-data SPT
recipe and its cache keys, and every check function on tiny data.  The lemma of X4 (single-token
readout) is tested with the other lemmas: ``tests/theory/test_theory.py``,
``tests/theory/test_theory_properties.py``, ``tests/theory/test_symbolic.py``."""

from __future__ import annotations

import pytest
import torch

from spt_theory.analysis.probes import attention_patterns, pe_score_block
from spt_theory.checks import controls
from spt_theory.checks import theory as lemmas
from spt_theory.checks import walk as walk_claims
from spt_theory.claims.registry import Context, Measurement
from spt_theory.core.inits import proximity_init
from spt_theory.core.model import Encoder
from spt_theory.training import loop as training_loop
from spt_theory.training.recipes import Budget
from spt_theory.walk import experiments
from spt_theory.walk.experiments import (
    PretrainData,
    RunSpec,
    WalkData,
    control_recipe,
    initial_model,
    recipe,
    stage_key,
)
from synthetic.walk import symmetric_walk

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- X2 proximity init

@pytest.mark.parametrize("offsets", [(1, -1), (2, -3, 0, 1)])
def test_proximity_init_pe_scores_peak_at_the_chosen_offsets(offsets):
    rows = torch.arange(10, 90)
    for project in (False, True):
        torch.manual_seed(0)
        model = Encoder(WalkData().model_config())
        proximity_init(model, offsets=offsets, project_tokens=project)
        expected = [offsets[h % len(offsets)] for h in range(model.cfg.n_heads)]
        assert controls.pe_peak_offsets(model) == expected  # the Toeplitz profile peaks at delta_h
        for h, t in enumerate(pe_score_block(model)):
            hits = (t[rows].argmax(dim=1) == rows + expected[h]).float().mean()
            # the plain rotation is exactly Toeplitz: every row peaks at i + delta_h; projecting out
            # the token span perturbs the PE a little (measured: 74-91% of rows, the rest off by 1)
            assert hits == 1.0 if not project else hits >= 0.7


def test_proximity_init_removes_token_terms_and_is_directional():
    torch.manual_seed(0)
    model = Encoder(WalkData().model_config())
    proximity_init(model)
    w_q, w_k = model.blocks[0].attn.qk.weight.detach().chunk(2)
    tokens = torch.cat([model.embed.weight.detach(), torch.ones(1, 64)])
    assert (w_q @ tokens.T).abs().max() < 1e-4 and (w_k @ tokens.T).abs().max() < 1e-4
    x = WalkData().build().x_test[:16]
    A = attention_patterns(model, x)[0]
    i = torch.arange(99)
    nxt, prev = A[:, :, i, i + 1].mean((0, 2)), A[:, :, i + 1, i].mean((0, 2))
    assert nxt[0] > 5 * prev[0] and prev[1] > 5 * nxt[1]  # head 0 looks right, head 1 left


def test_proxinit_recipe_changes_the_cache_key_and_plain_keys_stay():
    walk = WalkData()
    scratch, prox = recipe("scratch", walk, 0), control_recipe("proxinit", walk, 0)
    assert prox.init == "proxinit" and prox.stages == scratch.stages
    assert stage_key(prox, 0) != stage_key(scratch, 0)
    assert stage_key(control_recipe("proxinit_3", walk, 0), 0) == stage_key(prox, 0)  # a prefix of it
    plain = RunSpec(scratch.data, scratch.model, scratch.stages, scratch.seed)
    assert stage_key(plain, 0) == stage_key(scratch, 0)  # no hook, no other data: the same key
    assert control_recipe("spt", walk, 1) == recipe("spt", walk, 1)
    torch.manual_seed(0)
    qk = [initial_model(spec).blocks[0].attn.qk.weight for spec in (prox, scratch)]
    assert not torch.equal(*qk)
    assert torch.equal(initial_model(prox).embed.weight, initial_model(scratch).embed.weight)
    with pytest.raises(ValueError, match="init"):
        RunSpec(scratch.data, scratch.model, scratch.stages, 0, init="nonsense")


# ---------------------------------------------------------------- X5 cross-data SPT

def test_symmetric_walk_steps_both_ways_within_a_sequence():
    x, _ = symmetric_walk(16, 200, 1.0, 8, seed=3)
    diff = (x[:, 1:] - x[:, :-1]) % 16
    assert set(diff.unique().tolist()) == {1, 15}
    assert all({1, 15} <= set(row.unique().tolist()) for row in diff)
    x, _ = symmetric_walk(16, 100, 0.5, 4, seed=3)
    assert x.shape == (4, 100) and x.min() >= 0 and x.max() < 16


def test_permuted_source_relabels_the_walk_tokens():
    plain = PretrainData("walk", 5, 12, 0.9, 32).build()
    perm = PretrainData("walk", 5, 12, 0.9, 32, permutation_seed=0).build()
    mapping = {}
    for a, b in zip(plain.x_train.flatten().tolist(), perm.x_train.flatten().tolist()):
        assert mapping.setdefault(a, b) == b
    assert sorted(mapping.values()) == list(range(5)) and mapping != {k: k for k in range(5)}


def test_cross_data_recipe_pretrains_on_the_other_data_and_finetunes_on_the_real(tiny_walk, tiny_model_overrides,
                                                                                  tmp_path, monkeypatch):
    budget = Budget(pretrain_epochs=1, finetune_epochs=1, scratch_epochs=2)
    spec = control_recipe("xspt_symmetric", tiny_walk, 0, budget, **tiny_model_overrides)
    plain = recipe("spt", tiny_walk, 0, budget, **tiny_model_overrides)
    assert spec.pretrain_data == PretrainData("symmetric", 5, 12, 0.9, 96)
    assert [stage_key(spec, k) for k in (0, 1)] != [stage_key(plain, k) for k in (0, 1)]
    assert stage_key(control_recipe("xspt_p08", tiny_walk, 0, budget, **tiny_model_overrides), 0) != stage_key(spec, 0)
    long = control_recipe("xspt_symmetric_long", tiny_walk, 0, budget, **tiny_model_overrides)
    assert long.stages[1].epochs == 2 and stage_key(long, 1) == stage_key(spec, 1)
    seen = []
    original = training_loop.train_stage

    def recording(model, data, stage, *args, **kwargs):
        seen.append((stage.objective, data.data.x_train))
        return original(model, data, stage, *args, **kwargs)

    monkeypatch.setattr(training_loop, "train_stage", recording)
    real = tiny_walk.build()
    result = experiments.run(spec, tmp_path, progress=False, data=real)
    assert [objective for objective, _ in seen] == ["spt", "supervised"]
    assert torch.equal(seen[0][1], spec.pretrain_data.build().x_train)
    assert not torch.equal(seen[0][1], real.x_train)
    assert torch.equal(seen[1][1], real.x_train)
    assert len(result.history) == 2
    with pytest.raises(ValueError, match="unknown recipe"):
        control_recipe("xspt_nope", tiny_walk, 0)


# ---------------------------------------------------------------- check functions on tiny data

def test_every_control_check_runs_on_tiny_data(tiny_walk, tmp_path, monkeypatch):
    monkeypatch.setattr(walk_claims, "WALK", tiny_walk)
    monkeypatch.setattr(controls, "BUDGET", Budget(scratch_epochs=2, pretrain_epochs=1, finetune_epochs=1))
    monkeypatch.setattr(lemmas, "x4_theory", lambda ctx: ({"stub": True}, {}))
    ctx = Context(full=False, seeds=(0,), cache_dir=tmp_path, progress=False)
    for check in (controls.check_x1, controls.check_x2, controls.check_x3, controls.check_x4,
                  controls.check_x5, controls.check_x6):
        m = check(ctx)
        assert isinstance(m, Measurement) and isinstance(m.passed, bool) and m.details
    x6 = controls.check_x6(ctx).details
    assert len(x6["scratch_curve_over_chance (init, ep 1..8)"][0]) == 1 + 2
    assert len(x6["spt_curve_over_chance (init, pretrain 1..4, finetune 1..3)"][0]) == 1 + 1 + 1


def test_controls_are_registered():
    from spt_theory.claims.records import TABLE
    from spt_theory.claims.registry import all_claims
    from spt_theory.verify import import_checks

    import_checks()  # every check module registered (X5b lives with the paper's claims)
    ids = [c.id for c in all_claims() if c.id.startswith("X")]  # the registry's, against the table's rows
    assert set(ids) == {i for i in TABLE if i.startswith("X")} >= {"X1", "X2", "X3", "X4", "X5", "X5b", "X6"}
    assert all(len(c.statement) <= 58 for c in all_claims() if c.id in ids)
    assert isinstance(control_recipe("scratch", WalkData(), 0), RunSpec)

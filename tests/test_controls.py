"""Mechanism controls X1-X6 (``spt_theory.checks.controls``): the proximity init, the cross-data SPT
recipe and its cache keys, the X4 lemma (single-token readout; float64 autograd against the closed
forms of ``spt_theory.theory``, hypothesis properties, negative controls, sympy), and every check
function on tiny data."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spt_theory import experiments, symbolic, theory
from spt_theory.checks import controls, synthetic
from spt_theory.checks.harness import (
    LOSS_KINDS, TOLERANCE, random_instance, random_instances, relative_error, sup_autograd,
    uniform_bilinear_point,
)
from spt_theory.claims import Context, Measurement
from spt_theory.experiments import (Budget, PretrainData, RunSpec, WalkData, control_recipe,
                                    initial_model, recipe, stage_key)
from spt_theory.inits import proximity_init
from synthetic.walk import symmetric_walk
from spt_theory.model import Encoder
from spt_theory.probes import attention_patterns, pe_score_block

F64 = torch.float64
PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
    original = experiments.train_stage

    def recording(model, data, stage, *args, **kwargs):
        seen.append((stage.objective, data.data.x_train))
        return original(model, data, stage, *args, **kwargs)

    monkeypatch.setattr(experiments, "train_stage", recording)
    real = tiny_walk.build()
    result = experiments.run(spec, tmp_path, progress=False, data=real)
    assert [objective for objective, _ in seen] == ["spt", "supervised"]
    assert torch.equal(seen[0][1], spec.pretrain_data.build().x_train)
    assert not torch.equal(seen[0][1], real.x_train)
    assert torch.equal(seen[1][1], real.x_train)
    assert len(result.history) == 2
    with pytest.raises(ValueError, match="unknown recipe"):
        control_recipe("xspt_nope", tiny_walk, 0)


# ---------------------------------------------------------------- X4 single-token readout

def test_x4_row_gradient_closed_form_at_any_point_and_zero_off_row():
    for index, inst in enumerate(random_instances(40, seed=200, spread=1.5)):
        r = controls.readout_row(inst.S.shape[0], index)
        auto = controls.row_autograd(inst, r)
        assert relative_error(auto.grad_S, theory.row_score_grad(inst.S, inst.V, auto.grad_readout, r),
                              auto.scale) <= TOLERANCE
        others = torch.ones(inst.S.shape[0], dtype=torch.bool)
        others[r] = False
        assert torch.count_nonzero(auto.grad_S[others]) == 0


def test_x4_uniform_projection_and_bilinear_closed_forms():
    gen = torch.Generator().manual_seed(201)
    for index, inst in enumerate(random_instances(40, seed=201)):
        n = inst.S.shape[0]
        r = controls.readout_row(n, index)
        auto = controls.row_autograd(inst, r)
        assert relative_error(auto.grad_S, theory.row_score_grad_uniform(inst.V, auto.grad_readout, r),
                              auto.scale) <= TOLERANCE
        P = torch.randn(n, n, generator=gen, dtype=F64)
        predicted = theory.predicted_row_projection(inst.V, auto.grad_readout, P, r)
        error = theory.blind_projection(auto.grad_S, P) - predicted
        assert abs(float(error)) <= TOLERANCE * float(auto.scale * P.norm())
        H, M = uniform_bilinear_point(inst, dh=3, gen=gen)
        grad_M, auto_M = controls.row_bilinear_autograd(H, M, inst, r)
        scale = auto_M.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
        assert relative_error(grad_M, theory.row_grad_M_uniform(H, inst.V, auto_M.grad_readout, r), scale) <= TOLERANCE
        if n > 1:
            assert float(theory.singular_value_ratio(grad_M)) <= 1e-8


@pytest.mark.parametrize("n", [8, 32, 100])
def test_x4_bound_attained_and_band_cosine_formula(n):
    for r in (0, n - 1, n // 2):
        P = theory.band_mask(n, 2)
        aligned = controls.aligned_row(n, P, r)
        assert aligned["ratio_to_bound"] == pytest.approx(1, abs=1e-12)
        assert aligned["cosine"] == pytest.approx(theory.band_row_max_cosine(n, 2, r), abs=1e-12)
        assert aligned["cosine"] == pytest.approx(aligned["max_cosine_formula"], abs=1e-12)
    # a single-token readout sees the band ~sqrt(n) times more than mean pooling (T3), but not all of it
    assert theory.band_row_max_cosine(100, 2, 0) > 5 * float(theory.toeplitz_max_cosine(100, [1.0, 1.0, 1.0]))
    assert theory.band_row_max_cosine(100, 2, 0) < 0.1


def test_x4_negative_controls_circulant_seen_mean_pool_form_wrong_off_row_moves_mean_pool():
    gen = torch.Generator().manual_seed(202)
    for index, inst in enumerate(random_instances(20, seed=202, min_n=8, max_n=40)):
        n = inst.S.shape[0]
        r = controls.readout_row(n, index)
        auto = controls.row_autograd(inst, r)
        circ = theory.circulant_kernel(n, [1.0, 1.0, 1.0])
        assert abs(float(theory.blind_projection(auto.grad_S, circ))) > 1e3 * TOLERANCE * float(auto.scale)
        sup = sup_autograd(inst)
        assert abs(float(theory.blind_projection(sup.grad_S, circ))) <= TOLERANCE * float(sup.scale * circ.norm())
        assert relative_error(auto.grad_S, theory.sup_score_grad_uniform(inst.V, auto.grad_readout), auto.scale) > 1e-2
        change = controls.off_row_change(inst, r, gen)
        assert change["row"] == 0.0 and change["mean_pool"] > 1e3 * TOLERANCE


@pytest.mark.parametrize("n", [2, 3])
def test_x4_sympy_small_n(n):
    for r in sorted({0, n - 1}):
        assert symbolic.is_zero(symbolic.x4_row_score_gradient(n, 2, r))
        assert symbolic.is_zero(symbolic.x4_row_uniform_gradient(n, 2, r))
        assert symbolic.is_zero(symbolic.x4_row_projection(n, 2, r))


def test_x4_sympy_circulant_is_seen_by_the_row_readout_but_not_mean_pooling():
    assert symbolic.x4_circulant_projection(4, 2, 0) != 0
    assert symbolic.t3_circulant_projection(4, 2) == 0


@st.composite
def row_instances(draw):
    n = draw(st.integers(2, 64))
    offsets = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n))
    inst = random_instance(torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1))), n=n,
                           d=draw(st.integers(1, 16)), kind=draw(st.sampled_from(LOSS_KINDS)),
                           value_scale=draw(st.floats(1e-3, 1e3)), offsets=torch.tensor(offsets, dtype=F64))
    return inst, draw(st.integers(0, n - 1))


@PROFILE
@given(row_instances(), st.integers(0, 2**32 - 1))
def test_x4_property_uniform_gradient_one_row_rank_one_and_row_blindness(case, seed):
    inst, r = case
    n = inst.S.shape[0]
    auto = controls.row_autograd(inst, r)
    G, scale = auto.grad_S, float(auto.scale)
    assert relative_error(G, theory.row_score_grad_uniform(inst.V, auto.grad_readout, r), auto.scale) <= TOLERANCE
    assert abs(float(G[r].sum())) <= TOLERANCE * scale
    # blind iff row r of P is constant: any P with a constant row r projects to 0
    P = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64)
    P[r] = 3.0
    assert abs(float(theory.blind_projection(G, P))) <= TOLERANCE * scale * float(P.norm())


# ---------------------------------------------------------------- check functions on tiny data

def test_every_control_check_runs_on_tiny_data(tiny_walk, tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "WALK", tiny_walk)
    monkeypatch.setattr(controls, "BUDGET", Budget(scratch_epochs=2, pretrain_epochs=1, finetune_epochs=1))
    monkeypatch.setattr(controls, "x4_theory", lambda ctx: ({"stub": True}, {}))
    ctx = Context(full=False, seeds=(0,), cache_dir=tmp_path, progress=False)
    for check in (controls.check_x1, controls.check_x2, controls.check_x3, controls.check_x4,
                  controls.check_x5, controls.check_x6):
        m = check(ctx)
        assert isinstance(m, Measurement) and isinstance(m.passed, bool) and m.details
    x6 = controls.check_x6(ctx).details
    assert len(x6["scratch_curve_over_chance (init, ep 1..8)"][0]) == 1 + 2
    assert len(x6["spt_curve_over_chance (init, pretrain 1..4, finetune 1..3)"][0]) == 1 + 1 + 1


def test_controls_are_registered():
    from spt_theory.claims import all_claims
    ids = [c.id for c in all_claims()]
    assert [i for i in ids if i.startswith("X")] == ["X1", "X2", "X3", "X4", "X5", "X5b", "X6"]
    assert all(len(c.statement) <= 58 for c in all_claims() if c.id.startswith("X"))
    assert isinstance(control_recipe("scratch", WalkData(), 0), RunSpec)

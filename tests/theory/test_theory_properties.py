"""Lemmas T1-T5, T7 and X4 as hypothesis properties.  The structure is drawn, not seeded, so failures
shrink: n in [1, 128], explicit value rows (repeated rows, i.e. constant b; one-hot rows), value
magnitudes 1e-3..1e3, the three loss families (binary CE, 3-class CE, MSE) with saturated logits,
all / no / drawn masked positions, constant-row score offsets up to 1e6 (uniform attention with
non-zero scores).  float64; tolerance ``TOLERANCE`` relative to the softmax-backward scale (see
``spt_theory.analysis.lemma_harness``)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spt_theory.analysis.lemma_harness import (
    TOLERANCE,
    bilinear_autograd,
    rec_autograd,
    relative_error,
    row_autograd,
    sup_autograd,
)
from spt_theory.analysis.lemma_instances import LOSS_KINDS, Instance, RowLoss, random_instance, uniform_bilinear_point
from spt_theory.analysis.lemma_measures import (
    loss_after_attention_change,
    uniform_gradient_structure,
    with_unmasked_noise,
)
from spt_theory.analysis.lemma_measures_t3 import toeplitz_projection
from spt_theory.checks.bridge import label_parts, tiny_model
from spt_theory.theory import blind_directions, gradients, patterns, per_token, rank_one, readout

F64 = torch.float64
PROFILE = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Shared by every property: 50 examples each (n up to 128) keeps this module to about a minute on 2 cores."""
TINY = torch.finfo(F64).tiny
"""Smallest normal float64 (2.2e-308): below it numbers are subnormal and have no relative precision,
so a projection of subnormal gradients is compared with this absolute floor."""


pytestmark = pytest.mark.usefixtures("one_torch_thread")


FLOATS = st.floats(-1.0, 1.0, allow_nan=False)


@st.composite
def row_losses(draw, kind: str, rows: int, d: int, logit_scale: float) -> RowLoss:
    """A drawn loss: head weights in [-1, 1] times ``logit_scale`` (1e3 saturates the logits)."""
    if kind == "bce":
        return RowLoss(kind, logit_scale * torch.tensor(draw(st.lists(FLOATS, min_size=d, max_size=d)), dtype=F64),
                       torch.tensor(draw(FLOATS), dtype=F64),
                       torch.tensor(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=rows, max_size=rows)),
                                    dtype=F64))
    if kind == "ce":
        weight = torch.tensor(draw(st.lists(FLOATS, min_size=3 * d, max_size=3 * d)), dtype=F64).reshape(3, d)
        return RowLoss(kind, logit_scale * weight,
                       torch.tensor(draw(st.lists(FLOATS, min_size=3, max_size=3)), dtype=F64),
                       torch.tensor(draw(st.lists(st.integers(0, 2), min_size=rows, max_size=rows))))
    target = draw(st.lists(FLOATS, min_size=rows * d, max_size=rows * d))
    return RowLoss(kind, torch.empty(0, dtype=F64), torch.empty(0, dtype=F64),
                   torch.tensor(target, dtype=F64).reshape(rows, d))


@st.composite
def instances(draw, spread: float | None = 0.0, min_n: int = 1, max_n: int = 128) -> Instance:
    r"""An instance whose structure is drawn explicitly (so failures shrink): ``n`` in [min_n, 128];
    values ``V`` = rows picked from a drawn pool of 1-4 explicit rows (one row: all rows repeated,
    ``b`` constant) or one-hot rows, times a drawn magnitude up to 1e3; row offsets up to 1e6 (uniform
    attention) or a drawn explicit perturbation; binary / 3-class CE (logits up to 1e3: saturated) or
    MSE; masked positions: all, none or drawn."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 4))
    if draw(st.booleans()):
        pool = torch.eye(d, dtype=F64)
    else:
        k = draw(st.integers(1, 4))
        pool = torch.tensor(draw(st.lists(FLOATS, min_size=k * d, max_size=k * d)), dtype=F64).reshape(k, d)
    picks = draw(st.lists(st.integers(0, pool.shape[0] - 1), min_size=n, max_size=n))
    V = draw(st.sampled_from([1e-3, 1.0, 1e3])) * pool[picks]
    offsets = torch.tensor(draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n)), dtype=F64)
    S = offsets.unsqueeze(1).expand(n, n).clone()
    if spread is None:
        S = S - offsets.unsqueeze(1) + torch.tensor(draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=n * n,
                                                                  max_size=n * n)), dtype=F64).reshape(n, n)
    kind = draw(st.sampled_from(LOSS_KINDS))
    logit_scale = draw(st.sampled_from([1.0, 1e3]))
    mask = draw(st.sampled_from(["all", "none", "drawn"]))
    masked = (torch.ones(n, dtype=torch.bool) if mask == "all" else torch.zeros(n, dtype=torch.bool) if mask == "none"
              else torch.tensor(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    return Instance(S, V, draw(row_losses(kind, 1, d, logit_scale)), draw(row_losses(kind, n, d, logit_scale)), masked)


@PROFILE
@given(instances(spread=None, max_n=24))
def test_t1_at_any_point_dL_dS_is_A_times_centred_column_gradient(inst):
    auto = sup_autograd(inst)
    assert relative_error(auto.grad_S, gradients.sup_score_grad(inst.S, inst.V, auto.grad_readout),
                          auto.scale) <= TOLERANCE


@PROFILE
@given(instances(spread=None, min_n=3, max_n=24), st.integers(0, 2**32 - 1))
def test_t1_column_sum_preserving_change_of_A_leaves_L_sup_unchanged(inst, seed):
    assert loss_after_attention_change(inst, torch.Generator().manual_seed(seed), keep_columns=True) <= TOLERANCE


@PROFILE
@given(instances())
def test_t2_rows_equal_rank_one_column_sums_are_centred_b(inst):
    auto = sup_autograd(inst)
    assert max(uniform_gradient_structure(auto.grad_S, inst.V, auto.grad_readout, auto.scale).values()) <= TOLERANCE


@PROFILE
@given(instances())
def test_t2_gradient_equals_closed_form_of_rank_at_most_one(inst):
    auto = sup_autograd(inst)
    closed = gradients.sup_score_grad_uniform(inst.V, auto.grad_readout)
    assert relative_error(auto.grad_S, closed, auto.scale) <= TOLERANCE
    assert torch.linalg.matrix_rank(closed, rtol=1e-12) <= 1


@PROFILE
@given(instances(), st.data())
def test_t3_for_every_circulant_P_the_projection_is_zero(inst, data):
    n = inst.S.shape[0]
    kernel = torch.tensor(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n // 2 + 1, max_size=n // 2 + 1)),
                          dtype=F64)
    # <G, P> is linear in P: scale to max |k| = 1 so ||P|| cannot underflow for subnormal draws
    P = patterns.circulant_kernel(n, kernel / kernel.abs().max().clamp(min=1e-300))
    auto = sup_autograd(inst)
    projection = abs(float(blind_directions.blind_projection(auto.grad_S, P)))
    assert projection <= TOLERANCE * float(auto.scale * P.norm()) + TINY


@PROFILE
@given(instances(), st.integers(0, 2**32 - 1))
def test_t3_for_every_column_centred_P_the_projection_is_zero(inst, seed):
    n = inst.S.shape[0]
    X = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64)
    P = X - X.mean(dim=0, keepdim=True)
    auto = sup_autograd(inst)
    projection = abs(float(blind_directions.blind_projection(auto.grad_S, P)))
    assert projection <= TOLERANCE * float(auto.scale * P.norm()) + TINY


@PROFILE
@given(instances(min_n=3), st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_t4_at_uniform_attention_dL_dM_has_rank_at_most_one(inst, dh, seed):
    H, M = uniform_bilinear_point(inst, dh, torch.Generator().manual_seed(seed))
    grad_M, auto = bilinear_autograd(H, M, inst)
    scale = auto.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
    assert relative_error(grad_M, rank_one.sup_grad_M_uniform(H, inst.V, auto.grad_readout), scale) <= TOLERANCE
    sigma = torch.linalg.svdvals(grad_M)
    assert float(sigma[1]) <= TOLERANCE * float(scale)


@PROFILE
@given(instances(), st.integers(0, 2**32 - 1))
def test_t5_reconstruction_gradient_equals_row_centred_R_over_n_whatever_G_holds_off_the_mask(inst, seed):
    auto = rec_autograd(inst)
    noisy = with_unmasked_noise(auto.grad_readout, inst.masked, torch.Generator().manual_seed(seed))
    closed = gradients.rec_score_grad_uniform(inst.V, noisy, inst.masked)
    assert relative_error(auto.grad_S, closed, auto.scale) <= TOLERANCE
    if not bool(inst.masked.any()):
        assert float(closed.abs().max()) == 0.0


@PROFILE
@given(instances(), st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=12))
def test_t3_toeplitz_projection_is_the_boundary_term_within_the_tight_bound(inst, kernel):
    t = toeplitz_projection(inst, torch.tensor(kernel, dtype=F64))
    rounding = TOLERANCE * t.scale * float(blind_directions.stable_norm(
        patterns.toeplitz_kernel(inst.S.shape[0], kernel).flatten()))
    assert abs(t.measured - t.predicted) <= rounding + TINY
    assert abs(t.measured) <= t.bound * (1 + 1e-9) + rounding + TINY


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(2, 1), (2, 4), (2, 7), (3, 1), (3, 3), (3, 5), (4, 2), (4, 4)]),
       st.floats(0.05, 0.95), st.integers(0, 1000))
def test_t7_per_token_label_part_vanishes_and_value_weight_part_is_the_pair_term(size, p, seed):
    vocab, length = size
    model = tiny_model(length, 0.0, seed, vocab)
    parts = label_parts(model, vocab, length, p)
    assert parts["per_token"] <= 1e-12
    predicted = per_token.predicted_value_weight_delta(model, vocab, length, p).detach()
    assert float((parts["value_weight_delta"] - predicted).norm()) <= 1e-10 * max(float(predicted.norm()), 1e-12)


@st.composite
def row_instances(draw):
    n = draw(st.integers(2, 64))
    offsets = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n))
    inst = random_instance(torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1))), n=n,
                           d=draw(st.integers(1, 16)), kind=draw(st.sampled_from(LOSS_KINDS)),
                           value_scale=draw(st.floats(1e-3, 1e3)), offsets=torch.tensor(offsets, dtype=F64))
    return inst, draw(st.integers(0, n - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_instances(), st.integers(0, 2**32 - 1))
def test_x4_property_uniform_gradient_one_row_rank_one_and_row_blindness(case, seed):
    inst, r = case
    n = inst.S.shape[0]
    auto = row_autograd(inst, r)
    G, scale = auto.grad_S, float(auto.scale)
    assert relative_error(G, readout.row_score_grad_uniform(inst.V, auto.grad_readout, r), auto.scale) <= TOLERANCE
    assert abs(float(G[r].sum())) <= TOLERANCE * scale
    # blind iff row r of P is constant: any P with a constant row r projects to 0
    P = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64)
    P[r] = 3.0
    assert abs(float(blind_directions.blind_projection(G, P))) <= TOLERANCE * scale * float(P.norm())

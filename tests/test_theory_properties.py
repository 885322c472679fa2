"""Lemmas T1-T5 as hypothesis properties over n in [2, 64], d in [1, 16], value magnitudes up to
1e3, the three loss families (binary CE, 3-class CE with a linear head, MSE) and arbitrary
constant-row score offsets up to 1e6 (uniform attention with non-zero scores).  float64;
tolerance ``TOLERANCE`` relative to the softmax-backward scale (see ``spt_theory.checks.theory``)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spt_theory import theory
from spt_theory.checks.theory import (
    LOSS_KINDS, TOLERANCE, Instance, bilinear_autograd, loss_after_attention_change, random_instance,
    rec_autograd, relative_error, sup_autograd, uniform_bilinear_point,
)

F64 = torch.float64
PROFILE = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Shared by every property: 100 examples each keeps this module to seconds on 2 cores."""


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@st.composite
def instances(draw, spread: float | None = 0.0, min_n: int = 2) -> Instance:
    """An instance: uniform attention with drawn row offsets (``spread = 0``) or a drawn spread."""
    n = draw(st.integers(min_n, 64))
    offsets = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n))
    return random_instance(
        torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1))),
        n=n, d=draw(st.integers(1, 16)), kind=draw(st.sampled_from(LOSS_KINDS)),
        value_scale=draw(st.floats(1e-3, 1e3)), offsets=torch.tensor(offsets, dtype=F64),
        spread=draw(st.floats(0.1, 3.0)) if spread is None else spread)


@PROFILE
@given(instances(spread=None))
def test_t1_at_any_point_dL_dS_is_A_times_centred_column_gradient(inst):
    auto = sup_autograd(inst)
    assert relative_error(auto.grad_S, theory.sup_score_grad(inst.S, inst.V, auto.grad_readout),
                          auto.scale) <= TOLERANCE


@PROFILE
@given(instances(spread=None, min_n=3), st.integers(0, 2**32 - 1))
def test_t1_column_sum_preserving_change_of_A_leaves_L_sup_unchanged(inst, seed):
    assert loss_after_attention_change(inst, torch.Generator().manual_seed(seed), keep_columns=True) <= TOLERANCE


@PROFILE
@given(instances())
def test_t2_for_all_n_d_values_rows_of_the_gradient_are_equal_and_sum_to_zero(inst):
    auto = sup_autograd(inst)
    G, scale = auto.grad_S, float(auto.scale)
    assert float((G - G[0]).abs().max()) <= TOLERANCE * scale
    assert float(G.sum(dim=1).abs().max()) <= TOLERANCE * scale


@PROFILE
@given(instances())
def test_t2_gradient_equals_closed_form_of_rank_at_most_one(inst):
    auto = sup_autograd(inst)
    closed = theory.sup_score_grad_uniform(inst.V, auto.grad_readout)
    assert relative_error(auto.grad_S, closed, auto.scale) <= TOLERANCE
    assert torch.linalg.matrix_rank(closed, rtol=1e-12) <= 1


@PROFILE
@given(instances(), st.data())
def test_t3_for_every_circulant_P_the_projection_is_zero(inst, data):
    n = inst.S.shape[0]
    kernel = torch.tensor(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=n // 2 + 1, max_size=n // 2 + 1)),
                          dtype=F64)
    # <G, P> is linear in P: scale to max |k| = 1 so ||P|| cannot underflow for subnormal draws
    P = theory.circulant_kernel(n, kernel / kernel.abs().max().clamp(min=1e-300))
    auto = sup_autograd(inst)
    assert abs(float(theory.blind_projection(auto.grad_S, P))) <= TOLERANCE * float(auto.scale * P.norm())


@PROFILE
@given(instances(), st.integers(0, 2**32 - 1))
def test_t3_for_every_column_centred_P_the_projection_is_zero(inst, seed):
    n = inst.S.shape[0]
    X = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64)
    P = X - X.mean(dim=0, keepdim=True)
    auto = sup_autograd(inst)
    assert abs(float(theory.blind_projection(auto.grad_S, P))) <= TOLERANCE * float(auto.scale * P.norm())


@PROFILE
@given(instances(min_n=3), st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_t4_at_uniform_attention_dL_dM_has_rank_at_most_one(inst, dh, seed):
    H, M = uniform_bilinear_point(inst, dh, torch.Generator().manual_seed(seed))
    grad_M, auto = bilinear_autograd(H, M, inst)
    scale = auto.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
    assert relative_error(grad_M, theory.sup_grad_M_uniform(H, inst.V, auto.grad_readout), scale) <= TOLERANCE
    sigma = torch.linalg.svdvals(grad_M)
    assert float(sigma[1]) <= TOLERANCE * float(scale)


@PROFILE
@given(instances())
def test_t5_reconstruction_gradient_equals_row_centred_R_over_n(inst):
    auto = rec_autograd(inst)
    closed = theory.rec_score_grad_uniform(inst.V, auto.grad_readout, inst.masked)
    assert relative_error(auto.grad_S, closed, auto.scale) <= TOLERANCE

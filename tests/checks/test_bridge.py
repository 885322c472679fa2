"""T2b, T4b, T7 and E1b: the real model at uniform attention (``spt_theory.checks.bridge``,
``spt_theory.theory.per_token``) and the bag-of-pairs baseline (``spt_theory.analysis.baselines``)."""

from __future__ import annotations

import itertools

import pytest
import torch

from spt_theory.analysis.baselines import diagonal_concentration_rule, pair_features
from spt_theory.analysis.lemma_harness import TOLERANCE, sup_autograd
from spt_theory.analysis.lemma_instances import random_instances
from spt_theory.checks.bridge import (
    VALUE_WEIGHT,
    departure,
    exact_marginals_uniform,
    factored_first_steps,
    label_parts,
    row_departure,
    tiny_model,
    value_weight_identity,
)
from spt_theory.checks.walk_law import exact_law
from spt_theory.theory import per_token
from synthetic.walk import generate_walk

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_t2b_measure_is_zero_in_t2s_setting_and_tens_of_percent_in_the_model():
    for inst in random_instances(10, seed=300, min_n=3):
        assert float(row_departure(sup_autograd(inst).grad_S)) <= 1e-12
    figures = departure(0)
    assert figures["row_departure_mean"] > 0.05
    assert 0 < figures["band_cosine_mean"] < 0.05


@pytest.fixture(scope="module")
def factored():
    return factored_first_steps(0)


def test_t4b_no_query_gradient_rank_one_key_gradient_and_equal_queries_after_one_step(factored):
    assert factored["grad_WQ_over_grad_WK"] <= TOLERANCE
    assert factored["grad_WK_head_sigma2_over_sigma1"] <= TOLERANCE
    for name in ("sgd_step1", "adamw_step1"):
        assert factored[f"{name}_score_row_spread"] <= TOLERANCE
        assert factored[f"{name}_delta_M_sigma2_over_sigma1_max"] <= TOLERANCE


def test_t4b_zero_M_is_a_saddle_and_the_second_adamw_step_leaves_the_lemma(factored):
    assert factored["saddle_qk_grad_norm"] == 0.0
    assert factored["saddle_loss_change_plus"] * factored["saddle_loss_change_minus"] < 0
    assert factored["adamw_step2_score_row_spread"] > 1e-3
    assert factored["real_dL_dM_sigma2_over_sigma1_min"] > 1e-3


@pytest.mark.parametrize("vocab,length,p", [(3, 5, 0.5), (4, 3, 0.2), (2, 4, 0.9)])
def test_t7_pair_law_matches_the_enumerated_law(vocab, length, p):
    for y in (0, 1):
        law = exact_law(vocab, length, p, y)
        for i, j in itertools.combinations(range(length), 2):
            others = tuple(a for a in range(length) if a not in (i, j))
            assert torch.allclose(law.sum(dim=others), per_token.walk_pair_law(vocab, p, y, j - i), atol=1e-15)


def test_t7_marginals_are_uniform_exactly():
    from fractions import Fraction
    assert exact_marginals_uniform(3, 4, Fraction(1, 3))


def test_t7_value_path_couples_neighbours_and_control_is_seen():
    walk = label_parts(tiny_model(5, 0.1), 3, 5, 0.5)
    assert walk["per_token"] > 1e-6  # the value path's pair terms at sigma > 0
    leak = label_parts(tiny_model(5, 0.0), 3, 5, 0.5, leak=0.2)
    assert leak["per_token"] > 1e-2
    identity = value_weight_identity(4)
    assert identity["rel_err_closed_form"] <= 1e-10 and 0 < identity["norm"] <= identity["bound"]


def test_t7_expected_gradients_are_enumeration_weighted_sums():
    model = tiny_model(3, 0.5)
    sequences = per_token.all_sequences(3, 3)
    probs = torch.rand(2, 27, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    grads = per_token.expected_gradients(model, sequences, probs)
    # the same E[grad] by one backward per (x, y)
    expected = torch.zeros_like(model.blocks[0].attn.v.weight)
    for k in range(27):
        for y in (0, 1):
            model.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(sequences[k:k + 1]), torch.tensor([y]))
            loss.backward()
            expected += probs[y, k] / 2 * model.blocks[0].attn.v.weight.grad
    assert torch.allclose(grads[VALUE_WEIGHT]["mean"], expected, rtol=1e-10, atol=1e-14)


def test_e1b_pair_features_and_the_quadratic_rule():
    x = torch.tensor([[0, 1, 2, 0], [2, 1, 0, 2]])
    u = pair_features(x, 3)
    assert u.shape == (2, 12) and torch.allclose(u.sum(dim=1), torch.ones(2))
    assert float(u[0, 0 * 4 + 0]) == 0.25 and float(u[0, 1 * 4 + 1]) == 0.25
    x, y = generate_walk(8, 64, 0.5, 400, seed=3)
    assert float((diagonal_concentration_rule(x, 8) == y).float().mean()) > 0.9
    assert diagonal_concentration_rule(torch.tensor([[0, 1, 2, 3]]), 8).item() == 1
    assert diagonal_concentration_rule(torch.tensor([[3, 2, 1, 0]]), 8).item() == 0

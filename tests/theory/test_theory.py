"""Lemmas T1-T5 and X4 (single-token readout): float64 autograd against the closed forms of
``spt_theory.theory`` (``gradients``, ``patterns``, ``blind_directions``, ``rank_one``, ``readout``), and the
negative controls showing each comparison can fail.  Tolerance: ``TOLERANCE`` (1e-10) relative to the
softmax-backward scale, see ``spt_theory.analysis.lemma_harness``."""

from __future__ import annotations

import math

import pytest
import torch

from spt_theory.analysis.lemma_harness import (
    TOLERANCE,
    bilinear_autograd,
    rec_autograd,
    relative_error,
    row_autograd,
    row_bilinear_autograd,
    sup_autograd,
)
from spt_theory.analysis.lemma_instances import random_instance, random_instances, readout_row, uniform_bilinear_point
from spt_theory.analysis.lemma_measures import (
    aligned_row,
    loss_after_attention_change,
    off_row_change,
    rank_counter_cases,
    rank_one_residual,
    uniform_gradient_structure,
    with_unmasked_noise,
)
from spt_theory.analysis.lemma_measures_t3 import (
    aligned_toeplitz,
    band_cosine_bound,
    blind_patterns,
    off_uniform_growth,
    toeplitz_boundary_cases,
    toeplitz_projection,
)
from spt_theory.analysis.walk_descent import walk_monte_carlo
from spt_theory.theory import blind_directions, gradients, patterns, rank_one, readout

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- T1

def test_t1_score_gradient_formula_holds_at_nonuniform_points():
    for inst in random_instances(40, seed=100, spread=1.5):
        auto = sup_autograd(inst)
        expected = gradients.sup_score_grad(inst.S, inst.V, auto.grad_readout)
        assert relative_error(auto.grad_S, expected, auto.scale) <= TOLERANCE


def test_t1_column_preserving_change_keeps_loss_column_changing_change_moves_it():
    gen = _gen(101)
    for inst in random_instances(30, seed=101, spread=1.0, min_n=3, max_n=16, max_d=4):
        assert loss_after_attention_change(inst, gen, keep_columns=True) <= TOLERANCE
        assert loss_after_attention_change(inst, gen, keep_columns=False) > 1e3 * TOLERANCE


def test_t1_pooled_output_matches_explicit_sums_and_depends_only_on_column_sums():
    gen = _gen(102)
    inst = random_instance(gen, n=7, d=3, kind="mse", spread=2.0)
    E = inst.S.exp()
    A = E / E.sum(dim=1, keepdim=True)
    explicit = torch.stack([sum(A[i, j] * inst.V[j, k] for i in range(7) for j in range(7)) / 7 for k in range(3)])
    assert torch.allclose(gradients.pooled_output(inst.S, inst.V), explicit, rtol=1e-13, atol=0)
    C = torch.eye(7, dtype=F64) - 1 / 7
    X = torch.randn(7, 7, generator=gen, dtype=F64)
    for delta, same in ((C @ X @ C, True), (X @ C, False)):  # column sums kept / changed, rows still sum to 1
        moved = torch.log(A + delta * (0.5 * A.min() / delta.abs().max()))
        change = float((gradients.pooled_output(moved, inst.V) - explicit).norm())
        assert (change <= 1e-13) if same else (change > 1e-6)


# ---------------------------------------------------------------- T2

def test_t2_closed_form_rows_equal_rank_one_column_sums_centred_b():
    for inst in random_instances(60, seed=110):
        auto = sup_autograd(inst)
        G = auto.grad_S
        assert relative_error(G, gradients.sup_score_grad_uniform(inst.V, auto.grad_readout), auto.scale) <= TOLERANCE
        assert relative_error(gradients.sup_score_grad(inst.S, inst.V, auto.grad_readout),
                              gradients.sup_score_grad_uniform(inst.V, auto.grad_readout), auto.scale) <= TOLERANCE
        assert max(uniform_gradient_structure(G, inst.V, auto.grad_readout, auto.scale).values()) <= TOLERANCE


def test_t2_rows_differ_and_rank_exceeds_one_away_from_uniform_attention():
    for inst in random_instances(20, seed=111, spread=1.0, min_n=3, max_n=16):
        auto = sup_autograd(inst)
        structure = uniform_gradient_structure(auto.grad_S, inst.V, auto.grad_readout, auto.scale)
        assert structure["row_spread"] > 1e-3 and structure["sigma2"] > 1e-3
        assert structure["column_sum_error"] > 1e-3  # T2's column sums need uniform attention too


def test_t2_closed_form_batched_matches_per_instance():
    gen = _gen(112)
    V, grad_z = torch.randn(5, 9, 4, generator=gen, dtype=F64), torch.randn(5, 4, generator=gen, dtype=F64)
    batched = gradients.sup_score_grad_uniform(V, grad_z)
    for k in range(5):
        # a batched and a single matmul may take different BLAS kernels (MKL promises no bitwise
        # equality across shapes or CPUs): equal to float64 rounding, a few ulps of entries ~1
        torch.testing.assert_close(batched[k], gradients.sup_score_grad_uniform(V[k], grad_z[k]),
                                   rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- T3

def test_t3_equal_column_sum_patterns_are_blind_and_formula_holds_for_any_pattern():
    gen = _gen(120)
    for inst in random_instances(40, seed=120, min_n=3):
        auto = sup_autograd(inst)
        n = inst.S.shape[0]
        for P in blind_patterns(n, gen).values():
            projection = abs(float(blind_directions.blind_projection(auto.grad_S, P)))
            assert projection <= TOLERANCE * float(auto.scale * P.norm())
        X = torch.randn(n, n, generator=gen, dtype=F64)
        predicted = blind_directions.predicted_blind_projection(inst.V, auto.grad_readout, X)
        measured = blind_directions.blind_projection(auto.grad_S, X)
        assert abs(float(measured - predicted)) <= TOLERANCE * float(auto.scale * X.norm())


def test_t3_projection_off_uniform_grows_linearly():
    growth = off_uniform_growth([1e-3, 1e-2, 1e-1], count=6)
    assert 0.9 <= growth["loglog_slope"] <= 1.1
    assert growth["coefficient"] > 1e-3


@pytest.mark.parametrize("n", [2, 3, 8, 31, 100])
@pytest.mark.parametrize("kernel", [[1.0, 1.0, 1.0], [2.0, -1.0, 0.5, 0.25, 3.0], [1.0] * 40])
def test_t3_toeplitz_column_sums_are_total_minus_boundary(n, kernel):
    P = patterns.toeplitz_kernel(n, kernel)
    k = torch.tensor(kernel + [0.0] * n, dtype=F64)[:n]
    total = k[0] + 2 * k[1:].sum()
    assert torch.allclose(total - P.sum(dim=0), patterns.toeplitz_column_sum_deviation(n, kernel), atol=1e-12)


def test_t3_toeplitz_interior_columns_do_not_deviate():
    delta = patterns.toeplitz_column_sum_deviation(50, [1.0, 0.5, 0.25])
    assert torch.count_nonzero(delta[2:48]) == 0
    assert torch.count_nonzero(delta) == 4


def test_t3_toeplitz_projection_is_the_boundary_term_within_the_bound():
    for inst, kernel in toeplitz_boundary_cases(30, seed=121):
        t = toeplitz_projection(inst, kernel)
        assert abs(t.measured - t.predicted) <= TOLERANCE * t.scale
        assert 0 < abs(t.measured) <= t.bound * (1 + 1e-9)


@pytest.mark.parametrize("n,w", [(8, 1), (32, 2), (100, 2), (100, 5)])
def test_t3_toeplitz_bound_attained_and_band_cosine_formula(n, w):
    aligned = aligned_toeplitz(n, torch.ones(w + 1, dtype=F64))
    assert aligned["ratio_to_bound"] == pytest.approx(1.0, abs=1e-12)
    assert aligned["cosine"] == pytest.approx(aligned["max_cosine_formula"], rel=1e-12)
    assert aligned["cosine"] <= band_cosine_bound(n, w)
    assert aligned["cosine"] * n ** 0.5 > band_cosine_bound(n, w)  # the sqrt(n) of (3) is needed


def test_t3_circulant_kernel_is_circulant_and_blind_toeplitz_band_is_not():
    P = patterns.circulant_kernel(9, [3.0, 1.0, 0.5])
    assert torch.equal(P, P.roll(shifts=(1, 1), dims=(0, 1)))
    assert torch.unique(P.sum(dim=0)).numel() == 1
    assert torch.unique(patterns.toeplitz_kernel(9, [3.0, 1.0, 0.5]).sum(dim=0)).numel() > 1


# ---------------------------------------------------------------- T4

def test_t4_uniform_attention_gradient_of_M_is_rank_one_and_matches_closed_form():
    gen = _gen(130)
    for inst in random_instances(40, seed=130, min_n=3):
        H, M = uniform_bilinear_point(inst, dh=5, gen=gen)
        S = H @ M @ H.T
        assert float((S - S[:, :1]).abs().max()) == 0.0  # constant rows: uniform attention
        grad_M, auto = bilinear_autograd(H, M, inst)
        scale = auto.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
        assert relative_error(grad_M, rank_one.sup_grad_M_uniform(H, inst.V, auto.grad_readout), scale) <= TOLERANCE
        assert float(rank_one.singular_value_ratio(grad_M)) <= TOLERANCE


def test_t4_gradient_of_M_has_rank_above_one_off_uniform_and_chain_rule_holds():
    gen = _gen(131)
    for inst in random_instances(15, seed=131, min_n=4, max_n=16, max_d=4):
        H, _ = uniform_bilinear_point(inst, dh=4, gen=gen)
        grad_M, auto = bilinear_autograd(H, torch.randn(4, 4, generator=gen, dtype=F64), inst)
        assert float(rank_one.singular_value_ratio(grad_M)) > 1e-3
        scale = auto.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
        assert relative_error(grad_M, rank_one.score_grad_to_bilinear(H, auto.grad_S), scale) <= TOLERANCE


@pytest.mark.parametrize("n,w", [(20, 1), (100, 2), (64, 4)])
def test_t4_band_is_far_from_rank_one(n, w):
    band = patterns.band_mask(n, w)
    frob2 = (2 * w + 1) * n - w * (w + 1)
    assert float(band.sum()) == frob2  # 0/1 entries: squared Frobenius norm = count
    lower = math.sqrt(1 - (2 * w + 1) ** 2 / frob2)
    assert float(rank_one.rank_one_distance(band)) >= lower - 1e-12
    assert float(rank_one.rank_one_distance(gradients.row_centre(band))) >= 0.9 * lower
    for X in (band, gradients.row_centre(band)):
        assert float(rank_one.rank_one_distance(X)) == pytest.approx(rank_one_residual(X), abs=1e-12)


def test_rank_one_measures_vanish_exactly_on_outer_products():
    gen = _gen(132)
    outer = torch.outer(torch.randn(12, generator=gen, dtype=F64), torch.randn(12, generator=gen, dtype=F64))
    assert float(rank_one.rank_one_distance(outer)) <= 1e-7  # sqrt of a rounding-level difference
    assert float(rank_one.singular_value_ratio(outer)) <= 1e-14
    assert rank_one.rank_for_energy(outer, 0.999) == 1
    assert rank_one.rank_for_energy(torch.eye(10, dtype=F64), 0.9) == 9


# ---------------------------------------------------------------- T5

def test_t5_closed_form_matches_autograd_and_ignores_unmasked_rows_of_G():
    gen = _gen(142)
    for inst in random_instances(60, seed=140):
        auto = rec_autograd(inst)
        noisy = with_unmasked_noise(auto.grad_readout, inst.masked, gen)
        expected = gradients.rec_score_grad_uniform(inst.V, noisy, inst.masked)
        assert relative_error(auto.grad_S, expected, auto.scale) <= TOLERANCE
        if not bool(inst.masked.all()):
            wrong = gradients.rec_score_grad_uniform(inst.V, noisy, torch.ones_like(inst.masked))
            assert relative_error(auto.grad_S, wrong, auto.scale) > 1e-6


def test_t5_rank_counter_cases_one_target_and_binary_head_are_rank_one():
    cases = rank_counter_cases()
    assert cases["one target, 3-class CE"] <= 1e-12
    assert cases["distinct targets, binary CE"] <= 1e-12
    assert cases["two targets, 3-class CE"]["sigma2/sigma1"] > 1e-2
    assert cases["two targets, 3-class CE"]["sigma3/sigma1"] <= 1e-12


def test_t5_gradient_is_not_rank_one_and_sees_circular_proximity_unlike_sup():
    gen = _gen(141)
    directions = patterns.proximity_directions(24, 3, circular=True)
    for kind in ("ce", "mse"):
        inst = random_instance(gen, n=24, d=6, kind=kind, mask_rate=0.3)
        rec = rec_autograd(inst).grad_S
        assert float(rank_one.singular_value_ratio(rec)) > 1e-2
        assert float(patterns.proximity_share(rec, directions)) > 1e-3
        sup = sup_autograd(inst)
        assert float(patterns.proximity_coordinates(sup.grad_S, directions).norm()) <= TOLERANCE * float(sup.scale)


def test_t5_walk_descent_raises_offset_one_scores_for_the_fitted_decoder_only():
    mc = walk_monte_carlo()
    assert mc["fitted_decoder"]["ci95_low"][0] > 0
    assert mc["fitted_decoder"]["mean"][0] > mc["fitted_decoder"]["mean"][2]
    assert mc["identity_decoder"]["ci95_high"][0] < 0


# ---------------------------------------------------------------- proximity subspace

@pytest.mark.parametrize("n,k,circular", [(2, 1, True), (10, 5, True), (11, 4, False), (16, 15, False)])
def test_proximity_directions_are_orthonormal_row_centred_and_oriented(n, k, circular):
    D = patterns.proximity_directions(n, k, circular)
    gram = torch.einsum("aij,bij->ab", D, D)
    assert torch.allclose(gram, torch.eye(k, dtype=F64), atol=1e-12)
    assert float(D.sum(dim=-1).abs().max()) <= 1e-12
    i = torch.arange(n)
    dist = (i[:, None] - i[None, :]).abs()
    dist = torch.minimum(dist, n - dist) if circular else dist
    for offset in range(1, k + 1):
        assert float((D[offset - 1] * (dist == offset)).sum()) > 0


def test_proximity_directions_reject_offsets_outside_range():
    with pytest.raises(ValueError, match="max_offset"):
        patterns.proximity_directions(10, 6, circular=True)
    with pytest.raises(ValueError, match="max_offset"):
        patterns.proximity_directions(10, 0, circular=False)


def test_proximity_share_is_one_inside_zero_for_row_constant_and_batched():
    D = patterns.proximity_directions(12, 3, circular=False)
    row_constant = torch.arange(12, dtype=F64).unsqueeze(1).expand(12, 12)
    batch = torch.stack([2.0 * D[1] - D[0], row_constant])
    share = patterns.proximity_share(batch, D)
    assert share.shape == (2,)
    assert float(share[0]) == pytest.approx(1.0, abs=1e-12)
    assert float(share[1]) <= 1e-12


# ---------------------------------------------------------------- X4 single-token readout

def test_x4_row_gradient_closed_form_at_any_point_and_zero_off_row():
    for index, inst in enumerate(random_instances(40, seed=200, spread=1.5)):
        r = readout_row(inst.S.shape[0], index)
        auto = row_autograd(inst, r)
        assert relative_error(auto.grad_S, readout.row_score_grad(inst.S, inst.V, auto.grad_readout, r),
                              auto.scale) <= TOLERANCE
        others = torch.ones(inst.S.shape[0], dtype=torch.bool)
        others[r] = False
        assert torch.count_nonzero(auto.grad_S[others]) == 0


def test_x4_uniform_projection_and_bilinear_closed_forms():
    gen = torch.Generator().manual_seed(201)
    for index, inst in enumerate(random_instances(40, seed=201)):
        n = inst.S.shape[0]
        r = readout_row(n, index)
        auto = row_autograd(inst, r)
        assert relative_error(auto.grad_S, readout.row_score_grad_uniform(inst.V, auto.grad_readout, r),
                              auto.scale) <= TOLERANCE
        P = torch.randn(n, n, generator=gen, dtype=F64)
        predicted = readout.predicted_row_projection(inst.V, auto.grad_readout, P, r)
        error = blind_directions.blind_projection(auto.grad_S, P) - predicted
        assert abs(float(error)) <= TOLERANCE * float(auto.scale * P.norm())
        H, M = uniform_bilinear_point(inst, dh=3, gen=gen)
        grad_M, auto_M = row_bilinear_autograd(H, M, inst, r)
        scale = auto_M.scale * torch.linalg.matrix_norm(H, ord=2) ** 2
        assert relative_error(grad_M, readout.row_grad_M_uniform(H, inst.V, auto_M.grad_readout, r), scale) <= TOLERANCE
        if n > 1:
            assert float(rank_one.singular_value_ratio(grad_M)) <= 1e-8


@pytest.mark.parametrize("n", [8, 32, 100])
def test_x4_bound_attained_and_band_cosine_formula(n):
    for r in (0, n - 1, n // 2):
        P = patterns.band_mask(n, 2)
        aligned = aligned_row(n, P, r)
        assert aligned["ratio_to_bound"] == pytest.approx(1, abs=1e-12)
        assert aligned["cosine"] == pytest.approx(readout.band_row_max_cosine(n, 2, r), abs=1e-12)
        assert aligned["cosine"] == pytest.approx(aligned["max_cosine_formula"], abs=1e-12)
    # a single-token readout sees the band ~sqrt(n) times more than mean pooling (T3), but not all of it
    mean_pool = float(blind_directions.toeplitz_max_cosine(100, [1.0, 1.0, 1.0]))
    assert readout.band_row_max_cosine(100, 2, 0) > 5 * mean_pool
    assert readout.band_row_max_cosine(100, 2, 0) < 0.1


def test_x4_negative_controls_circulant_seen_mean_pool_form_wrong_off_row_moves_mean_pool():
    gen = torch.Generator().manual_seed(202)
    for index, inst in enumerate(random_instances(20, seed=202, min_n=8, max_n=40)):
        n = inst.S.shape[0]
        r = readout_row(n, index)
        auto = row_autograd(inst, r)
        circ = patterns.circulant_kernel(n, [1.0, 1.0, 1.0])
        assert abs(float(blind_directions.blind_projection(auto.grad_S, circ))) > 1e3 * TOLERANCE * float(auto.scale)
        sup = sup_autograd(inst)
        seen = abs(float(blind_directions.blind_projection(sup.grad_S, circ)))
        assert seen <= TOLERANCE * float(sup.scale * circ.norm())
        mean_pool_form = gradients.sup_score_grad_uniform(inst.V, auto.grad_readout)
        assert relative_error(auto.grad_S, mean_pool_form, auto.scale) > 1e-2
        change = off_row_change(inst, r, gen)
        assert change["row"] == 0.0 and change["mean_pool"] > 1e3 * TOLERANCE

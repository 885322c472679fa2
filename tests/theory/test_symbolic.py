"""Sympy derivations of T1-T5 and X4 (``spt_theory.theory.symbolic``, ``symbolic_rows``): residuals are exactly 0,
and the same machinery gives non-zero residuals where the lemma does not apply."""

from __future__ import annotations

import pytest
import sympy as sp

from spt_theory.theory import symbolic, symbolic_rows
from spt_theory.theory.symbolic_base import is_zero

SMALL_N = [2, 3, 4, 5]


@pytest.mark.parametrize("n", SMALL_N)
def test_t1_loss_invariant_under_column_preserving_change_and_rows_of_dL_dA_equal(n):
    assert symbolic.t1_column_sum_invariance(n, 2) == 0
    assert is_zero(symbolic.t1_rows_of_attention_gradient(n, 2))


@pytest.mark.parametrize("n", [2, 3])
def test_t1_score_gradient_formula_at_generic_scores(n):
    assert is_zero(symbolic.t1_score_gradient(n, 2))


@pytest.mark.parametrize("n", SMALL_N)
def test_t2_uniform_gradient_closed_form(n):
    assert is_zero(symbolic.t2_uniform_gradient(n, 2))


def test_t2_general_n_softmax_backward_and_row_sums():
    assert symbolic_rows.general_softmax_backward_at_uniform() == 0
    assert symbolic_rows.general_row_sums() == 0


@pytest.mark.parametrize("n", SMALL_N)
def test_t2_closed_form_without_centring_is_wrong(n):
    derived, b = symbolic.uniform_sup_score_gradient(n, 2)
    uncentred = sp.Matrix(n, n, lambda i, j: b[j] / n)
    assert not is_zero((derived - uncentred).applyfunc(sp.expand))


@pytest.mark.parametrize("n", SMALL_N)
def test_t3_circulant_blind_and_toeplitz_projection_is_the_boundary_term(n):
    assert symbolic.t3_circulant_projection(n, 2) == 0
    assert symbolic.t3_toeplitz_boundary(n, 2) == 0


@pytest.mark.parametrize("n", [3, 4, 5])
def test_t3_toeplitz_kernel_is_seen_without_its_boundary_term(n):
    k = sp.symbols(f"k_0:{n}")
    toeplitz = sp.Matrix(n, n, lambda i, j: k[abs(i - j)])
    assert symbolic.sup_projection_at_uniform(n, 2, toeplitz) != 0


@pytest.mark.parametrize("n", [2, 3, 4])
def test_t4_bilinear_gradient_closed_form_and_rank_one(n):
    residual, minors = symbolic.t4_bilinear_gradient(n, dh=2, d=1)
    assert is_zero(residual)
    assert is_zero(minors)


@pytest.mark.parametrize("n", SMALL_N)
def test_t5_reconstruction_gradient_closed_form(n):
    assert is_zero(symbolic_rows.t5_reconstruction_gradient(n, 2, range(0, n, 2)))


@pytest.mark.parametrize("n", [3, 4, 5])
def test_t5_rows_differ_where_t2_rows_are_equal(n):
    rec, _ = symbolic_rows.uniform_rec_score_gradient(n, 2, [0, 2])
    sup, _ = symbolic.uniform_sup_score_gradient(n, 2)
    assert sp.expand(rec[0, :] - rec[2, :]) != sp.zeros(1, n)
    assert sp.expand(sup[0, :] - sup[2, :]) == sp.zeros(1, n)


@pytest.mark.parametrize("n", [2, 3])
def test_x4_row_gradients_and_projection_small_n(n):
    for r in sorted({0, n - 1}):
        assert is_zero(symbolic_rows.x4_row_score_gradient(n, 2, r))
        assert is_zero(symbolic_rows.x4_row_uniform_gradient(n, 2, r))
        assert is_zero(symbolic_rows.x4_row_projection(n, 2, r))


def test_x4_sympy_circulant_is_seen_by_the_row_readout_but_not_mean_pooling():
    assert symbolic_rows.x4_circulant_projection(4, 2, 0) != 0
    assert symbolic.t3_circulant_projection(4, 2) == 0


def test_verify_lemma_reports_every_case_and_rejects_unknown_lemmas():
    report = symbolic.verify_lemma("T5", ns=(2, 3))
    assert report == {"n=2": True, "n=3": True, "general n softmax backward": True}
    with pytest.raises(ValueError, match="T9"):
        symbolic.verify_lemma("T9")


def test_is_zero_detects_nonzero_residuals():
    x = sp.Symbol("x")
    assert is_zero(sp.zeros(2, 2)) and is_zero([sp.Integer(0), sp.zeros(1, 3)])
    assert not is_zero(sp.Matrix([[0, x]]))
    assert not is_zero([sp.Integer(0), x])

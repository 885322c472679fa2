"""The exact label force on M (lemma T9, :mod:`spt_theory.theory.force`): recursion against float64
enumeration of every walk, against sampled walks, and what it says about the real model.

Tolerance of the exact comparisons: 1e-12 relative to the largest entry of the enumerated E[F | y]
(float64 rounding of a sum over <= 1024 sequences and n^2 pairs is ~1e-15; a wrong term is O(1))."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spt_theory.checks.force import tiny_model
from spt_theory.theory import force, force_model

TOL = 1e-12


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def test_recursion_equals_enumeration(one_torch_thread):
    for vocab, length, seed in ((3, 2, 0), (3, 5, 1), (4, 4, 2), (6, 3, 3)):
        model = tiny_model(vocab, length, seed)
        for readout in force_model.READOUTS:
            exact = force.expected_force(model, vocab, length, 0.7, readout)
            brute = force_model.enumerated_force(model, vocab, length, 0.7, readout)
            assert relative_error(exact, brute) <= TOL, (vocab, length, readout)
            assert relative_error(exact[1] - exact[0], brute[1] - brute[0]) <= 1e-10
            assert float((brute[1] - brute[0]).abs().max()) > 1e-4  # the label force is not 0 here


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([(3, 2), (3, 4), (4, 3), (5, 2), (3, 5)]), st.floats(0.0, 1.0), st.integers(0, 10**6),
       st.sampled_from(force_model.READOUTS))
def test_recursion_equals_enumeration_property(size, p, seed, readout):
    vocab, length = size
    model = tiny_model(vocab, length, seed)
    exact = force.expected_force(model, vocab, length, p, readout)
    brute = force_model.enumerated_force(model, vocab, length, p, readout)
    assert relative_error(exact, brute) <= TOL


def test_no_steps_no_force_and_no_bias_column(one_torch_thread):
    model = tiny_model(4, 5, 0)
    E = force.expected_force(model, 4, 5, 0.0)
    assert float((E[1] - E[0]).abs().max()) < 1e-15  # p = 0: i.i.d. tokens, the classes coincide (to rounding)
    E = force.expected_force(model, 4, 5, 0.5)
    assert float(E[..., -1].abs().max()) < 1e-15  # key-side constant: softmax ignores it


def test_a_wrong_term_is_caught(one_torch_thread, monkeypatch):
    """The check can fail: dropping the three-point cumulant (or swapping the classes) breaks it."""
    model = tiny_model(3, 5, 0)
    brute = force_model.enumerated_force(model, 3, 5, 0.6)
    original = force._middle
    monkeypatch.setattr(force, "_middle", lambda phi, k: tuple(0 * t for t in original(phi, k)))
    assert relative_error(force.expected_force(model, 3, 5, 0.6), brute) > 1e-3
    monkeypatch.undo()
    assert relative_error(force.expected_force(model, 3, 5, 0.6).flip(0), brute) > 1e-3


def test_monte_carlo_agrees_within_standard_errors(one_torch_thread):
    vocab, length, p = 5, 10, 0.8
    model = tiny_model(vocab, length, 4)
    E = force.expected_force(model, vocab, length, p)
    B = E[1] - E[0]
    directions = force.top_directions(B)
    exact = torch.einsum("yhij,khij->yk", E, directions)
    lin = force_model.sampled_projections(model, vocab, length, p, directions, 3000, seed=7)["linearised"]
    mean, error = force_model.mean_and_error(lin)
    diff, diff_error = force_model.mean_and_error(lin[1] - lin[0])
    z = torch.cat([((mean - exact) / error).flatten(), (diff - (exact[1] - exact[0])) / diff_error])
    assert float(z.abs().max()) <= 4.0, z
    # and the sampling resolves the label force: the swapped classes are far outside
    assert float(((diff + (exact[1] - exact[0])) / diff_error).abs().max()) > 6.0


def test_formula_is_the_first_order_force_of_the_real_model(one_torch_thread):
    """model.py at W_Q = W_K = 0 (o(x) inside J) differs from the frozen-J force by O(W_V^2)
    while B is O(W_V): scaling W_V by 1e-3 leaves a relative difference <= 1e-2."""
    vocab, length, p = 3, 5, 0.6
    for scale, bound in ((1e-3, 1e-2), (1.0, 1.0)):
        model = tiny_model(vocab, length, 1)
        with torch.no_grad():
            model.blocks[0].attn.v.weight.mul_(scale)
        B = force.label_force(model, vocab, length, p)
        real = force_model.enumerated_real_force(model, vocab, length, p, uniform=True)
        rel = float(((real[1] - real[0]) - B).norm() / B.norm())
        assert rel <= bound, (scale, rel)
    assert rel > 1e-3  # at the real init the simplification is visible (measured, T9)


def test_length_beyond_the_positional_table_is_refused():
    model = tiny_model(3, 4, 0)
    try:
        force_model.features(model, 3, 5)
    except ValueError as err:
        assert "positional table" in str(err)
    else:
        raise AssertionError("no error")


def test_loglog_fit_recovers_a_power():
    ns = [25, 50, 100, 200, 400]
    assert abs(force.loglog_fit(ns, [3.0 * n ** -1.5 for n in ns]) + 1.5) < 1e-12

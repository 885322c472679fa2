"""T6 and the exact sequence law of the walk-direction generator (``synthetic.walk``)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch
from scipy.stats import chi2

from spt_theory.checks.theory import bag_bayes_accuracy, class_histogram_distributions, step_rate_control
from synthetic.walk import generate_walk, histogram_distributions, sequence_probability

HALF, THIRD = Fraction(1, 2), Fraction(1, 3)


@pytest.mark.parametrize("vocab,length,p", [(2, 6, HALF), (3, 5, HALF), (3, 5, THIRD), (4, 4, HALF),
                                            (4, 4, THIRD), (5, 3, Fraction(9, 10)), (3, 4, Fraction(1))])
def test_t6_class_conditional_histogram_laws_are_identical(vocab, length, p):
    dist = histogram_distributions(vocab, length, p)
    assert dist[0] == dist[1]
    assert bag_bayes_accuracy(dist) == HALF


@pytest.mark.parametrize("vocab,length,p", [(3, 5, HALF), (4, 4, THIRD)])
def test_t6_step_rate_control_leaks_through_the_histogram(vocab, length, p):
    dist = class_histogram_distributions(vocab, length, step_rate_control(vocab, p, p / 2))
    assert dist[0] != dist[1]
    assert bag_bayes_accuracy(dist) > HALF


def test_generic_enumerator_reproduces_walk_histogram_distributions():
    expected = histogram_distributions(3, 4, THIRD)
    assert class_histogram_distributions(3, 4, lambda x, y: sequence_probability(x, y, 3, THIRD)) == expected


@pytest.mark.parametrize("y", [0, 1])
@pytest.mark.parametrize("vocab,length,p", [(3, 4, THIRD), (4, 3, HALF), (2, 5, Fraction(1))])
def test_sequence_probability_sums_to_one(vocab, length, p, y):
    total = sum(sequence_probability(x, y, vocab, p) for x in itertools.product(range(vocab), repeat=length))
    assert total == 1


def test_reversal_maps_class_one_to_class_zero():
    for x in itertools.product(range(4), repeat=4):
        assert sequence_probability(x, 1, 4, THIRD) == sequence_probability(x[::-1], 0, 4, THIRD)


def test_reversal_is_needed_class_laws_differ_per_sequence():
    assert any(sequence_probability(x, 1, 4, THIRD) != sequence_probability(x, 0, 4, THIRD)
               for x in itertools.product(range(4), repeat=3))


VOCAB, LENGTH, SAMPLES = 3, 3, 200_000
CELLS = VOCAB ** LENGTH


def _chi_square(y: int, p_sampled: float, p_model: float) -> float:
    """Pearson chi-square of ``SAMPLES`` generated class-``y`` sequences against the exact law."""
    x, _ = generate_walk(VOCAB, LENGTH, p_sampled, SAMPLES, seed=7 + y, labels=torch.full((SAMPLES,), y))
    codes = (x * VOCAB ** torch.arange(LENGTH)).sum(dim=1)
    counts = torch.bincount(codes, minlength=CELLS).double()
    expected = torch.tensor([float(sequence_probability(tuple(int(c) // VOCAB ** i % VOCAB for i in range(LENGTH)),
                                                        y, VOCAB, p_model)) for c in range(CELLS)],
                            dtype=torch.float64) * SAMPLES
    return float(((counts - expected) ** 2 / expected).sum())


CRITICAL = chi2.ppf(1 - 1e-6, CELLS - 1)
"""Chi-square critical value at level 1e-6 for 26 degrees of freedom (~74): a false alarm is negligible."""


@pytest.mark.parametrize("y", [0, 1])
def test_generator_matches_exact_probabilities(y):
    assert _chi_square(y, 0.5, 0.5) < CRITICAL


def test_chi_square_rejects_a_generator_with_the_wrong_step_probability():
    assert _chi_square(1, 0.45, 0.5) > CRITICAL

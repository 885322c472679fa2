"""T6 and the exact sequence law of the walk-direction generator (``synthetic.walk``)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch

from spt_theory.checks.walk_law import exact_law, generator_law_test, walk_sampler
from spt_theory.theory.bag_bayes import bag_bayes_accuracy, class_histogram_distributions, step_rate_control
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


def _biased_start(vocab, length, p, size, seed, labels, leak):
    """Class 1 starts at token 0 in 1% of sequences (then walks from there)."""
    x, _ = generate_walk(vocab, length, p, size, seed, labels=labels)
    biased = (labels == 1) & (torch.rand(size, generator=torch.Generator().manual_seed(seed)) < 0.01)
    start = torch.where(biased, 0, x[:, 0])
    return (x - x[:, :1] + start.unsqueeze(1)) % vocab


def _slow_class0(vocab, length, p, size, seed, labels, leak):
    """Class 0 steps with probability 0.98 p."""
    return generate_walk(vocab, length, p * 0.98 if int(labels[0]) == 0 else p, size, seed, labels=labels)[0]


def test_generator_samples_the_exact_law():
    law = generator_law_test()
    assert law.count == 2 * (1 + 6 + 5)
    assert law.passed, law.worst()


@pytest.mark.parametrize("sampler,worst", [(_biased_start, "x_0"), (_slow_class0, "")])
def test_generator_law_test_rejects_a_biased_start_and_a_wrong_step_probability(sampler, worst):
    law = generator_law_test(sampler=sampler)
    assert not law.passed
    assert worst in law.worst()


def test_leaking_generator_samples_its_exact_law_and_the_plain_law_rejects_it():
    assert generator_law_test(samples=200_000, leak=0.05).passed
    leaky = generator_law_test(samples=200_000, sampler=lambda *a: walk_sampler(*a[:-1], leak=0.05))
    assert not leaky.passed and "1" in leaky.worst()[:3]


def test_exact_law_marginals_are_uniform_and_sum_to_one():
    for y in (0, 1):
        law = exact_law(3, 5, 0.3, y)
        assert float(law.sum()) == pytest.approx(1.0, abs=1e-14)
        for i in range(5):
            others = tuple(a for a in range(5) if a != i)
            assert torch.allclose(law.sum(dim=others), torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-15)

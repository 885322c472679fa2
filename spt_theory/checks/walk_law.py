r"""The walk generator's law, tested against the exact law (used by claims T6 and T7).

``synthetic.walk.sequence_probability`` states the law of the walk-direction task,

    P(x | y) = (1/V) prod_{i=1}^{n-1} [ p 1{x_i = x_{i-1} + s (mod V)} + (1 - p) / V ],

and the exact lemmas (T6, T7) are proved for that formula.  This module checks that the *generator*
``generate_walk`` samples that law, so a lemma proved for the formula holds for the data the model
sees.  For each class it draws ``N`` sequences with the label fixed and runs a battery of Pearson
chi-square tests against the exact law (enumerated over all ``V^n`` sequences):

- the joint law of the whole sequence (``V^n`` cells, ``V^n - 1`` degrees of freedom);
- the marginal law of each ``x_i`` (``V`` cells): a start bias or a position-dependent token bias
  shows up here;
- the law of each transition ``(x_{i-1}, x_i)`` (``V^2`` cells): a wrong step probability, at all
  positions or only after some position, shows up here.

Each statistic is ``X^2 = sum_c (O_c - E_c)^2 / E_c``; under the exact law it is asymptotically
chi-square with ``cells - 1`` degrees of freedom.  The battery passes iff every p-value exceeds
``alpha / tests`` (Bonferroni, family-wise false-alarm rate <= ``alpha``).  The seed is fixed, so the
verdict is reproducible.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from scipy.stats import chi2

from synthetic.walk import generate_walk, sequence_probability

Generator = Callable[[int, int, float, int, int, torch.Tensor, float], torch.Tensor]
"""``(vocab, length, p, size, seed, labels, leak) -> x``: a sampler of walk sequences with fixed labels."""


def walk_sampler(vocab: int, length: int, p: float, size: int, seed: int, labels: torch.Tensor,
                 leak: float = 0.0) -> torch.Tensor:
    """The generator under test: :func:`synthetic.walk.generate_walk` with the labels fixed."""
    return generate_walk(vocab, length, p, size, seed, labels=labels, leak=leak)[0]


def exact_law(vocab: int, length: int, p: float, y: int, leak: float = 0.0) -> torch.Tensor:
    r"""``P(x | y)`` for every sequence, as a float64 tensor of shape ``(V,) * n`` (axis ``i`` = ``x_i``);
    ``leak``: the leaking control of ``generate_walk``."""
    probs = [float(sequence_probability(x, y, vocab, p, leak)) for x in itertools.product(range(vocab), repeat=length)]
    return torch.tensor(probs, dtype=torch.float64).reshape((vocab,) * length)


def sequence_codes(x: torch.Tensor, vocab: int) -> torch.Tensor:
    r"""Row-major index of each sequence in the ``(V,) * n`` table: ``sum_i x_i V^{n-1-i}``."""
    length = x.shape[1]
    return (x * vocab ** torch.arange(length - 1, -1, -1)).sum(dim=1)


def pearson(observed: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    r"""``X^2 = sum (O - E)^2 / E`` and its chi-square p-value with ``cells - 1`` degrees of freedom."""
    observed, expected = observed.flatten().double(), expected.flatten()
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stat, float(chi2.sf(stat, observed.numel() - 1))


def _class_tests(counts: torch.Tensor, law: torch.Tensor, samples: int) -> dict[str, tuple[float, float]]:
    """Joint, per-position marginal and per-transition chi-square tests of one class."""
    length = law.dim()
    tests = {"joint": pearson(counts, samples * law)}
    for i in range(length):
        others = tuple(a for a in range(length) if a != i)
        tests[f"x_{i}"] = pearson(counts.sum(dim=others), samples * law.sum(dim=others))
    for i in range(1, length):
        others = tuple(a for a in range(length) if a not in (i - 1, i))
        tests[f"(x_{i - 1}, x_{i})"] = pearson(counts.sum(dim=others), samples * law.sum(dim=others))
    return tests


@dataclass(frozen=True)
class LawTest:
    """Every chi-square test of the battery (``{class: {test: (X^2, p-value)}}``) and the verdict."""

    tests: dict[int, dict[str, tuple[float, float]]]
    alpha: float

    @property
    def count(self) -> int:
        return sum(len(t) for t in self.tests.values())

    @property
    def min_p_value(self) -> float:
        return min(p for t in self.tests.values() for _, p in t.values())

    @property
    def passed(self) -> bool:
        """Bonferroni: every p-value above ``alpha / count``."""
        return self.min_p_value > self.alpha / self.count

    def worst(self) -> str:
        """``class y, test`` with the smallest p-value."""
        return min(((y, name, p) for y, t in self.tests.items() for name, (_, p) in t.items()),
                   key=lambda item: item[2]).__repr__()


def generator_law_test(vocab: int = 3, length: int = 6, p: float = 0.5, samples: int = 1_000_000,
                       seed: int = 70, alpha: float = 1e-6, sampler: Generator = walk_sampler,
                       leak: float = 0.0) -> LawTest:
    r"""Chi-square battery of ``sampler`` against :func:`exact_law`, ``samples`` sequences per class.

    With the defaults (``V = 3``, ``n = 6``, ``p = 1/2``, 10^6 per class) the transition tests have
    power ~1 against a step probability off by 2% (non-centrality ~200 per position at 8 degrees of
    freedom) and the marginal test of ``x_0`` against a 1% start bias (~200 at 2).
    """
    tests = {}
    for y in (0, 1):
        x = sampler(vocab, length, p, samples, seed + y, torch.full((samples,), y, dtype=torch.long), leak)
        counts = torch.bincount(sequence_codes(x, vocab), minlength=vocab ** length).reshape((vocab,) * length)
        tests[y] = _class_tests(counts, exact_law(vocab, length, p, y, leak), samples)
    return LawTest(tests, alpha)

"""The uncertainty of a difference between arms measured on seeds and one test set, and the
verdict of an interval against a threshold (the LRA rules, pre-registered 2026-12-02 in
``docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md``).

A difference D = sum_a w_a mean_s(x_a,s) of arms a with weights w_a, each arm measured at the
same seeds s (paired by seed id).  Its standard error combines

- the seeds: sd over s of the per-seed combination sum_a w_a x_a,s, over sqrt(k);
- the test set: sum_a w_a^2 p_a (1 - p_a) / n_test, p_a the arm's mean accuracy (one test set for
  every seed, so this part does not shrink with k; the arms' positive correlation is ignored,
  which can only make SE larger).

The 95% interval is D ± Z SE with Z = 1.96.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

Z = 1.96


@dataclass(frozen=True)
class Difference:
    """A combination of arms: the per-seed values, their mean, its standard error and parts."""

    per_seed: dict[int, float]
    value: float
    se_seeds: float
    se_test: float

    @property
    def se(self) -> float:
        return math.hypot(self.se_seeds, self.se_test)

    @property
    def low(self) -> float:
        return self.value - Z * self.se

    @property
    def high(self) -> float:
        return self.value + Z * self.se

    def text(self, unit: str = " pts") -> str:
        """``+1.7 ± 2.9 pts`` (the half-width of the 95% interval)."""
        return f"{self.value:+.1f} ± {Z * self.se:.1f}{unit}"

    def as_dict(self) -> dict:
        return {"per_seed": self.per_seed, "value": self.value, "se": self.se, "se_seeds": self.se_seeds,
                "se_test": self.se_test, "interval": [self.low, self.high]}


def difference(arms: list[tuple[float, dict[int, float]]], n_test: int | None, scale: float = 100.0) -> Difference:
    """The difference sum_a w_a x_a for ``arms`` = [(w_a, {seed: x_a,s})], the x in percent of
    ``scale`` (accuracies: 100; a ratio: pass ``n_test`` None, no test-set term).

    Parameters
    ----------
    arms : list of (weight, per-seed values); every arm must have the same seeds.
    n_test : size of the test split (binomial term), or None.
    scale : what x = 1 stands for in the accuracy's units (100 for points).

    Returns
    -------
    Difference

    >>> d = difference([(1, {0: 60.0, 1: 62.0}), (-1, {0: 50.0, 1: 50.0})], n_test=None)
    >>> d.value, d.per_seed, round(d.se, 3)
    (11.0, {0: 10.0, 1: 12.0}, 1.0)
    """
    seeds = sorted(arms[0][1])
    for _, values in arms:
        if sorted(values) != seeds:
            raise ValueError(f"arms measured at different seeds: {seeds} and {sorted(values)}")
    per_seed = {s: sum(w * values[s] for w, values in arms) for s in seeds}
    k = len(seeds)
    se_seeds = statistics.stdev(per_seed.values()) / math.sqrt(k) if k > 1 else math.inf
    se_test = 0.0
    if n_test is not None:
        for w, values in arms:
            p = statistics.fmean(values.values()) / scale
            se_test += w * w * p * (1 - p) / n_test
        se_test = scale * math.sqrt(se_test)
    return Difference(per_seed, statistics.fmean(per_seed.values()), se_seeds, se_test)


def at_least(d: Difference, threshold: float) -> str:
    """PASS if the interval lies at or above ``threshold``, FAIL if wholly below, else INCONCLUSIVE.

    >>> at_least(Difference({}, 5.0, 1.0, 0.0), 2.0), at_least(Difference({}, 2.5, 1.0, 0.0), 2.0)
    ('PASS', 'INCONCLUSIVE')
    """
    return "PASS" if d.low >= threshold else "FAIL" if d.high < threshold else "INCONCLUSIVE"


def within(d: Difference, bound: float) -> str:
    """PASS if the interval lies inside [-bound, bound], FAIL if wholly outside, else INCONCLUSIVE."""
    if -bound <= d.low and d.high <= bound:
        return "PASS"
    return "FAIL" if d.low > bound or d.high < -bound else "INCONCLUSIVE"

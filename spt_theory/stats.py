r"""The statistics of a verdict: paired differences of arms over seeds and shared test examples,
Student-t intervals, and the power of a design (``docs/statistics.md``).

Every claim that compares arms or tests a prediction takes its interval from here; quantiles come
from :mod:`scipy.stats`, never from a hand-written constant.

**Seeds only.**  A combination of arms ``D_s = sum_a w_a x_{a,s}`` measured on the same seeds
(paired by seed id) has the interval ``mean(D) ± t_{k-1} sd(D) / sqrt(k)`` (:func:`t_interval`).

**Seeds and shared test examples.**  When every arm is scored on the same ``n`` test examples and
keeps its per-example correctness ``c_{a,s,i}``, the per-example paired difference
``d_{s,i} = sum_a w_a c_{a,s,i}`` is a seeds x examples table.  In the two-way random-effects
model ``d_{s,i} = mu + alpha_s + beta_i + eps_{s,i}`` the mean over the table has variance
``sigma_alpha^2 / k + sigma_beta^2 / n + sigma_eps^2 / (k n)``.  With the mean squares of the
table (seeds MS_S, examples MS_E, residual MS_R), an unbiased estimate is

    V = MS_S / (k n) + max(0, MS_E - MS_R) / (k n)
      = sd_s(D_s)^2 / k                         (the seeds' paired-t term; it holds the seed x example noise)
      + sigma_beta^2 / n                        (the examples every seed shares: it shrinks with n, not with k)

with Satterthwaite's degrees of freedom (:func:`paired_difference`): the crossed random-effects
(seeds x test examples) interval of the balanced design.  When the seeds' mean square falls
below the residual's (per-seed means closer than the seed x example noise allows, e.g. equal
per-seed gains), the residual takes its place in the seeds term, so the interval is never of zero
width while the examples disagree.  With that floor the interval covers 0.945-0.98 at k = 3, 6, 8
seeds and n = 1,000, 5,000 examples in a simulation of the real designs (:func:`simulate_coverage`,
``docs/statistics.md``); a cap of the df at k - 1 on top over-covers (0.998 at k = 3, n = 1,000),
so there is none.  The test-set part is that of
the *paired* per-example difference: arms that get the same examples right cancel, and nothing is
added for noise the seed term already holds.  With k = 1 there is no interval (infinite).
This is the analytic equivalent of a two-level bootstrap over seeds and examples (checked against
one in ``tests/stats/test_stats.py``).

**Power** (:func:`power`): the chance that a t interval at ``level`` over ``k`` seeds excludes a
value ``separation`` away from the truth, for a paired standard deviation ``sd``, from the
noncentral t distribution.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided ``level`` interval: ``value`` in [``low``, ``high``], its
    standard error ``se`` with ``df`` degrees of freedom, and how it was made (``method``)."""

    value: float
    low: float
    high: float
    se: float
    df: float
    level: float
    method: str
    per_seed: dict[int, float] = field(default_factory=dict)
    parts: dict[str, float] = field(default_factory=dict)
    """Standard-error parts: ``seeds`` and ``test`` (shared test examples), where they apply."""

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def text(self, unit: str = " pts", digits: int = 1, against: Sequence[float] = ()) -> str:
        """``+1.7 [-2.0, 5.4] pts (95% t, 2 df)``; with up to 4 digits where an end would otherwise
        print as one of the bounds ``against`` it is judged by while it is not (which side of the
        bound it lies on is the verdict).

        >>> iv = Interval(4.6, -0.0006, 9.2, 2.0, 7.4, 0.95, "t")
        >>> iv.text()
        '+4.6 [-0.0, +9.2] pts (95% t, 7.4 df)'
        >>> iv.text(against=(0.0, 2.0))
        '+4.600 [-0.001, +9.200] pts (95% t, 7.4 df)'
        """
        while digits < 4 and any(end != bound and round(end, digits) == round(bound, digits)
                                 for end in (self.low, self.high) for bound in against):
            digits += 1
        f = f"{{:+.{digits}f}}"
        return (f"{f.format(self.value)} [{f.format(self.low)}, {f.format(self.high)}]{unit} "
                f"({self.level:.0%} {self.short_method})")

    @property
    def short_method(self) -> str:
        return "no interval (1 seed)" if not math.isfinite(self.df) or self.df <= 0 else f"t, {self.df:.3g} df"

    def as_dict(self) -> dict:
        return {"value": self.value, "interval": [self.low, self.high], "se": self.se, "df": self.df,
                "level": self.level, "method": self.method, "per_seed": self.per_seed, "se_parts": self.parts}


def t_quantile(level: float, df: float) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom.

    >>> round(t_quantile(0.95, 2), 3), round(t_quantile(0.95, 1e9), 3)
    (4.303, 1.96)
    """
    _check_level(level)
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    return float(sps.t.ppf(0.5 + level / 2, df))


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"a confidence level lies strictly between 0 and 1, got {level}")


def _interval(value: float, se: float, df: float, level: float, method: str, per_seed: dict, parts: dict) -> Interval:
    if df <= 0 or not math.isfinite(se):
        return Interval(value, -math.inf, math.inf, math.inf, 0.0, level, method, per_seed, parts)
    half = t_quantile(level, df) * se
    return Interval(value, value - half, value + half, se, df, level, method, per_seed, parts)


def combine(arms: Sequence[tuple[float, Mapping[int, float]]]) -> dict[int, float]:
    """Per seed, ``sum_a w_a x_{a,s}`` of ``arms`` = [(w_a, {seed: x_{a,s}})]; ValueError if the
    arms were measured on different seeds (they are paired by seed id).

    >>> combine([(1, {0: 60.0, 1: 62.0}), (-1, {0: 50.0, 1: 51.0})])
    {0: 10.0, 1: 11.0}
    """
    seeds = sorted(arms[0][1])
    for _, values in arms:
        if sorted(values) != seeds:
            raise ValueError(f"arms measured at different seeds: {seeds} and {sorted(values)}")
    return {s: float(sum(w * values[s] for w, values in arms)) for s in seeds}


def t_interval(per_seed: Mapping[int, float], level: float = LEVEL) -> Interval:
    """Student-t interval of the mean of paired per-seed values (k - 1 df).

    Parameters
    ----------
    per_seed : {seed: value}, e.g. :func:`combine` of the arms.
    level : two-sided confidence level.

    Returns
    -------
    Interval with ``method`` "paired t over k seeds (k - 1 df)"; with one seed, infinite.

    Examples
    --------
    Differences 1, 2, 3: mean 2, sd 1, se 1/sqrt(3), t(0.975, 2) = 4.303, half-width 2.484:

    >>> iv = t_interval({0: 1.0, 1: 2.0, 2: 3.0})
    >>> round(iv.low, 3), round(iv.high, 3), iv.df
    (-0.484, 4.484, 2.0)
    """
    values = np.array([per_seed[s] for s in sorted(per_seed)], dtype=float)
    k = len(values)
    if k == 0:
        raise ValueError("no seed to take an interval over")
    if not np.isfinite(values).all():
        raise ValueError(f"per-seed values must be finite, got {values.tolist()}")
    _check_level(level)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(k)) if k > 1 else math.inf
    return _interval(mean, se, float(k - 1), level, f"paired t over {k} seeds ({k - 1} df)", dict(per_seed),
                     {"seeds": se})


def _table(arms: Sequence[tuple[float, Mapping[int, np.ndarray]]], scale: float) -> tuple[list[int], np.ndarray]:
    """The seeds x examples table of per-example paired differences (module doc)."""
    if not arms:
        raise ValueError("no arm to take a difference of")
    seeds = sorted(arms[0][1])
    if not seeds:
        raise ValueError("no seed to take an interval over")
    n = None
    rows = np.zeros((len(seeds), 0))
    for w, by_seed in arms:
        if sorted(by_seed) != seeds:
            raise ValueError(f"arms measured at different seeds: {seeds} and {sorted(by_seed)}")
        lengths = {np.asarray(by_seed[s]).shape for s in seeds}
        if len(lengths) != 1 or len(next(iter(lengths))) != 1:
            raise ValueError(f"every seed of an arm needs one correctness vector of the same length, got shapes "
                             f"{sorted(lengths)}")
        block = np.array([np.asarray(by_seed[s], dtype=float) for s in seeds])
        if not np.isfinite(block).all():
            raise ValueError("per-example correctness must be finite (NaN or infinity found)")
        if block.ndim != 2 or (n is not None and block.shape[1] != n):
            raise ValueError("every arm and seed must be scored on the same test examples "
                             f"(got lengths {sorted({len(np.asarray(v)) for v in by_seed.values()})}, expected {n})")
        n = block.shape[1]
        rows = block * w if rows.size == 0 else rows + block * w
    if not n:
        raise ValueError("no test example")
    return seeds, scale * rows


def mean_squares(table: np.ndarray) -> tuple[float, float, float]:
    """(MS_S, MS_E, MS_R) of a k x n two-way table without replication (k, n >= 2)."""
    k, n = table.shape
    grand = table.mean()
    by_seed, by_example = table.mean(axis=1), table.mean(axis=0)
    ms_s = n * float(((by_seed - grand) ** 2).sum()) / (k - 1)
    ms_e = k * float(((by_example - grand) ** 2).sum()) / (n - 1)
    residual = table - by_seed[:, None] - by_example[None, :] + grand
    ms_r = float((residual ** 2).sum()) / ((k - 1) * (n - 1))
    return ms_s, ms_e, ms_r


def two_way_variance(table: np.ndarray) -> tuple[float, float, float]:
    """The variance parts of a k x n table's mean (module doc) and the denominator of their
    Satterthwaite df: (seeds part max(MS_S, MS_R) / (kn), shared part max(0, MS_E - MS_R) / (kn),
    sum of each estimated mean square's squared weight over its df)."""
    k, n = table.shape
    ms_s, ms_e, ms_r = mean_squares(table)
    a = 1.0 / (k * n)
    seeds, shared = a * max(ms_s, ms_r), a * max(0.0, ms_e - ms_r)
    terms = seeds ** 2 / (k - 1)
    if shared > 0:
        terms += (a * ms_e) ** 2 / (n - 1) + (a * ms_r) ** 2 / ((k - 1) * (n - 1))
    return seeds, shared, terms


def paired_difference(arms: Sequence[tuple[float, Mapping[int, np.ndarray]]], level: float = LEVEL,
                      scale: float = 100.0) -> Interval:
    """The interval of ``sum_a w_a accuracy_a`` from per-example correctness on shared test examples.

    Parameters
    ----------
    arms : [(w_a, {seed: correctness})], correctness a length-n array of 0/1 (bool) for the same n
        test examples in the same order for every arm and seed.
    level : two-sided confidence level.
    scale : what accuracy 1 stands for (100: points).

    Returns
    -------
    Interval: value the mean over seeds of the combination, se from the two-way table (module doc),
    Satterthwaite df; ``parts`` the seed and shared-test standard errors.  One seed: infinite.

    Examples
    --------
    Two arms on 4 examples, 2 seeds; the difference is 25 points on both seeds and the per-example
    differences agree across seeds, so all spread is between examples (shared by every seed):

    >>> a = {0: [1, 1, 0, 0], 1: [1, 1, 0, 0]}
    >>> b = {0: [1, 0, 0, 0], 1: [1, 0, 0, 0]}
    >>> iv = paired_difference([(1, a), (-1, b)])
    >>> iv.value, iv.parts["seeds"], round(iv.parts["test"], 3)
    (25.0, 0.0, 25.0)
    """
    seeds, table = _table(arms, scale)
    k, n = table.shape
    per_seed = {s: float(v) for s, v in zip(seeds, table.mean(axis=1))}
    value = float(table.mean())
    if k < 2:
        return _interval(value, math.inf, 0.0, level, "1 seed: no interval", per_seed, {"seeds": math.inf})
    if n < 2:
        raise ValueError("a paired test-set term needs at least 2 test examples")
    seeds_part, shared, terms = two_way_variance(table)
    var = seeds_part + shared
    parts = {"seeds": math.sqrt(seeds_part), "test": math.sqrt(shared)}
    if var <= 0:
        return _interval(value, 0.0, float(k - 1), level, f"paired seeds x {n} test examples: no spread",
                         per_seed, parts)
    df = var ** 2 / terms
    method = (f"paired over {k} seeds x {n} shared test examples (two-way: seeds se {parts['seeds']:.2f}, "
              f"test se {parts['test']:.2f}), t with {df:.1f} df (Satterthwaite)")
    return _interval(value, math.sqrt(var), df, level, method, per_seed, parts)


def unpaired_difference(arms: Sequence[tuple[float, Mapping[int, np.ndarray]]], level: float = LEVEL,
                        scale: float = 100.0) -> Interval:
    """As :func:`paired_difference`, but as if the arms were independent: the sum of each arm's
    own variance (seeds and test terms), every covariance between arms ignored.  For comparison
    only (``tests/stats/test_stats.py``): no claim uses it."""
    seeds, table = _table(arms, scale)
    k, n = table.shape
    var, terms = 0.0, 0.0
    for w, by_seed in arms:
        seeds_part, shared, own_terms = two_way_variance(_table([(w, by_seed)], scale)[1])
        var += seeds_part + shared
        terms += own_terms
    df = var ** 2 / terms if terms > 0 else float(k - 1)
    return _interval(float(table.mean()), math.sqrt(var), df, level, f"unpaired, t with {df:.1f} df",
                     {s: float(v) for s, v in zip(seeds, table.mean(axis=1))}, {})


COVERAGE_WINDOW = (0.94, 0.985)
"""Where a 95% interval's simulated coverage must lie (docs/statistics.md): below, it misleads;
above, it wastes seeds."""
COVERAGE_CELLS = ((3, 1_000), (3, 5_000), (6, 1_000), (6, 5_000), (8, 1_000), (8, 5_000),
                  (4, 10_000), (6, 10_000), (8, 10_000))
"""(seeds, shared test examples) of the designs, where the coverage is simulated (the last three:
the pooling factorial's looks on its 10,000 test images, added 2026-12-06)."""


def coverage_seed(k: int, n: int) -> int:
    """The simulation seed of a coverage cell (fixed 2026-12-05, before its runs)."""
    return 1000 + 10 * k + n


def simulate_coverage(k: int, n: int, replicates: int, *, accuracies: tuple[float, float] = (0.60, 0.63),
                      rho: float = 0.8, example_share: float = 0.5, seed_sd: float = 0.05, level: float = LEVEL,
                      seed: int = 0) -> float:
    """The share of :func:`paired_difference` intervals (arm 1 - arm 0) that cover the true difference,
    in a simulation of binary correctness with examples correlated across arms.

    Arm ``a`` on seed ``s`` gets example ``i`` right iff ``m_a + seed_sd u_{a,s} + sqrt(w) b_{a,i} +
    sqrt(1 - w) e_{a,s,i} > 0`` (all standard normal, ``w`` = ``example_share``): ``b_{a,i}`` is how
    hard example ``i`` is for arm ``a``, the same for every seed and correlated ``rho`` across arms
    (``b_{a,i} = sqrt(rho) c_i + sqrt(1 - rho) f_{a,i}``), ``u`` a seed's shift, ``m_a`` set so that
    arm ``a``'s accuracy over seeds and examples is ``accuracies[a]``.  The truth is the difference of
    those accuracies (points); the test examples are drawn afresh in every replicate.

    Parameters
    ----------
    k, n : seeds and shared test examples of the design.
    replicates : simulated experiments.
    accuracies, rho, example_share, seed_sd : the model above.
    level : the interval's level.
    seed : the simulation's random seed.

    Returns
    -------
    float : the share of replicates whose interval holds the truth.
    """
    if k < 2 or n < 2 or replicates < 1:
        raise ValueError(f"simulate_coverage needs k >= 2, n >= 2 and replicates >= 1, got {k}, {n}, {replicates}")
    rng = np.random.default_rng(seed)
    scale = math.sqrt(1 + seed_sd ** 2)
    means = [float(sps.norm.ppf(a)) * scale for a in accuracies]
    truth = 100.0 * (accuracies[1] - accuracies[0])
    w = example_share
    covered = 0
    for _ in range(replicates):
        common = math.sqrt(rho) * rng.standard_normal(n)
        arms = []
        for m in means:
            b = common + math.sqrt(1 - rho) * rng.standard_normal(n)
            latent = (m + seed_sd * rng.standard_normal((k, 1)) + math.sqrt(w) * b
                      + math.sqrt(1 - w) * rng.standard_normal((k, n)))
            arms.append(dict(enumerate(latent > 0)))
        iv = paired_difference([(1, arms[1]), (-1, arms[0])], level)
        covered += iv.low <= truth <= iv.high
    return covered / replicates


# ------------------------------------------------------------------------------------ verdicts
def at_least(iv: Interval, threshold: float) -> str:
    """PASS if the interval lies at or above ``threshold``, FAIL if wholly below, else INCONCLUSIVE.

    >>> at_least(t_interval({0: 5.0, 1: 6.0, 2: 7.0}), 0.0), at_least(t_interval({0: -1.0, 1: 2.0}), 0.0)
    ('PASS', 'INCONCLUSIVE')
    """
    return "PASS" if iv.low >= threshold else "FAIL" if iv.high < threshold else "INCONCLUSIVE"


def within(iv: Interval, bound: float) -> str:
    """PASS if the interval lies inside [-bound, bound], FAIL if wholly outside, else INCONCLUSIVE."""
    if -bound <= iv.low and iv.high <= bound:
        return "PASS"
    return "FAIL" if iv.low > bound or iv.high < -bound else "INCONCLUSIVE"


@dataclass(frozen=True)
class ReachTest:
    """The exact paired test of :func:`reach_test`: seeds where only arm a / only arm b reached the
    bar, both, neither, and the one-sided p-value that a reaches it more often than b."""

    only_a: int
    only_b: int
    both: int
    neither: int
    p_value: float

    def text(self) -> str:
        k = self.only_a + self.only_b + self.both + self.neither
        return (f"{self.only_a + self.both}/{k} vs {self.only_b + self.both}/{k} seeds reached the bar "
                f"({self.only_a} only a, {self.only_b} only b), exact one-sided p = {self.p_value:.3g}")


def reach_test(a: Mapping[int, bool], b: Mapping[int, bool]) -> ReachTest:
    """Whether arm ``a`` reaches a bar on more seeds than arm ``b``, the arms paired by seed:
    McNemar's exact test (the discordant seeds, binomial with p = 1/2 under no difference; scipy's
    ``binomtest``), one-sided.  The co-primary endpoint of a design whose escape times are
    bimodal: a count of the seeds that reach the bar within the budget beside the mean.

    Parameters
    ----------
    a, b : {seed: reached the bar within the budget}, on the same seeds.

    Returns
    -------
    ReachTest; its p-value is 1 where no seed is discordant.

    Examples
    --------
    Six seeds, a reaches the bar on all, b on one: 5 discordant seeds all for a, p = 0.5^5:

    >>> r = reach_test({s: True for s in range(6)}, {s: s == 0 for s in range(6)})
    >>> r.only_a, r.only_b, r.p_value
    (5, 0, 0.03125)
    """
    if sorted(a) != sorted(b):
        raise ValueError(f"arms measured at different seeds: {sorted(a)} and {sorted(b)}")
    if not a:
        raise ValueError("no seed to test")
    only_a = sum(bool(a[s]) and not b[s] for s in a)
    only_b = sum(bool(b[s]) and not a[s] for s in a)
    both = sum(bool(a[s]) and bool(b[s]) for s in a)
    discordant = only_a + only_b
    p = float(sps.binomtest(only_a, discordant, 0.5, alternative="greater").pvalue) if discordant else 1.0
    return ReachTest(only_a, only_b, both, len(a) - discordant - both, p)


# ------------------------------------------------------------------------------------ design
def power(separation: float, sd: float, k: int, level: float = LEVEL) -> float:
    """The chance that a one-sided bound of a two-sided ``level`` t interval over ``k`` paired seeds
    (paired sd ``sd``) excludes a value ``separation`` away from the true mean.

    Parameters
    ----------
    separation : distance between the truth and the value to exclude (same units as ``sd``).
    sd : the paired per-seed standard deviation.
    k : seeds (k - 1 df).
    level : two-sided confidence level of the interval.

    Returns
    -------
    float : 1 - F_nct(t_q; k - 1, separation sqrt(k) / sd).

    Examples
    --------
    With no separation the bound excludes the truth only in its own tail, (1 - level) / 2:

    >>> round(power(0.0, 1.0, 8), 4)
    0.025
    """
    if not (math.isfinite(sd) and sd > 0) or not math.isfinite(separation):
        raise ValueError(f"power needs a finite separation and a positive, finite sd, got separation {separation}, "
                         f"sd {sd}")
    if k < 2:
        return 0.0
    return float(sps.nct.sf(t_quantile(level, k - 1), k - 1, separation * math.sqrt(k) / sd))


def separation_for(target: float, sd: float, k: int, level: float = LEVEL) -> float:
    """The least separation with :func:`power` >= ``target`` (bisection on a monotone function)."""
    lo, hi = 0.0, sd
    while power(hi, sd, k, level) < target:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power(mid, sd, k, level) < target else (lo, mid)
    return hi


def slope_interval(xs: Sequence[float], ys: Sequence[float], level: float = LEVEL) -> Interval:
    """Least-squares slope of ``ys`` on ``xs`` with its t interval (N - 2 df; scipy.stats.linregress).

    >>> iv = slope_interval([0, 1, 2, 3], [0.0, 1.0, 2.0, 3.0])
    >>> iv.value, iv.half_width, iv.df
    (1.0, 0.0, 2.0)
    """
    if len(xs) < 3:
        raise ValueError("a slope interval needs at least 3 points")
    fit = sps.linregress(np.asarray(xs, float), np.asarray(ys, float))
    return _interval(float(fit.slope), float(fit.stderr), float(len(xs) - 2), level,
                     f"least-squares slope over {len(xs)} points, t with {len(xs) - 2} df", {}, {})

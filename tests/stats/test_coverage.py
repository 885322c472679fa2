"""The paired interval's coverage in a simulation of the real designs (binary correctness, examples
correlated 0.8 across arms), and its width when per-seed gains are equal."""

import numpy as np
import pytest

from spt_theory.stats import COVERAGE_CELLS, COVERAGE_WINDOW, coverage_seed, paired_difference, simulate_coverage


def in_window(coverage: float) -> bool:
    low, high = COVERAGE_WINDOW
    return low <= coverage <= high


def test_the_paired_interval_covers_within_the_window_at_three_seeds_and_1000_examples():
    """The cell where a df cap at k - 1 over-covered most (0.998): with Satterthwaite's df and the
    residual floor, 0.974 at 2,000 replicates (binomial se 0.004)."""
    assert in_window(simulate_coverage(3, 1000, 2000, seed=coverage_seed(3, 1000)))


@pytest.mark.slow
@pytest.mark.parametrize("k, n", COVERAGE_CELLS)
def test_the_paired_interval_covers_within_the_window_in_every_design_cell(k, n):
    """4,000 replicates a cell (binomial se 0.0034 at 0.95); docs/statistics.md's table."""
    assert in_window(simulate_coverage(k, n, 4000, seed=coverage_seed(k, n)))


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.92, 0.993])
def test_the_window_refuses_an_interval_that_covers_093_or_099(level):
    """The same interval at another nominal level covers about 0.93 / 0.99 at k = 8, n = 1,000 (where
    the 95% interval is near nominal): the coverage test would fail it."""
    coverage = simulate_coverage(8, 1000, 2000, level=level, seed=coverage_seed(8, 1000))
    assert abs(coverage - (0.93 if level < 0.95 else 0.99)) < 0.015
    assert not in_window(coverage)


def test_equal_per_seed_gains_do_not_give_a_zero_width_interval():
    """Three seeds, each exactly 0.5 points better on 1,000 shared examples, but on different
    examples: the examples disagree, so the interval is not a point."""
    rng = np.random.default_rng(0)
    base = {s: rng.random(1000) < 0.6 for s in range(3)}
    better = {}
    for s, row in base.items():
        flipped = row.copy()
        wrong = np.flatnonzero(~row)
        flipped[rng.choice(wrong, 5, replace=False)] = True
        better[s] = flipped
    iv = paired_difference([(1, better), (-1, base)])
    assert iv.per_seed == {0: 0.5, 1: 0.5, 2: 0.5}
    assert iv.high - iv.low > 0.1 and iv.low < 0.5 < iv.high


def test_df_may_exceed_the_seeds_where_the_shared_examples_carry_the_variance():
    """Satterthwaite's df of the crossed design, no cap at k - 1 (2026-12-05, issue 56): identical
    seeds leave all the variance to the shared examples, whose mean square has n - 1 df."""
    rng = np.random.default_rng(1)
    row_a, row_b = rng.random(500) < 0.6, rng.random(500) < 0.7
    a = {s: row_a.copy() for s in range(4)}
    b = {s: row_b.copy() for s in range(4)}
    for s in range(4):  # a little seed x example noise, so the residual is not zero
        b[s][s] = not b[s][s]
    assert paired_difference([(1, b), (-1, a)]).df > 3


def test_degenerate_input_is_refused_in_one_line():
    import pytest

    from spt_theory import stats

    cases = [(lambda: stats.power(1.0, 0.0, 8), "sd"),
             (lambda: stats.paired_difference([]), "no arm"),
             (lambda: stats.paired_difference([(1, {0: [1, 0], 1: [1]})]), "same length"),
             (lambda: stats.paired_difference([(1, {0: [1.0, float("nan")], 1: [1.0, 0.0]})]), "finite"),
             (lambda: stats.t_interval({0: float("nan"), 1: 1.0}), "finite"),
             (lambda: stats.t_quantile(1.5, 3), "between 0 and 1")]
    for call, words in cases:
        with pytest.raises(ValueError, match=words):
            call()

"""The paired interval's coverage in a simulation of the real designs (binary correctness, examples
correlated 0.8 across arms), and its width when per-seed gains are equal."""

import numpy as np

from spt_theory.stats import paired_difference, simulate_coverage


def test_the_paired_interval_covers_at_least_094_at_three_seeds():
    """4,000 replicates: the binomial se at 0.95 is 0.0034, so 0.94 lies 3 se under the nominal level
    and a true coverage of 0.93 (Satterthwaite's df uncapped: 0.923 in this model) fails 99.8% of
    the time.  k = 3 is the worst cell of docs/statistics.md's table (k = 3, 6, 8; n = 1,000, 5,000)."""
    assert simulate_coverage(3, 1000, 4000, seed=11) >= 0.94


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


def test_df_never_exceed_the_seeds():
    rng = np.random.default_rng(1)
    arms = [{s: rng.random(500) < p for s in range(4)} for p in (0.6, 0.7)]
    assert paired_difference([(1, arms[1]), (-1, arms[0])]).df <= 3


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

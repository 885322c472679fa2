"""spt_theory.stats: the intervals cover what they claim, pairing narrows them, power is what a simulation gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spt_theory import stats

REPLICATES = 4000


def _t_coverage(k: int, mu: float, sigma: float, seed: int, quantile=None) -> float:
    rng = np.random.default_rng(seed)
    draws = rng.normal(mu, sigma, size=(REPLICATES, k))
    mean, se = draws.mean(axis=1), draws.std(axis=1, ddof=1) / math.sqrt(k)
    q = stats.t_quantile(0.95, k - 1) if quantile is None else quantile
    return float(np.mean(np.abs(mean - mu) <= q * se))


@settings(max_examples=15, deadline=None)
@given(k=st.integers(2, 10), mu=st.floats(-50, 50), sigma=st.floats(0.1, 20), seed=st.integers(0, 2 ** 32 - 1))
def test_t_interval_covers_the_mean_of_normal_seeds_95_percent_of_the_time(k, mu, sigma, seed):
    # binomial sd of the coverage over 4000 replicates: 0.0034; the window is about +-6 sd
    assert 0.93 <= _t_coverage(k, mu, sigma, seed) <= 0.97


def test_the_z_interval_it_replaces_undercovers_three_seeds():
    """The old rule (D +- 1.96 SE on 3 seeds) covers about 86%, not 95%."""
    assert _t_coverage(3, 0.0, 1.0, 0, quantile=1.96) < 0.90
    assert 0.93 <= _t_coverage(3, 0.0, 1.0, 0) <= 0.97


def test_t_interval_is_the_one_the_function_returns():
    rng = np.random.default_rng(1)
    values = dict(enumerate(rng.normal(2.0, 3.0, size=5)))
    iv = stats.t_interval(values)
    arr = np.array(list(values.values()))
    half = 2.7764451051977987 * arr.std(ddof=1) / math.sqrt(5)  # t(0.975, 4)
    assert iv.df == 4 and iv.low == pytest.approx(arr.mean() - half) and iv.high == pytest.approx(arr.mean() + half)
    assert "4 df" in iv.text() and "4 df" in iv.method


def test_one_seed_has_no_interval():
    iv = stats.t_interval({0: 3.0})
    assert iv.low == -math.inf and iv.high == math.inf
    assert stats.at_least(iv, 0.0) == "INCONCLUSIVE" and stats.within(iv, 3.0) == "INCONCLUSIVE"
    paired = stats.paired_difference([(1, {0: [1, 0, 1]}), (-1, {0: [0, 0, 1]})])
    assert math.isinf(paired.se)


def test_arms_on_different_seeds_or_examples_are_refused():
    with pytest.raises(ValueError, match="different seeds"):
        stats.combine([(1, {0: 1.0, 1: 2.0}), (-1, {0: 1.0, 2: 2.0})])
    with pytest.raises(ValueError, match="same test examples"):
        stats.paired_difference([(1, {0: [1, 0], 1: [1, 1]}), (-1, {0: [1, 0, 1], 1: [1, 1, 0]})])


def _two_way(rng, k, n, mu, s_seed, s_example, s_noise):
    return (mu + rng.normal(0, s_seed, size=(k, 1)) + rng.normal(0, s_example, size=(1, n))
            + rng.normal(0, s_noise, size=(k, n)))


@pytest.mark.parametrize("k, n, s_seed, s_example", [(3, 200, 1.0, 5.0), (8, 500, 2.0, 10.0), (4, 100, 0.5, 0.0),
                                                     (6, 1000, 3.0, 30.0)])
def test_two_way_interval_covers_the_mean_in_the_random_effects_model(k, n, s_seed, s_example):
    """d = mu + seed effect + example effect (shared by every seed) + noise: coverage of mu about 95%."""
    rng = np.random.default_rng(k * 1000 + n)
    hits = 0
    for _ in range(800):
        table = _two_way(rng, k, n, 7.0, s_seed, s_example, 40.0)
        iv = stats.paired_difference([(1, dict(enumerate(table)))], scale=1.0)
        hits += iv.low <= 7.0 <= iv.high
    assert hits / 800 >= 0.93  # binomial sd 0.0077 at 800; above 0.98 where the seeds' spread is small
    # (df capped at k - 1, the residual standing in for a seeds mean square below it: docs/statistics.md)


def test_the_test_part_shrinks_with_the_test_set_and_the_seed_part_with_seeds():
    rng = np.random.default_rng(3)
    small = stats.paired_difference([(1, dict(enumerate(_two_way(rng, 4, 250, 0, 1, 20, 40))))], scale=1.0)
    large = stats.paired_difference([(1, dict(enumerate(_two_way(rng, 4, 4000, 0, 1, 20, 40))))], scale=1.0)
    assert large.parts["test"] < 0.5 * small.parts["test"]
    few = [stats.paired_difference([(1, dict(enumerate(_two_way(rng, 3, 500, 0, 2, 0, 40))))], scale=1.0)
           for _ in range(50)]
    many = [stats.paired_difference([(1, dict(enumerate(_two_way(rng, 12, 500, 0, 2, 0, 40))))], scale=1.0)
            for _ in range(50)]
    assert np.mean([iv.half_width for iv in many]) < 0.6 * np.mean([iv.half_width for iv in few])


def test_two_way_variance_agrees_with_a_two_level_bootstrap():
    """Resampling seeds and examples independently gives about the analytic variance (the bootstrap
    also counts the seed x example noise a second time, sigma_eps^2 / (k n): within 20%)."""
    rng = np.random.default_rng(11)
    k, n = 8, 400
    skill = rng.normal(0, 1, size=n)
    a = (rng.normal(0.3, 0.3, size=(k, 1)) + skill + rng.normal(0, 1, size=(k, n)) > 0).astype(float)
    b = (rng.normal(0.0, 0.3, size=(k, 1)) + skill + rng.normal(0, 1, size=(k, n)) > 0).astype(float)
    iv = stats.paired_difference([(1, dict(enumerate(a))), (-1, dict(enumerate(b)))])
    d = 100 * (a - b)
    boots = [d[rng.integers(0, k, k)][:, rng.integers(0, n, n)].mean() for _ in range(3000)]
    assert np.var(boots, ddof=1) == pytest.approx(iv.se ** 2, rel=0.2)


@st.composite
def correlated_arms(draw):
    """Two arms on the same seeds and examples; arm b copies arm a's correctness except for flips."""
    k = draw(st.integers(2, 6))
    n = draw(st.integers(5, 60))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    flip = draw(st.floats(0.0, 0.4))
    rng = np.random.default_rng(seed)
    a = rng.random((k, n)) < rng.uniform(0.2, 0.8, size=(1, n))
    b = np.where(rng.random((k, n)) < flip, ~a, a)
    return dict(enumerate(a)), dict(enumerate(b))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(correlated_arms())
def test_paired_standard_error_is_no_larger_than_unpaired_for_positively_correlated_arms(arms):
    """Where the arms' estimated covariance is >= 0 at the seed level and the example level, the
    paired standard error is at most the unpaired one (the widths also depend on df)."""
    a, b = arms
    ta, tb = (np.array([x[s] for s in sorted(x)], dtype=float) for x in (a, b))
    k, n = ta.shape

    def cross(u, v):
        us, vs = u.mean(axis=1) - u.mean(), v.mean(axis=1) - v.mean()
        ue, ve = u.mean(axis=0) - u.mean(), v.mean(axis=0) - v.mean()
        ur = u - u.mean(axis=1, keepdims=True) - u.mean(axis=0, keepdims=True) + u.mean()
        vr = v - v.mean(axis=1, keepdims=True) - v.mean(axis=0, keepdims=True) + v.mean()
        return (n * (us @ vs) / (k - 1), k * (ue @ ve) / (n - 1),
                float((ur * vr).sum()) / ((k - 1) * (n - 1)))

    c_s, c_e, c_r = cross(ta, tb)
    assume(c_s >= 0 and c_e - c_r >= 0)
    ms_s, _, ms_r = stats.mean_squares(ta - tb)
    assume(ms_s >= ms_r)  # below it the residual stands in for the seeds' mean square (module doc)
    paired = stats.paired_difference([(1, a), (-1, b)])
    unpaired = stats.unpaired_difference([(1, a), (-1, b)])
    assert paired.se <= unpaired.se + 1e-9
    assert paired.value == pytest.approx(unpaired.value)


@pytest.mark.parametrize("separation, sd, k", [(2.9, 2.5, 8), (1.0, 2.5, 4), (5.0, 8.2, 8)])
def test_power_is_what_a_simulation_of_the_design_gives(separation, sd, k):
    rng = np.random.default_rng(int(separation * 10) + k)
    draws = rng.normal(separation, sd, size=(20000, k))
    low = draws.mean(axis=1) - stats.t_quantile(0.95, k - 1) * draws.std(axis=1, ddof=1) / math.sqrt(k)
    assert stats.power(separation, sd, k) == pytest.approx(float(np.mean(low > 0)), abs=0.015)


def test_separation_for_inverts_power():
    s = stats.separation_for(0.8, 2.5, 8)
    assert stats.power(s, 2.5, 8) == pytest.approx(0.8, abs=1e-6)
    assert stats.separation_for(0.8, 2.5, 16) < s


def test_reach_test_is_mcnemars_exact_test_on_the_discordant_seeds():
    from spt_theory.stats import reach_test

    a = {0: True, 1: True, 2: True, 3: True, 4: False, 5: True, 6: True, 7: True}
    b = {0: False, 1: False, 2: True, 3: False, 4: False, 5: False, 6: False, 7: True}
    r = reach_test(a, b)
    assert (r.only_a, r.only_b, r.both, r.neither) == (5, 0, 2, 1)
    assert r.p_value == 0.5 ** 5
    assert reach_test(b, a).p_value == 1.0  # b reaches the bar on no seed where a does not
    assert reach_test(a, a).p_value == 1.0  # no discordant seed
    with pytest.raises(ValueError, match="different seeds"):
        reach_test(a, {0: True})

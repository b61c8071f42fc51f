"""The small-sample t interval of the leaderboard's bootstrap, and the test that inverts it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from stats.leaderboard import small_sample_t_interval, t_p_value


def test_the_interval_widens_the_bootstrap_se_by_sqrt_g_over_g_minus_one_and_takes_t_quantiles() -> None:
    draws = np.array([1.0, 2.0, 4.0, 7.0, 11.0])
    ci = small_sample_t_interval(3.0, [(draws, 10)], confidence=0.9)
    se = np.std(draws, ddof=1) * (10 / 9) ** 0.5
    half = scipy_stats.t.ppf(0.95, 9) * se
    assert ci.std_error == pytest.approx(se) and ci.df == 9
    assert (ci.low, ci.high) == pytest.approx((3.0 - half, 3.0 + half))
    assert ci.p_value == pytest.approx(2 * scipy_stats.t.sf(3.0 / se, 9))


@pytest.mark.parametrize("seed", range(6))
def test_the_p_value_is_below_alpha_exactly_when_the_interval_leaves_zero_out(seed: int) -> None:
    rng = np.random.default_rng(seed)
    draws = rng.normal(0, 1 + seed, 400)
    se = np.std(draws, ddof=1) * (15 / 14) ** 0.5
    for confidence in (0.9, 0.95, 0.99):
        edge = scipy_stats.t.ppf((1 + confidence) / 2, 14) * se  # the estimate whose interval touches 0
        for estimate in (-2 * edge, -edge * 1.001, -edge * 0.999, 0.0, edge * 0.5, edge * 0.999, edge * 1.001, 3 * edge):
            ci = small_sample_t_interval(estimate, [(draws, 15)], confidence)
            leaves_zero_out = ci.low > 0 or ci.high < 0
            assert (ci.p_value < 1 - confidence) == leaves_zero_out, (confidence, estimate)
        assert small_sample_t_interval(edge, [(draws, 15)], confidence).p_value == pytest.approx(1 - confidence)


def test_two_independent_samples_add_their_variances_and_take_welchs_degrees_of_freedom() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 2, 300), rng.normal(0, 0.5, 300)
    ci = small_sample_t_interval(1.0, [(a, 6), (b, 20)])
    va, vb = 6 / 5 * np.var(a, ddof=1), 20 / 19 * np.var(b, ddof=1)
    assert ci.std_error == pytest.approx((va + vb) ** 0.5)
    assert ci.df == pytest.approx((va + vb) ** 2 / (va**2 / 5 + vb**2 / 19))
    assert 5 < ci.df < 24  # between the smaller sample's G - 1 and the pooled G_a + G_b - 2


def test_undefined_resamples_are_left_out_of_every_sample_and_counted() -> None:
    a = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    b = np.array([0.0, 1.0, np.nan, 1.0, 2.0])
    ci = small_sample_t_interval(2.0, [(a, 5), (b, 5)])
    assert ci.n_resamples == 5 and ci.n_undefined == 2 and "2 of 5 resamples (40.0%)" in ci.note
    kept = np.array([0, 3, 4])
    assert ci.std_error == pytest.approx((5 / 4 * np.var(a[kept], ddof=1) + 5 / 4 * np.var(b[kept], ddof=1)) ** 0.5)
    none = small_sample_t_interval(2.0, [(np.array([np.nan, 1.0]), 5)])
    assert none.low is None and none.p_value is None and none.n_undefined == 1
    assert small_sample_t_interval(float("nan"), [(a, 5)]).p_value is None


def test_every_resample_alike_gives_a_point_and_a_p_value_of_one_only_at_zero() -> None:
    flat = np.full(50, 0.0)
    ci = small_sample_t_interval(0.0, [(flat, 12)])
    assert (ci.low, ci.high, ci.std_error, ci.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert t_p_value(0.3, 0.0, 11) == 0.0
    assert t_p_value(0.0, 0.2, 11) == 1.0


def test_bad_arguments_are_refused() -> None:
    draws = np.ones(5)
    with pytest.raises(ValueError, match="confidence"):
        small_sample_t_interval(0.0, [(draws, 4)], confidence=1.0)
    with pytest.raises(ValueError, match="two clusters"):
        small_sample_t_interval(0.0, [(draws, 1)])
    with pytest.raises(ValueError, match="same number"):
        small_sample_t_interval(0.0, [(draws, 4), (np.ones(4), 4)])
    with pytest.raises(ValueError, match="at least one"):
        small_sample_t_interval(0.0, [])
    with pytest.raises(ValueError, match="df"):
        t_p_value(1.0, 1.0, 0)

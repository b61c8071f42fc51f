"""Active inference (Zrnic & Candès, ICML 2024): the sampling rule, the estimator, batches.

``ppi_py`` has no active-inference function; the reference is the authors' own code
(github.com/tijana-zrnic/active-inference, the pew79 and census notebooks), whose lines are
transcribed in ``_authors_*`` below and compared with ours. Data are written for the tests:
small hand-computed cases and seeded simulated populations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from stats.active import (
    MIN_TUNE,
    SMALL_N,
    active_estimate,
    active_probabilities,
    draw_batch,
    expected_active_width,
    planned_variance,
    tune_mixing,
    visit_order,
)
from stats.data import StatsInputError
from stats.ppi.scores import VERA_MH

EXACT = 1e-12


def _authors_probs(uncertainty: np.ndarray, budget: float, tau: float) -> np.ndarray:
    """The authors' batch rule, as in their notebooks: eta = budget / mean(u); clip((1-tau) eta u + tau budget, 0, 1)."""
    eta = budget / np.mean(uncertainty)
    return np.clip((1 - tau) * eta * uncertainty + tau * budget, 0.0, 1.0)


def _authors_interval(yhat: np.ndarray, y: np.ndarray, xi: np.ndarray, probs: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """The authors' active estimate and interval (their lines, with alpha the miscoverage)."""
    n = len(y)
    pointest_active = np.mean(yhat + (y - yhat) * xi / probs)
    pointest_active_std = np.std(yhat + (y - yhat) * xi / probs) / np.sqrt(n)
    width_active = norm.ppf(1 - alpha / 2) * pointest_active_std
    return pointest_active, pointest_active - width_active, pointest_active + width_active


# --- the sampling rule ----------------------------------------------------------------------


def test_probabilities_equal_the_authors_rule_when_none_reaches_one():
    u = np.array([0.1, 0.2, 0.05, 0.3, 0.15, 0.2, 0.0, 0.25])
    for tau in (0.2, 0.5, 0.9):
        ours = active_probabilities(u, expected=2.0, tau=tau)
        assert ours == pytest.approx(_authors_probs(u, 2.0 / u.size, tau), abs=EXACT)


def test_probabilities_by_hand():
    # u = (0, 0, 0, 1, 1, 3), b = 2 of m = 6, tau = 0.5: shape (1 - tau) u / mean(u) + tau with mean(u) = 5/6.
    probs = active_probabilities([0, 0, 0, 1, 1, 3], 2, tau=0.5)
    assert probs == pytest.approx([1 / 6, 1 / 6, 1 / 6, 0.55 * 2 / 6 / 0.5, 0.55 * 2 / 6 / 0.5, 2.3 / 3], abs=EXACT)
    assert probs.sum() == pytest.approx(2, abs=EXACT)


def test_a_capped_probability_gives_its_budget_to_the_others():
    # The authors' clip would lose budget: u = (0, 0, 0, 1, 1, 3), b = 5, tau = 0.2 puts 1 conversation above 1,
    # then two; the rest share what is left (by hand: the three with u = 0 get 2/3 each).
    probs = active_probabilities([0, 0, 0, 1, 1, 3], 5, tau=0.2)
    assert probs == pytest.approx([2 / 3, 2 / 3, 2 / 3, 1, 1, 1], abs=EXACT)
    assert _authors_probs(np.array([0, 0, 0, 1, 1, 3.0]), 5 / 6, 0.2).sum() < 5  # what the clip alone would spend


@pytest.mark.parametrize("seed", range(5))
def test_probabilities_respect_the_budget_the_floor_and_the_order_of_uncertainty(seed):
    rng = np.random.default_rng(seed)
    u = rng.exponential(size=300) * (rng.random(300) < 0.3)
    for expected in (5.0, 30.0, 150.0, 299.0):
        for tau in (0.05, 0.2, 1.0):
            probs = active_probabilities(u, expected, tau=tau)
            assert probs.sum() == pytest.approx(expected, rel=1e-9)  # the budget, exactly in expectation
            assert probs.max() <= 1.0
            assert probs.min() >= tau * expected / u.size - 1e-12  # the floor: no conversation without a chance
            order = np.argsort(u, kind="stable")
            assert (np.diff(probs[order]) >= -1e-12).all()  # more uncertain, never less likely


def test_floor_one_is_uniform_sampling_and_no_uncertainty_is_uniform_too():
    assert active_probabilities([0.1, 0.9, 0.4, 0.0], 2, tau=1.0) == pytest.approx([0.5] * 4)
    assert active_probabilities([0.0, 0.0, 0.0, 0.0], 1, tau=0.2) == pytest.approx([0.25] * 4)
    assert active_probabilities([0.3, 0.3, 0.3], 3, tau=0.2) == pytest.approx([1.0] * 3)


@pytest.mark.parametrize(
    ("u", "expected", "tau", "message"),
    [
        ([0.1, -0.2], 1, 0.5, "uncertainties must be finite"),
        ([0.1, float("nan")], 1, 0.5, "uncertainties must be finite"),
        ([0.1, 0.2], 3, 0.5, r"expected number of ratings must lie in \(0, 2\]"),
        ([0.1, 0.2], 0, 0.5, "expected number of ratings"),
        ([0.1, 0.2], 1, 0.0, "floor"),
        ([0.1, 0.2], 1, 1.5, "floor"),
        ([], 1, 0.5, "no conversation"),
    ],
)
def test_probabilities_refuse_bad_input(u, expected, tau, message):
    with pytest.raises(StatsInputError, match=message):
        active_probabilities(u, expected, tau=tau)


def test_draws_and_visit_order_follow_the_seed():
    pi = np.full(1000, 0.3)
    assert (draw_batch(pi, 7) == draw_batch(pi, 7)).all()
    assert abs(draw_batch(pi, 7).sum() - 300) < 60
    assert sorted(visit_order(10, 3)) == list(range(10))
    assert (visit_order(10, 3) == visit_order(10, 3)).all()
    with pytest.raises(StatsInputError):
        draw_batch([0.5, 0.0], 1)


# --- the estimator ----------------------------------------------------------------------------


def test_estimate_by_hand():
    # Δ = (0.2 + 0.8/0.5, 0.8, 0.5 - 0.5/0.5, 0.5) = (1.8, 0.8, -0.5, 0.5): mean 0.65, var0 0.6725.
    est = active_estimate([0.2, 0.8, 0.5, 0.5], [1.0, np.nan, 0.0, np.nan], [True, False, True, False],
                          [0.5, 0.25, 0.5, 0.4])
    assert est.estimate == pytest.approx(0.65, abs=EXACT)
    assert est.std_error == pytest.approx(math.sqrt(0.6725 / 4), abs=EXACT)
    assert est.width == pytest.approx(2 * norm.ppf(0.975) * math.sqrt(0.6725 / 4), abs=1e-9)
    assert (est.n_visited, est.n_rated, est.judge_only) == (4, 2, pytest.approx(0.5))
    assert any("only 2 rated conversations" in note for note in est.notes)


@pytest.mark.parametrize("seed", range(4))
def test_estimate_equals_the_authors_code(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    y = (rng.random(n) < 0.4).astype(float)
    yhat = np.clip(y + rng.normal(0, 0.3, n), 0, 1)
    u = np.minimum(yhat, 1 - yhat)
    probs = np.clip(_authors_probs(u, 0.1, 0.5), 1e-6, 1)
    xi = (rng.random(n) < probs).astype(int)
    point, low, high = _authors_interval(yhat, y, xi, probs, alpha=0.1)
    ours = active_estimate(yhat, np.where(xi == 1, y, np.nan), xi.astype(bool), probs, confidence=0.9)
    assert ours.estimate == pytest.approx(point, abs=1e-10)
    assert (ours.low, ours.high) == (pytest.approx(low, abs=1e-10), pytest.approx(high, abs=1e-10))


def test_unrated_conversations_need_no_human_score_and_a_rated_one_without_it_is_dropped_and_counted():
    est = active_estimate([0.5] * 6, [1, np.nan, 0, np.nan, np.nan, 1], [True, False, True, True, False, True], [0.5] * 6)
    assert est.n_dropped == 1 and est.n_visited == 5 and est.n_rated == 3
    assert any("without a clinicians' score" in note for note in est.notes)


def test_no_interval_below_two_ratings_or_without_spread():
    one = active_estimate([0.5, 0.4, 0.6], [1, np.nan, np.nan], [True, False, False], [0.5, 0.5, 0.5])
    assert one.low is None and one.estimate is not None and one.cannot_estimate.startswith("cannot be estimated: only 1")
    flat = active_estimate([1.0] * 5, [1.0, 1.0, np.nan, np.nan, np.nan], [True, True, False, False, False], [0.5] * 5)
    assert flat.width is None and "do not vary" in flat.cannot_estimate
    empty = active_estimate(np.zeros((0, 1)), np.zeros((0, 1)), [], [])
    assert empty.estimate is None and "no conversation visited" in empty.cannot_estimate


def test_estimate_refuses_a_missing_judge_score_or_a_bad_probability():
    with pytest.raises(StatsInputError, match="needs a judge score"):
        active_estimate([0.5, np.nan], [1, 0], [True, True], [0.5, 0.5])
    with pytest.raises(StatsInputError, match=r"\(0, 1\]"):
        active_estimate([0.5, 0.5], [1, 0], [True, True], [0.5, 0.0])
    with pytest.raises(StatsInputError, match="same visited conversations"):
        active_estimate([0.5, 0.5], [1, 0], [True], [0.5, 0.5])


def test_vera_mh_score_plugs_the_estimated_means_in_and_takes_the_delta_method_interval():
    rng = np.random.default_rng(3)
    n = 400
    human = np.column_stack([rng.integers(0, 4, n), rng.integers(0, 2, n), np.full(n, 4)]).astype(float)
    judge = human.copy()
    judge[rng.random(n) < 0.3, 0] += 1
    pi = np.full(n, 0.25)
    xi = rng.random(n) < pi
    est = active_estimate(judge, np.where(xi[:, None], human, np.nan), xi, pi, target=VERA_MH)
    delta = judge + np.where(xi[:, None], (human - judge) / pi[:, None], 0.0)
    mu = delta.mean(axis=0)
    z = delta @ VERA_MH.gradient(mu)
    assert est.estimate == pytest.approx(VERA_MH.score(mu), abs=1e-10)
    assert est.std_error == pytest.approx(np.std(z) / math.sqrt(n), abs=1e-10)
    assert est.target == "vera_mh_score"


# --- unbiasedness and validity by simulation (fixed seeds) -------------------------------------


def _population(rng: np.random.Generator, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human scores, a judge that is worse where it is unsure, and its uncertainty."""
    hard = rng.random(n) < 0.25
    y = (rng.random(n) < np.where(hard, 0.6, 0.3)).astype(float)
    wrong = rng.random(n) < np.where(hard, 0.45, 0.05)
    yhat = np.where(wrong, 1 - y, y) * 0.8 + 0.1
    return y, yhat, np.where(hard, 0.8, 0.1)


def test_the_active_estimate_is_unbiased_over_repeated_draws():
    rng = np.random.default_rng(20240501)
    y, yhat, u = _population(rng)
    probs = active_probabilities(u, 60, tau=0.3)
    estimates = []
    for _ in range(4000):
        xi = draw_batch(probs, rng)
        estimates.append(active_estimate(yhat, np.where(xi, y, np.nan), xi, probs).estimate)
    estimates = np.array(estimates)
    assert abs(estimates.mean() - y.mean()) < 4 * estimates.std() / math.sqrt(len(estimates))
    judge_bias = yhat.mean() - y.mean()
    assert abs(judge_bias) > 10 * estimates.std() / math.sqrt(len(estimates))  # the judges alone are biased here


def _sequential(y: np.ndarray, yhat: np.ndarray, u: np.ndarray, rng: np.random.Generator, *, budget: float,
                batches: int, floor: float) -> tuple[float, float, float]:
    """Visit in batches; batch t's tau is tuned on batches < t; return (estimate, low, high)."""
    order = rng.permutation(y.size)
    chunks = np.array_split(order, batches)
    judge, human, chosen, pi = [], [], [], []
    rated_u, rated_err, rated_pi = [], [], []
    spent = 0
    for chunk in chunks:
        expected = min(chunk.size * budget / y.size, budget - spent)
        if expected < 1:  # the budget is spent: the later conversations are never visited
            break
        tau, _ = tune_mixing(rated_u, rated_err, rated_pi, mean_uncertainty=float(u.mean()), floor=floor)
        probs = active_probabilities(u[chunk], expected, tau=tau)
        xi = draw_batch(probs, rng)
        spent += int(xi.sum())
        judge += list(yhat[chunk])
        human += list(np.where(xi, y[chunk], np.nan))
        chosen += list(xi)
        pi += list(probs)
        rated_u += list(u[chunk][xi])
        rated_err += list((y[chunk][xi] - yhat[chunk][xi]) ** 2)
        rated_pi += list(probs[xi])
    est = active_estimate(judge, human, chosen, pi)
    return est.estimate, est.low, est.high


def test_sequential_batches_stay_unbiased_and_cover_at_the_nominal_rate():
    # Batch t's probabilities depend on earlier batches (tau tuned on their ratings, the budget left): the
    # paper's sequential setting. Fixed population, 1,000 repetitions of the whole study, seed fixed.
    rng = np.random.default_rng(7)
    y, yhat, u = _population(rng, 800)
    results = np.array([_sequential(y, yhat, u, rng, budget=120, batches=4, floor=0.2) for _ in range(1000)])
    estimates = results[:, 0]
    assert abs(estimates.mean() - y.mean()) < 4 * estimates.std() / math.sqrt(len(estimates))
    covered = np.mean((results[:, 1] <= y.mean()) & (y.mean() <= results[:, 2]))
    # The interval targets the superpopulation mean; for the finite population it is conservative.
    assert 0.93 <= covered <= 1.0


# --- tuning and expected widths -----------------------------------------------------------------


def test_tuning_leans_on_uncertainty_when_it_points_at_the_errors_and_spreads_out_when_it_does_not():
    rng = np.random.default_rng(11)
    u = np.where(rng.random(200) < 0.3, 1.0, 0.1)
    pi = np.full(200, 0.2)
    errors_where_unsure = np.where(u > 0.5, 0.5, 0.0)
    tau, n = tune_mixing(u, errors_where_unsure, pi, mean_uncertainty=float(u.mean()), floor=0.1)
    assert n == 200 and tau == pytest.approx(0.1)  # all error where the judges are unsure: the floor
    errors_elsewhere = np.where(u > 0.5, 0.0, 0.5)
    tau, _ = tune_mixing(u, errors_elsewhere, pi, mean_uncertainty=float(u.mean()), floor=0.1)
    assert tau == pytest.approx(1.0)  # uncertainty says nothing: uniform


def test_tuning_waits_for_enough_ratings_and_never_goes_below_the_floor():
    few = MIN_TUNE - 1
    assert tune_mixing([1.0] * few, [0.5] * few, [0.2] * few, mean_uncertainty=0.5, floor=0.3) == (0.5, few)
    assert tune_mixing([1.0] * few, [0.5] * few, [0.2] * few, mean_uncertainty=0.5, floor=0.7)[0] == 0.7
    tau, _ = tune_mixing([1.0] * 50 + [0.0] * 50, [1.0] * 50 + [0.0] * 50, [0.5] * 100, mean_uncertainty=0.5, floor=0.25)
    assert tau >= 0.25


def test_expected_width_by_hand_and_it_shrinks_with_the_next_batch():
    pi = np.full(10, 0.5)
    extra = planned_variance(0.2, np.full(10, 0.1), pi)
    assert extra == pytest.approx(np.full(10, 0.3))
    assert expected_active_width(visited_variance=0.0, n_visited=0, next_variance=extra) == pytest.approx(
        2 * norm.ppf(0.975) * math.sqrt(3.0 / 100))
    before = 2 * norm.ppf(0.975) * math.sqrt(0.3 * 20 / 20**2)
    after = expected_active_width(visited_variance=0.3 * 20, n_visited=20, next_variance=extra)
    assert after < before
    assert expected_active_width(visited_variance=0.0, n_visited=0, next_variance=[]) is None


def test_the_small_sample_note_is_at_thirty():
    assert SMALL_N == 30

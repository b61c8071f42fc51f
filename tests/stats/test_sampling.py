"""Sampling plans for human review and the expected interval widths before assigning."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from stats.data import StatsInputError
from stats.ppi import ppi_mean
from stats.sampling import (
    allocate,
    expected_plan_width,
    expected_ppi_width,
    plan_oversample,
    plan_simple_random,
    plan_stratified,
    residual_variance_from_agreement,
)

IDS = [f"c{i}" for i in range(100)]


def test_simple_random_plan_selects_n_with_equal_probabilities() -> None:
    plan = plan_simple_random(IDS, 20, 1)
    assert len(plan.selected) == 20 == len(set(plan.selected))
    assert set(plan.selected) <= set(IDS)
    assert set(plan.inclusion_prob.values()) == {0.2}
    assert list(plan.selected) == [u for u in IDS if u in set(plan.selected)]  # input order


def test_plans_are_reproducible_from_a_seed() -> None:
    assert plan_simple_random(IDS, 20, 5).selected == plan_simple_random(IDS, 20, 5).selected
    assert plan_simple_random(IDS, 20, 5).selected != plan_simple_random(IDS, 20, 6).selected
    rng = np.random.default_rng(5)
    assert plan_simple_random(IDS, 20, rng).selected == plan_simple_random(IDS, 20, 5).selected


def test_stratified_plan_allocates_proportionally_and_records_each_probability() -> None:
    # Chatbot A has 60 conversations, B 30, C 10; n = 20 -> 12, 6, 2.
    strata = ["A"] * 60 + ["B"] * 30 + ["C"] * 10
    plan = plan_stratified(IDS, strata, 20, 3)
    assert [(s.key, s.population, s.sample_size) for s in plan.strata] == [
        ("A", 60, 12),
        ("B", 30, 6),
        ("C", 10, 2),
    ]
    picked = Counter(strata[IDS.index(u)] for u in plan.selected)
    assert picked == {"A": 12, "B": 6, "C": 2}
    assert plan.inclusion_prob["c0"] == pytest.approx(0.2)
    # Horvitz-Thompson: the weights of the selected conversations add up to N.
    assert sum(1 / p for p in plan.selected_inclusion_prob()) == pytest.approx(100)


def test_equal_allocation_caps_a_small_stratum_at_its_size() -> None:
    # 30 ratings over strata of 60, 37 and 3: equal shares would be 10 each; the stratum of
    # 3 takes all 3 (pi = 1) and the other two share the rest, 14 and 13.
    strata = ["A"] * 60 + ["B"] * 37 + ["C"] * 3
    plan = plan_stratified(IDS, strata, 30, 0, allocation="equal")
    sizes = {s.key: s.sample_size for s in plan.strata}
    assert sizes["C"] == 3 and sizes["A"] + sizes["B"] == 27
    assert abs(sizes["A"] - sizes["B"]) <= 1
    assert plan.inclusion_prob[IDS[-1]] == 1.0


def test_every_stratum_gets_at_least_one_rating() -> None:
    strata = ["big"] * 97 + ["tiny1", "tiny2", "tiny3"]
    plan = plan_stratified(IDS, strata, 5, 0)
    assert min(s.sample_size for s in plan.strata) == 1
    assert min(plan.inclusion_prob.values()) > 0
    with pytest.raises(StatsInputError, match="at least one"):
        plan_stratified(IDS, strata, 3, 0)


def test_allocation_rounds_by_largest_remainder() -> None:
    # Ideal 10 * (5, 3, 2)/10 = 5, 3, 2 exactly; 7 * (5, 3, 2)/10 = 3.5, 2.1, 1.4 -> 4, 2, 1.
    assert allocate([50, 30, 20], [5, 3, 2], 10).tolist() == [5, 3, 2]
    assert allocate([50, 30, 20], [5, 3, 2], 7).tolist() == [4, 2, 1]
    assert allocate([2, 30], [1, 1], 32).tolist() == [2, 30]


def test_oversampling_makes_flagged_conversations_boost_times_as_likely() -> None:
    # 20 flagged of 100, boost 3: shares 60 : 80, so n = 28 gives 12 flagged (pi 0.6) and
    # 16 others (pi 0.2).
    flags = [i < 20 for i in range(100)]
    plan = plan_oversample(IDS, flags, 28, 2, boost=3.0)
    by_flag = {s.key: s for s in plan.strata}
    assert (by_flag[True].sample_size, by_flag[False].sample_size) == (12, 16)
    assert by_flag[True].inclusion_prob / by_flag[False].inclusion_prob == pytest.approx(3.0)
    assert plan.inclusion_prob["c0"] == pytest.approx(0.6)
    assert plan.inclusion_prob["c99"] == pytest.approx(0.2)


def test_oversampling_within_strata_keeps_every_cell_positive() -> None:
    flags = [i % 10 == 0 for i in range(100)]
    strata = ["A" if i < 50 else "B" for i in range(100)]
    plan = plan_oversample(IDS, flags, 20, 4, boost=5.0, strata=strata)
    assert {s.key for s in plan.strata} == {("A", True), ("A", False), ("B", True), ("B", False)}
    assert all(s.sample_size >= 1 for s in plan.strata)
    assert sum(s.sample_size for s in plan.strata) == 20


def test_realised_inclusion_frequencies_match_the_recorded_probabilities() -> None:
    flags = [i < 15 for i in range(100)]
    rng = np.random.default_rng(0)
    draws = 2000
    hits = Counter()
    for _ in range(draws):
        plan = plan_oversample(IDS, flags, 25, rng, boost=4.0)
        hits.update(plan.selected)
    for unit in ("c0", "c14", "c15", "c99"):
        p = plan.inclusion_prob[unit]
        sd = math.sqrt(p * (1 - p) / draws)
        assert abs(hits[unit] / draws - p) < 4 * sd


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plan_simple_random(IDS, 0, 0), "between 1"),
        (lambda: plan_simple_random(IDS, 101, 0), "between 1"),
        (lambda: plan_simple_random([], 1, 0), "no conversation"),
        (lambda: plan_simple_random(["a", "a"], 1, 0), "unique"),
        (lambda: plan_stratified(IDS, ["A"] * 99, 5, 0), "strata has 99"),
        (lambda: plan_stratified(IDS, ["A"] * 100, 5, 0, allocation="neyman"), "allocation"),
        (lambda: plan_oversample(IDS, [True] * 100, 5, 0, boost=0.5), "boost"),
        (lambda: plan_oversample(IDS, [True] * 3, 5, 0), "disagreement_flags has 3"),
    ],
)
def test_bad_plans_are_rejected(call: Callable[[], object], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        call()


# --- expected widths ----------------------------------------------------------------------


def test_expected_width_by_hand() -> None:
    # var_y 0.24, var_residual 0.1, n 100 of N 2000 (1900 unrated):
    # Var(PPI) = 0.24/1900 + 0.1/100 (the paper's); two-phase 0.24/2000 + 0.95 * 0.1/100.
    # Var(human-only) = 0.24/100 = 0.0024. Width = 2 * t_{99, 0.975} * SE (the report's t interval).
    w = expected_ppi_width(var_y=0.24, var_residual=0.1, n=100, population=2000)
    ppi = 0.24 / 1900 + 0.001
    assert w.ppi_std_error == pytest.approx(math.sqrt(ppi))
    assert w.ppi_width == pytest.approx(2 * 1.9842169515864174 * math.sqrt(ppi))
    assert w.two_phase_std_error == pytest.approx(math.sqrt(0.00107))
    assert w.human_only_std_error == pytest.approx(math.sqrt(0.0024))
    assert w.effective_n == pytest.approx(0.24 / ppi)
    assert w.tuned_width is None


def test_expected_tuned_width_uses_the_optimal_lambda() -> None:
    # var_y 0.24, var_yhat 0.2, var_residual 0.14: cov = (0.24 + 0.2 - 0.14)/2 = 0.15;
    # PPI++: lambda = 0.15 / ((1 + 100/1900) 0.2) = 0.7125;
    # Var = 0.7125² 0.2/1900 + (0.24 - 2(0.7125)(0.15) + 0.7125² 0.2)/100.
    w = expected_ppi_width(var_y=0.24, var_residual=0.14, n=100, population=2000, var_yhat=0.2)
    lam = 0.15 / ((1 + 100 / 1900) * 0.2)
    assert w.tuned_lam == pytest.approx(lam) == pytest.approx(0.7125)
    resid = 0.24 - 2 * lam * 0.15 + lam**2 * 0.2
    assert w.tuned_std_error**2 == pytest.approx(lam**2 * 0.2 / 1900 + resid / 100)
    assert w.tuned_width < w.ppi_width


def test_expected_width_predicts_the_simulated_widths() -> None:
    # Yes/no item, truth 0.6, the judge flips 15% of labels either way.
    rng = np.random.default_rng(4)
    n_total, n = 2000, 100
    widths = []
    for _ in range(100):
        y = (rng.random(n_total) < 0.6).astype(float)
        f = np.where(rng.random(n_total) < 0.15, 1 - y, y)
        rated = np.zeros(n_total, dtype=bool)
        rated[rng.choice(n_total, size=n, replace=False)] = True
        widths.append(ppi_mean(y[rated], f[rated], f[~rated], small_sample=True).ppi.width)
    residual = residual_variance_from_agreement(0.15)  # 0.15 - 0 (no bias)
    planned = expected_ppi_width(var_y=0.24, var_residual=residual, n=n, population=n_total)
    assert np.mean(widths) == pytest.approx(planned.ppi_width, rel=0.05)


def test_expected_plan_width_of_a_simple_random_plan_equals_the_formula() -> None:
    plan = plan_simple_random(range(2000), 100, 0)
    a = expected_plan_width(plan, var_y=0.24, residual_var=0.1)
    b = expected_ppi_width(var_y=0.24, var_residual=0.1, n=100, population=2000)
    assert a.ppi_std_error == pytest.approx(b.ppi_std_error)
    assert a.human_only_std_error == pytest.approx(b.human_only_std_error)
    assert a.n == pytest.approx(100)


def test_oversampling_where_residuals_are_large_narrows_the_expected_interval() -> None:
    # 200 of 2000 flagged, with residual variance 0.6 there and 0.05 elsewhere.
    ids = list(range(2000))
    flags = [i < 200 for i in ids]
    residual = {i: 0.6 if i < 200 else 0.05 for i in ids}
    srs = expected_plan_width(plan_simple_random(ids, 100, 0), var_y=0.24, residual_var=residual)
    over = expected_plan_width(
        plan_oversample(ids, flags, 100, 0, boost=4.0), var_y=0.24, residual_var=residual
    )
    assert over.ppi_width < srs.ppi_width


def test_residual_variance_from_agreement() -> None:
    assert residual_variance_from_agreement(0.2, bias=0.1) == pytest.approx(0.19)
    with pytest.raises(StatsInputError):
        residual_variance_from_agreement(0.1, bias=0.2)
    with pytest.raises(StatsInputError):
        expected_ppi_width(var_y=-1, var_residual=0.1, n=10, population=100)


def test_expected_plan_width_of_ppi_plus_plus_is_never_wider_than_ppi_or_humans_alone() -> None:
    ids = list(range(60))
    flags = [i < 10 for i in ids]
    for n, residual in ((10, 0.02), (40, 0.02), (40, 0.3), (55, 0.1)):
        w = expected_plan_width(plan_oversample(ids, flags, n, 0, boost=3.0), var_y=0.2, residual_var=residual)
        assert 0 <= w.tuned_lam <= 1
        assert w.tuned_std_error <= min(w.ppi_std_error, w.human_only_std_error) + 1e-12
    # With equal π: PPI's variance is var/(N - n) + r/n, humans only var/n.
    srs = expected_plan_width(plan_simple_random(ids, 20, 0), var_y=0.2, residual_var=0.05)
    assert srs.ppi_std_error**2 == pytest.approx(0.2 / 40 + 0.05 / 20)
    assert srs.human_only_std_error**2 == pytest.approx(0.2 / 20)

"""The alternative annotator test (Calderon, Reichart & Dror, ACL 2025).

Hand-computed tiny cases, the paper's two anchors (a judge equal to the majority has rho = 1
and passes; a constant judge fails), the minimums, and a cross-check against an independent
implementation written below with plain loops, scipy's ttest_1samp and statsmodels' fdr_by.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from stats.alt_test import alt_test, alt_test_long, benjamini_yekutieli
from stats.data import StatsInputError

# Four instances, three raters; the judge gives the majority label of all three.
TINY = {
    "A": {1: "y", 2: "y", 3: "n", 4: "y"},
    "B": {1: "y", 2: "n", 3: "n", 4: "y"},
    "C": {1: "y", 2: "n", 3: "y", 4: "n"},
}
TINY_JUDGE = {1: "y", 2: "n", 3: "n", 4: "y"}


def test_tiny_case_computed_by_hand():
    result = alt_test(TINY, TINY_JUDGE, epsilon=0.2, min_instances_per_rater=2)
    rows = {r.rater: r for r in result.per_rater}
    # Leave A out: d = W_h - W_f = [0, -1, 0, 0] (on 2 the others say n,n: the judge matches, A does not).
    assert rows["A"].rho_judge == 1.0 and rows["A"].rho_rater == 0.75
    assert rows["A"].t_statistic == pytest.approx((-0.25 - 0.2) / (0.5 / 2))  # -1.8
    assert rows["A"].p_value == pytest.approx(student_t.cdf(-1.8, df=3))
    # Leave B out: every instance is a tie (d = 0 throughout): no variance, mean 0 < 0.2, p = 0.
    assert rows["B"].rho_judge == 1.0 and rows["B"].rho_rater == 1.0
    assert rows["B"].t_statistic is None and rows["B"].p_value == 0.0
    # Leave C out: d = [0, 0, -1, -1], mean -0.5, sd sqrt(1/3).
    assert rows["C"].rho_rater == 0.5
    assert rows["C"].t_statistic == pytest.approx((-0.5 - 0.2) / (np.sqrt(1 / 3) / 2))
    # BY at q = 0.05 over three p-values: c(3) = 11/6, thresholds k * 0.05 / 5.5.
    c3 = 1 + 1 / 2 + 1 / 3
    assert rows["B"].judge_wins and not rows["A"].judge_wins and not rows["C"].judge_wins
    assert rows["C"].p_adjusted == pytest.approx(rows["C"].p_value * 3 * c3 / 2)
    assert rows["A"].p_adjusted == pytest.approx(rows["A"].p_value * 3 * c3 / 3)
    assert result.winning_rate == pytest.approx(1 / 3) and result.passed is False and result.verdict == "failed"
    assert result.advantage_probability == 1.0  # the majority of all raters: rho = 1 (the paper's optimal jury)


def test_a_tie_counts_for_both_sides():
    # Two other raters split: the judge and the left-out rater both align with half of them.
    humans = {"A": {1: "y"}, "B": {1: "y"}, "C": {1: "n"}}
    result = alt_test(humans, {1: "n"}, epsilon=0.1, min_instances_per_rater=1, min_raters=1)
    rows = {r.rater: r for r in result.per_rater}
    assert rows["A"].rho_judge == 1.0 and rows["A"].rho_rater == 1.0  # others B=y, C=n: 0.5 vs 0.5
    assert rows["C"].rho_judge == 1.0 and rows["C"].rho_rater == 1.0  # others y, y: both score 0
    assert rows["B"].rho_judge == 1.0 and rows["B"].rho_rater == 1.0


def _simulated(seed: int, n: int = 80, raters: int = 4, accuracy: float = 0.85, p_missing: float = 0.0):
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    humans = {}
    for r in range(raters):
        right = rng.random(n) < accuracy
        labels = np.where(right, truth, ~truth)
        humans[f"r{r}"] = {i: ("yes" if labels[i] else "no") for i in range(n) if rng.random() >= p_missing}
    return humans, truth


def _majority(humans: dict) -> dict:
    out = {}
    for i in {i for m in humans.values() for i in m}:
        labels = [m[i] for m in humans.values() if i in m]
        yes = labels.count("yes")
        out[i] = "yes" if yes * 2 > len(labels) else "no" if yes * 2 < len(labels) else None
    return out


def test_a_constant_judge_fails():
    humans, _ = _simulated(1)
    result = alt_test(humans, {i: "yes" for i in range(80)}, epsilon=0.2)
    assert result.passed is False and result.winning_rate == 0.0
    assert result.advantage_probability < 0.7


@pytest.mark.parametrize("raters", [3, 5])
def test_a_judge_equal_to_the_majority_passes_with_rho_one(raters):
    humans, _ = _simulated(2, raters=raters)
    result = alt_test(humans, _majority(humans), epsilon=0.2)
    assert result.passed is True and result.winning_rate == 1.0
    assert result.advantage_probability == 1.0  # W_f = 1 on every instance (the paper's optimal jury)


def test_below_the_minimums_there_is_no_verdict():
    humans, truth = _simulated(3, n=25)
    result = alt_test(humans, _majority(humans), epsilon=0.2)
    assert result.passed is None and result.winning_rate is None
    assert result.verdict.startswith("cannot decide yet: 0 raters with at least 30 instances")
    assert {r.rater for r in result.excluded_raters} == set(humans)
    two, _ = _simulated(4, raters=2)
    verdict = alt_test(two, _majority(two), epsilon=0.2)
    assert verdict.passed is None and "the test needs at least 3" in verdict.verdict
    assert any("only two raters" in n for n in verdict.notes)


def test_instances_with_one_rater_or_no_judge_label_are_dropped_and_counted():
    humans = {"A": {1: "y", 2: "y", 3: "n"}, "B": {1: "y", 2: "n"}, "C": {1: "n", 2: "n"}}
    result = alt_test(humans, {1: "y", 3: "n"}, epsilon=0.2, min_instances_per_rater=1, min_raters=1)
    assert result.n_instances == 1
    assert result.n_instances_dropped == {"fewer_than_2_raters": 1, "judge_missing": 1}


def test_bad_settings_are_refused():
    with pytest.raises(StatsInputError, match="epsilon"):
        alt_test(TINY, TINY_JUDGE, epsilon=1.5)
    with pytest.raises(StatsInputError, match="scoring"):
        alt_test(TINY, TINY_JUDGE, epsilon=0.1, scoring="f1")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="numbers"):
        alt_test(TINY, TINY_JUDGE, epsilon=0.1, scoring="neg_rmse")


def test_benjamini_yekutieli_equals_statsmodels():
    rng = np.random.default_rng(5)
    for m in (1, 2, 5, 13):
        p = rng.random(m) ** 3
        rejected, adjusted = benjamini_yekutieli(p, 0.05)
        ref_rejected, ref_adjusted, _, _ = multipletests(p, alpha=0.05, method="fdr_by")
        assert list(rejected) == list(ref_rejected)
        assert adjusted == pytest.approx(ref_adjusted)


# --- An independent implementation: loops over raters and instances, as the paper reads. ---


def _reference_alt_test(humans, judge, epsilon, scoring="accuracy", q=0.05, min_n=30):
    def score(candidate, others):
        if scoring == "accuracy":
            return sum(candidate == o for o in others) / len(others)
        return -float(np.sqrt(np.mean([(candidate - o) ** 2 for o in others])))

    annotators_of = {}
    for rater, labels in humans.items():
        for instance in labels:
            annotators_of.setdefault(instance, []).append(rater)
    rows = []
    for rater, labels in humans.items():
        w_f, w_h = [], []
        for instance, own in labels.items():
            others = [humans[o][instance] for o in annotators_of[instance] if o != rater]
            if not others or judge.get(instance) is None:
                continue
            s_f, s_h = score(judge[instance], others), score(own, others)
            w_f.append(1 if s_f >= s_h else 0)
            w_h.append(1 if s_h >= s_f else 0)
        if len(w_f) < min_n:
            continue
        d = np.array(w_h) - np.array(w_f)
        p = float(ttest_1samp(d, epsilon, alternative="less").pvalue)
        rows.append((rater, len(d), float(np.mean(w_f)), p))
    rejected = multipletests([r[3] for r in rows], alpha=q, method="fdr_by")[0] if rows else []
    omega = sum(rejected) / len(rows)
    rho = float(np.mean([r[2] for r in rows]))
    return {r[0]: r for r in rows}, list(rejected), omega, rho


@pytest.mark.parametrize("seed", range(6))
def test_equals_an_independent_implementation_on_random_data(seed):
    rng = np.random.default_rng(100 + seed)
    humans, _ = _simulated(seed, n=120, raters=5, accuracy=0.75 + 0.04 * seed, p_missing=0.3)
    judge = {i: ("yes" if rng.random() < 0.5 else "no") if rng.random() < 0.3 else _majority(humans).get(i) for i in range(120)}
    judge = {i: v for i, v in judge.items() if v is not None}
    epsilon = (0.1, 0.15, 0.2)[seed % 3]
    ours = alt_test(humans, judge, epsilon=epsilon)
    rows, rejected, omega, rho = _reference_alt_test(humans, judge, epsilon)
    assert [r.rater for r in ours.per_rater] == list(rows)
    for mine, reject in zip(ours.per_rater, rejected, strict=True):
        _, n, rho_j, p = rows[mine.rater]
        assert mine.n_instances == n and mine.rho_judge == pytest.approx(rho_j) and mine.p_value == pytest.approx(p, abs=1e-12)
        assert mine.judge_wins == reject
    assert ours.winning_rate == pytest.approx(omega) and ours.advantage_probability == pytest.approx(rho)


@pytest.mark.parametrize("seed", range(3))
def test_neg_rmse_equals_an_independent_implementation(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=60)
    humans = {f"r{r}": {i: int(np.clip(truth[i] + rng.integers(-1, 2), 1, 5)) for i in range(60) if rng.random() > 0.2} for r in range(4)}
    judge = {i: int(np.clip(truth[i] + rng.integers(-2, 3), 1, 5)) for i in range(60)}
    ours = alt_test(humans, judge, epsilon=0.15, scoring="neg_rmse")
    rows, rejected, omega, rho = _reference_alt_test(humans, judge, 0.15, scoring="neg_rmse")
    for mine, reject in zip(ours.per_rater, rejected, strict=True):
        assert mine.p_value == pytest.approx(rows[mine.rater][3], abs=1e-12) and mine.judge_wins == reject
    assert ours.winning_rate == pytest.approx(omega) and ours.advantage_probability == pytest.approx(rho)


def test_long_form_pools_unit_item_pairs_and_tests_each_item():
    humans, _ = _simulated(7, n=40, raters=3)
    rows = [(f"u{i % 40}", r, f"item{i // 40}", label) for r, m in humans.items() for i, label in m.items()]
    humans2, _ = _simulated(8, n=40, raters=3)
    rows += [(f"u{i}", r, "item1", label) for r, m in humans2.items() for i, label in m.items()]
    majority1 = _majority(humans)
    judge_rows = [(f"u{i}", "item0", majority1[i]) for i in range(40)] + [(f"u{i}", "item1", "yes") for i in range(40)]
    report = alt_test_long(rows, judge_rows, epsilon=0.2)
    assert report.pooled.n_instances == 80
    assert report.items["item0"].passed is True and report.items["item1"].passed is False
    assert report.items_passed == 1 and report.items_decided == 2
    # One BY step over all six (item, rater) p-values: each item's adjusted p uses m = 6.
    flat = [r.p_value for t in report.items.values() for r in t.per_rater]
    _, adjusted = benjamini_yekutieli(flat)
    assert [r.p_adjusted for t in report.items.values() for r in t.per_rater] == pytest.approx(list(adjusted))
    payload = report.as_dict()
    assert {"epsilon", "winning_rate", "advantage_probability", "passed", "per_rater", "items"} <= set(payload)
    assert set(payload["per_rater"][0]) >= {"rater", "n_instances", "rho", "p_value", "p_adjusted", "decision"}

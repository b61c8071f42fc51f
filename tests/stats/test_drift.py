"""Judge drift between two versions: flips, agreement, paired bootstrap difference."""

from __future__ import annotations

import numpy as np
import pytest

from stats.agreement import cohen_kappa
from stats.data import StatsInputError
from stats.drift import (
    drift_report,
    label_flips,
    paired_bootstrap_difference,
    paired_kappa_difference,
)


def test_paired_difference_is_b_minus_a() -> None:
    # A right on 3 of 5, B on 4 of 5: difference 0.2; B better on row 2 only.
    r = paired_bootstrap_difference([1, 0, 1, 1, 0], [1, 1, 1, 1, 0], seed=1, n_resamples=500)
    assert (r.agreement_a, r.agreement_b, r.difference) == pytest.approx((0.6, 0.8, 0.2))
    assert (r.n_a_better, r.n_b_better, r.n_units, r.n_rows) == (0, 1, 5, 5)
    assert r.interval.low <= 0.2 <= r.interval.high
    assert r.interval.low >= 0  # B is never worse on any row, so no resample can be negative


def test_identical_versions_give_a_zero_interval() -> None:
    r = paired_bootstrap_difference([1, 0, 1, 0], [1, 0, 1, 0], seed=0, n_resamples=200)
    assert (r.difference, r.interval.low, r.interval.high) == (0.0, 0.0, 0.0)


def test_paired_bootstrap_is_reproducible_from_a_seed() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random(50) < 0.7, rng.random(50) < 0.8
    one = paired_bootstrap_difference(a, b, seed=9, n_resamples=300)
    two = paired_bootstrap_difference(a, b, seed=9, n_resamples=300)
    assert one.interval == two.interval


def test_bootstrap_error_matches_the_paired_standard_error() -> None:
    # Correlated versions: B agrees with A on 90% of rows. The paired SE is
    # sd(b - a)/sqrt(n), far below the unpaired sqrt((var a + var b)/n); the bootstrap interval
    # width must match the paired one.
    rng = np.random.default_rng(2)
    n = 400
    a = (rng.random(n) < 0.75).astype(float)
    b = np.where(rng.random(n) < 0.9, a, 1 - a)
    r = paired_bootstrap_difference(a, b, seed=3, n_resamples=4000)
    paired = np.std(b - a, ddof=1) / np.sqrt(n)
    unpaired = np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / n)
    width = r.interval.high - r.interval.low
    assert width == pytest.approx(2 * 1.96 * paired, rel=0.1)
    assert width < 0.6 * 2 * 1.96 * unpaired


def test_rows_of_one_conversation_are_resampled_together() -> None:
    # 2 conversations with 3 item rows each: the bootstrap draws conversations, so a resample
    # holds 0, 3 or 6 rows of each, and the only possible values come from whole clusters.
    a = [1, 1, 1, 0, 0, 0]
    b = [1, 1, 1, 1, 1, 1]
    units = ["c1"] * 3 + ["c2"] * 3
    r = paired_bootstrap_difference(a, b, units=units, seed=0, n_resamples=500)
    assert r.n_units == 2 and r.n_rows == 6
    assert r.interval.low == pytest.approx(0.0) and r.interval.high == pytest.approx(1.0)


def test_missing_scores_are_dropped_and_counted() -> None:
    r = paired_bootstrap_difference([1, None, 0], [1, 1, float("nan")], seed=0, n_resamples=50)
    assert (r.n_rows, r.n_dropped) == (1, 2)
    assert "left out" in (r.note or "")
    empty = paired_bootstrap_difference([None], [1], seed=0, n_resamples=50)
    assert empty.difference is None and empty.interval.low is None


def test_paired_input_is_checked() -> None:
    with pytest.raises(StatsInputError, match="same length"):
        paired_bootstrap_difference([1, 0], [1], seed=0)
    with pytest.raises(StatsInputError, match="not a number"):
        paired_bootstrap_difference(["yes"], [1], seed=0)
    with pytest.raises(StatsInputError, match="units has"):
        paired_bootstrap_difference([1, 0], [1, 1], units=["c1"], seed=0)


A = {
    ("c1", "i1"): "yes",
    ("c1", "i2"): "no",
    ("c2", "i1"): "N/A",
    ("c2", "i2"): "yes",
    ("c3", "i1"): "no",
}
B = {
    ("c1", "i1"): "Yes",  # same after case folding
    ("c1", "i2"): "yes",  # flip
    ("c2", "i1"): "n/a",  # same N/A
    ("c2", "i2"): "no",  # flip
    ("c4", "i1"): "yes",  # only B
}
HUMAN = {("c1", "i1"): "yes", ("c1", "i2"): "yes", ("c2", "i1"): "no", ("c2", "i2"): "yes"}


def test_label_flips_lists_changed_labels_and_agreement_per_item() -> None:
    flips = label_flips(A, B)
    assert [(f.unit, f.item, f.label_a, f.label_b) for f in flips.flips] == [
        ("c1", "i2", "no", "yes"),
        ("c2", "i2", "yes", "no"),
    ]
    by_item = {d.item: d for d in flips.items}
    # i1: c1 and c2 compared and equal; c3 only A, c4 only B.
    assert (by_item["i1"].n_compared, by_item["i1"].agreement) == (2, 1.0)
    assert (by_item["i1"].n_only_a, by_item["i1"].n_only_b) == (1, 1)
    assert (by_item["i2"].n_flipped, by_item["i2"].agreement) == (2, 0.0)
    assert by_item["i2"].kappa == pytest.approx(-1.0)
    assert (flips.pooled.n_compared, flips.pooled.n_same) == (4, 2)


def test_label_flips_accepts_rows_and_rejects_duplicates() -> None:
    rows_a = [(u, i, label) for (u, i), label in A.items()]
    rows_b = [(u, i, label) for (u, i), label in B.items()]
    assert label_flips(rows_a, rows_b) == label_flips(A, B)
    with pytest.raises(StatsInputError, match="twice"):
        label_flips([("c1", "i1", "yes"), ("c1", "i1", "no")], [])


def test_drift_report_scores_both_versions_against_humans_on_the_same_pairs() -> None:
    # Pairs with a human label and both versions: (c1,i1) A yes B yes H yes -> 1, 1;
    # (c1,i2) A no B yes H yes -> 0, 1; (c2,i1) A N/A B N/A H no -> 0, 0;
    # (c2,i2) A yes B no H yes -> 1, 0. Pooled: A 2/4, B 2/4, difference 0.
    report = drift_report(A, B, HUMAN, seed=0, n_resamples=200)
    assert (report.pooled.agreement_a, report.pooled.agreement_b) == (0.5, 0.5)
    assert report.pooled.difference == 0.0
    assert report.pooled.n_units == 2
    i2 = report.per_item["i2"]
    assert (i2.agreement_a, i2.agreement_b) == (0.5, 0.5)
    i1 = report.per_item["i1"]
    assert (i1.agreement_a, i1.agreement_b) == (0.5, 0.5)
    assert len(report.flips.flips) == 2


def test_drift_report_is_json_ready() -> None:
    import json

    text = json.dumps(drift_report(A, B, HUMAN, seed=0, n_resamples=50).as_dict())
    assert '"label_a": "no"' in text


# --- the kappa difference B - A with the humans (issue 27) ---------------------------------


def test_the_kappa_difference_is_b_minus_a_with_each_kappa_as_cohen_s() -> None:
    # Humans, A and B on 8 labels of 4 conversations; A's kappa 0.0 (Po .5, Pe .5), B's 0.5 (Po .75, Pe .5).
    humans = ["yes", "no", "yes", "no", "yes", "no", "yes", "no"]
    a = ["yes", "yes", "no", "no", "yes", "yes", "no", "no"]
    b = ["yes", "no", "yes", "no", "yes", "yes", "no", "no"]
    r = paired_kappa_difference(humans, a, b, units=[1, 1, 2, 2, 3, 3, 4, 4], seed=3, n_resamples=400)
    assert r.kappa_a == pytest.approx(cohen_kappa(a, humans).kappa) == pytest.approx(0.0)
    assert r.kappa_b == pytest.approx(cohen_kappa(b, humans).kappa) == pytest.approx(0.5)
    assert r.difference == pytest.approx(0.5) and (r.n_units, r.n_rows) == (4, 8)
    assert r.interval.low <= 0.5 <= r.interval.high


def test_identical_versions_give_a_zero_kappa_difference_and_missing_rows_are_dropped() -> None:
    humans = ["yes", "no", "yes", None, "no", "N/A"]
    a = ["yes", "no", "no", "yes", "no", "n/a"]
    r = paired_kappa_difference(humans, a, list(a), units=[1, 2, 3, 4, 5, 6], seed=0, n_resamples=200)
    assert (r.difference, r.interval.low, r.interval.high, r.n_rows) == (0.0, 0.0, 0.0, 5)
    empty = paired_kappa_difference([None], ["yes"], ["no"], units=[1], seed=0, n_resamples=10)
    assert (empty.kappa_a, empty.difference, empty.n_rows) == (None, None, 0)
    one_category = paired_kappa_difference(["yes", "yes"], ["yes", "yes"], ["yes", "no"], units=[1, 2], seed=0)
    assert one_category.kappa_a is None and one_category.difference is None and one_category.note


def test_the_kappa_difference_refuses_misaligned_input() -> None:
    with pytest.raises(StatsInputError):
        paired_kappa_difference(["yes"], ["yes", "no"], ["yes"], units=[1])

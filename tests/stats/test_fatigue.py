"""Rater drift statistics: queue thirds and the cluster bootstrap difference of shares."""

from __future__ import annotations

import pytest

from stats.data import StatsInputError
from stats.fatigue import cluster_share_difference, position_thirds


def test_thirds_of_a_queue():
    assert position_thirds(9) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert position_thirds(10) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert position_thirds(2) == [0, 1] and position_thirds(1) == [0] and position_thirds(0) == []


def test_shares_are_ratios_of_sums_over_labels():
    result = cluster_share_difference([1, 1, 1, 0], ["a", "a", "a", "b"], [0, 1], ["c", "d"], seed=1)
    assert result.share_first == pytest.approx(0.75) and result.share_second == pytest.approx(0.5)
    assert result.difference == pytest.approx(-0.25)
    assert (result.n_clusters_first, result.n_rows_first) == (2, 4)
    assert result.interval.low <= -0.25 <= result.interval.high


def test_a_certain_change_has_a_point_interval_and_no_change_straddles_zero():
    certain = cluster_share_difference([1] * 6, list("abcdef"), [0] * 6, list("ghijkl"), seed=2)
    assert certain.difference == -1 and certain.interval.low == certain.interval.high == -1
    same = cluster_share_difference([1, 0] * 20, list(range(40)), [0, 1] * 20, list(range(40, 80)), seed=2)
    assert same.difference == 0 and same.interval.low < 0 < same.interval.high


def test_resampling_whole_ratings_widens_the_interval_when_labels_go_together():
    # 10 ratings of 10 labels each, all right or all wrong: the effective n is 10, not 100.
    first = [1] * 50 + [0] * 50
    clusters = [i // 10 for i in range(100)]
    by_rating = cluster_share_difference(first, clusters, [1] * 100, [100 + i // 10 for i in range(100)], seed=4)
    by_label = cluster_share_difference(first, list(range(100)), [1] * 100, list(range(100, 200)), seed=4)
    assert by_rating.interval.width > 2 * by_label.interval.width


def test_seeded_results_repeat_and_missing_values_are_left_out():
    a = cluster_share_difference([1, 0, None, 1], ["a", "b", "c", "d"], [0, 1, 1], ["e", "f", "g"], seed=9)
    b = cluster_share_difference([1, 0, None, 1], ["a", "b", "c", "d"], [0, 1, 1], ["e", "f", "g"], seed=9)
    assert a == b and a.n_rows_first == 3


def test_empty_groups_and_bad_input():
    empty = cluster_share_difference([], [], [1], ["a"], seed=1)
    assert empty.difference is None and "first group" in empty.note and empty.share_second == 1
    with pytest.raises(StatsInputError):
        cluster_share_difference([1], [], [1], ["a"])
    with pytest.raises(StatsInputError):
        cluster_share_difference([2], ["a"], [1], ["b"])
    with pytest.raises(StatsInputError):
        cluster_share_difference([1], ["a"], [1], ["b"], n_resamples=0)


def test_the_leave_one_out_consensus_never_contains_the_raters_own_answer():
    from stats.fatigue import LeftOut, leave_one_out_consensus

    # yes/yes/no: the "no" rater meets a consensus of yes; each "yes" rater meets a 1-1 tie.
    loo = leave_one_out_consensus({"a": "yes", "b": "yes", "c": "no"})
    assert loo["c"] == LeftOut("yes", "consensus", 2)
    assert loo["a"] == LeftOut(None, "tie", 2) and loo["b"] == LeftOut(None, "tie", 2)
    # Four raters: a plurality of the three others is a consensus; a missing answer is no rater.
    loo = leave_one_out_consensus({"a": "yes", "b": "no", "c": "N/A", "d": "no", "e": None})
    assert loo["a"] == LeftOut("no", "consensus", 3) and loo["c"] == LeftOut("no", "consensus", 3)
    assert loo["b"] == LeftOut(None, "tie", 3)  # yes, N/A, no: three labels once each
    assert "e" not in loo


def test_two_raters_have_no_leave_one_out_consensus():
    from stats.fatigue import leave_one_out_consensus

    loo = leave_one_out_consensus({"a": "yes", "b": "yes"})
    assert {r.status for r in loo.values()} == {"too_few"} and all(r.label is None for r in loo.values())
    assert leave_one_out_consensus({"a": "yes", "b": "no"}, min_others=1)["a"].label == "no"
    with pytest.raises(StatsInputError):
        leave_one_out_consensus({"a": "yes"}, min_others=0)

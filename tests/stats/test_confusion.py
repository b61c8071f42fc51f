"""Confusion matrices and raters against a reference labelling."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

from stats import (
    compare_each_pair,
    compare_to_reference,
    confusion_matrix,
    consensus_labels,
    rater_pair_agreement,
    reference_agreement,
)


def test_confusion_matrix_puts_the_reference_in_rows() -> None:
    ref = ["yes", "yes", "no", "N/A", "no", "yes"]
    judge = ["yes", "no", "no", "N/A", "yes", "yes"]
    cm = confusion_matrix(ref, judge, labels=["yes", "no", "N/A"])
    assert cm.counts == ((2, 1, 0), (1, 1, 0), (0, 0, 1))
    assert cm.count("yes", "no") == 1
    assert cm.percent_agreement == pytest.approx(4 / 6)
    expected = sk_confusion_matrix(ref, judge, labels=["yes", "no", "N/A"]).tolist()
    assert [list(r) for r in cm.counts] == expected
    assert cm.kappa.kappa == pytest.approx(cohen_kappa_score(ref, judge))


def test_confusion_matrix_drops_and_counts_missing_pairs() -> None:
    cm = confusion_matrix(["yes", None, "no", "no"], ["yes", "no", "", "no"])
    assert (cm.n, cm.n_dropped) == (2, 2)
    assert cm.labels == ("no", "yes")
    assert cm.percent_agreement == 1.0


def test_confusion_matrix_with_no_pair_has_no_agreement() -> None:
    cm = confusion_matrix([None], ["yes"])
    assert cm.n == 0 and cm.percent_agreement is None and cm.kappa.kappa is None


def test_each_judge_against_the_reference_shares_one_label_order() -> None:
    reference = {"c1": "yes", "c2": "no", "c3": "yes", "c4": "N/A"}
    judges = {
        "gpt": {"c1": "yes", "c2": "no", "c3": "yes", "c4": "N/A"},
        "claude": {"c1": "no", "c2": "no", "c3": None, "c5": "yes"},
    }
    gpt, claude = compare_to_reference(judges, reference, reference="consensus")
    assert (gpt.n, gpt.percent_agreement, gpt.cohen_kappa) == (4, 1.0, 1.0)
    assert (claude.n, claude.n_rater_missing, claude.n_reference_missing) == (2, 2, 1)
    assert claude.percent_agreement == 0.5
    assert gpt.confusion.labels == claude.confusion.labels == ("N/A", "no", "yes")


def test_each_judge_against_each_human_skips_self_comparisons() -> None:
    judges = {"j1": {"c1": "yes", "c2": "no"}}
    humans = {"h1": {"c1": "yes", "c2": "yes"}, "h2": {"c1": "no", "c2": "no"}, "j1": {}}
    pairs = compare_each_pair(judges, humans)
    assert [(p.rater, p.reference, p.percent_agreement) for p in pairs] == [
        ("j1", "h1", 0.5),
        ("j1", "h2", 0.5),
    ]


def _human_and_judge_rows() -> tuple[list[tuple], list[tuple]]:
    humans = [
        ("c1", "psych", "q1", "yes"), ("c1", "h2", "q1", "yes"), ("c1", "h3", "q1", "no"),
        ("c2", "psych", "q1", "no"), ("c2", "h2", "q1", "no"), ("c2", "h3", "q1", "no"),
        ("c1", "psych", "q2", "N/A"), ("c1", "h2", "q2", "n/a"), ("c1", "h3", "q2", "yes"),
        ("c2", "psych", "q2", "yes"), ("c2", "h2", "q2", "yes"), ("c2", "h3", "q2", "no"),
    ]  # fmt: skip
    judges = [
        ("c1", "gpt", "q1", "yes"), ("c2", "gpt", "q1", "yes"),
        ("c1", "gpt", "q2", "N/A"), ("c2", "gpt", "q2", "yes"),
    ]  # fmt: skip
    return humans, judges


def test_judges_against_human_consensus_per_item_and_pooled() -> None:
    humans, judges = _human_and_judge_rows()
    reference = consensus_labels(humans, tie_policy="tie_breaker", tie_breaker="psych")
    result = reference_agreement(judges, reference, reference_name="consensus")
    (q1,) = result.items["q1"]
    (q2,) = result.items["q2"]
    (pooled,) = result.pooled
    assert (q1.n, q1.percent_agreement) == (2, 0.5)
    assert (q2.n, q2.percent_agreement) == (2, 1.0)
    assert (pooled.n, pooled.percent_agreement) == (4, 0.75)
    assert pooled.confusion.count("no", "yes") == 1
    assert result.as_dict()["pooled"][0]["reference"] == "consensus"


def test_excluding_na_removes_it_from_both_sides() -> None:
    humans, judges = _human_and_judge_rows()
    reference = consensus_labels(humans)
    result = reference_agreement(judges, reference, na="exclude")
    assert "N/A" not in result.labels
    (q2,) = result.items["q2"]
    assert q2.n == 1


def test_each_judge_against_each_single_human() -> None:
    humans, judges = _human_and_judge_rows()
    result = rater_pair_agreement(judges, humans)
    assert [(c.rater, c.reference) for c in result.pooled] == [
        ("gpt", "psych"),
        ("gpt", "h2"),
        ("gpt", "h3"),
    ]
    assert [c.n for c in result.pooled] == [4, 4, 4]
    assert result.pooled[0].percent_agreement == pytest.approx(0.75)

"""Consensus labels never guess: ties are broken only by the designated rater."""

from __future__ import annotations

import pytest

from stats import consensus, consensus_labels, ensemble_labels, majority_vote


def test_unanimous_ratings_give_a_unanimous_consensus() -> None:
    result = consensus({"a": "yes", "b": "yes", "c": "yes"})
    assert (result.label, result.provenance, result.n_ratings) == ("yes", "unanimous", 3)


def test_a_strict_majority_wins() -> None:
    result = consensus({"a": "yes", "b": "no", "c": "yes"})
    assert (result.label, result.provenance) == ("yes", "majority")
    assert result.votes == (("yes", 2), ("no", 1))


def test_a_unique_mode_without_majority_is_a_plurality() -> None:
    result = consensus({"a": "yes", "b": "yes", "c": "no", "d": "N/A"})
    assert (result.label, result.provenance) == ("yes", "plurality")


def test_missing_ratings_are_ignored() -> None:
    result = consensus({"a": "no", "b": None, "c": "", "d": "no"})
    assert (result.label, result.provenance, result.n_ratings) == ("no", "unanimous", 2)


def test_a_tie_stays_unresolved_without_a_tie_breaker() -> None:
    result = consensus({"a": "yes", "b": "yes", "c": "no", "d": "no"})
    assert (result.label, result.provenance) == (None, "tie")
    assert set(result.tied) == {"yes", "no"}


def test_the_senior_clinician_breaks_a_two_two_tie() -> None:
    ratings = {"psych": "no", "b": "yes", "c": "yes", "d": "no"}
    result = consensus(ratings, tie_policy="tie_breaker", tie_breaker="psych")
    assert (result.label, result.provenance) == ("no", "tie_break")


def test_a_tie_breaker_outside_the_tied_modes_does_not_decide() -> None:
    ratings = {"psych": "N/A", "b": "yes", "c": "yes", "d": "no", "e": "no"}
    result = consensus(ratings, tie_policy="tie_breaker", tie_breaker="psych")
    assert (result.label, result.provenance) == (None, "tie")
    assert "not a tied mode" in (result.note or "")


def test_a_tie_breaker_who_did_not_rate_does_not_decide() -> None:
    result = consensus({"b": "yes", "c": "no"}, tie_policy="tie_breaker", tie_breaker="psych")
    assert (result.label, result.provenance) == (None, "tie")
    assert "did not rate" in (result.note or "")


def test_tie_breaker_policy_needs_a_rater() -> None:
    with pytest.raises(ValueError, match="tie_breaker"):
        consensus({"a": "yes"}, tie_policy="tie_breaker")


def test_no_ratings_give_no_consensus() -> None:
    assert consensus({"a": None}).provenance == "no_ratings"


def test_two_of_three_judges_make_the_ensemble_label() -> None:
    assert majority_vote(["yes", "no", "yes"]).label == "yes"
    assert majority_vote(["N/A", "N/A", "no"]).label == "N/A"


def test_three_different_judge_labels_give_no_majority() -> None:
    result = majority_vote(["yes", "no", "N/A"])
    assert (result.label, result.provenance) == (None, "no_majority")


def test_a_failed_judge_still_counts_as_a_voter() -> None:
    assert majority_vote(["yes", None, "no"]).provenance == "no_majority"
    assert majority_vote(["yes", None, "yes"]).label == "yes"
    assert majority_vote(["yes", None, "yes"]).provenance == "majority"


def test_min_votes_sets_the_threshold_and_two_winners_tie() -> None:
    assert majority_vote(["a", "a", "b", "c", "d"], min_votes=2).label == "a"
    assert majority_vote(["a", "a", "b", "b"], min_votes=2).provenance == "tie"
    assert majority_vote(["a", "a", "b"], min_votes=3).provenance == "no_majority"


def test_long_form_consensus_merges_na_spellings_and_keys_by_unit_and_item() -> None:
    rows = [
        ("c1", "psych", "q1", "n/a"),
        ("c1", "b", "q1", "NA"),
        ("c1", "c", "q1", "yes"),
        ("c1", "psych", "q2", "yes"),
        ("c1", "b", "q2", "no"),
    ]
    result = consensus_labels(rows, tie_policy="tie_breaker", tie_breaker="psych")
    assert result[("c1", "q1")].label == "N/A"
    assert (result[("c1", "q2")].label, result[("c1", "q2")].provenance) == ("yes", "tie_break")


def test_long_form_ensemble_counts_an_absent_judge_as_a_missing_vote() -> None:
    rows = [("c1", "j1", "q1", "yes"), ("c1", "j2", "q1", "no"), ("c2", "j1", "q1", "yes")]
    rows += [("c2", "j2", "q1", "yes"), ("c2", "j3", "q1", "no"), ("c1", "j3", "q1", None)]
    result = ensemble_labels(rows)
    assert result[("c1", "q1")].provenance == "no_majority"
    assert result[("c2", "q1")].label == "yes"

"""One label normaliser: whitespace, case, N/A spellings and canonical labels, everywhere."""

from __future__ import annotations

import math

import pytest

from stats import (
    DEFAULT_NA_LABELS,
    StatsInputError,
    UnknownLabelError,
    agreement_report,
    amhart_score,
    consensus,
    consensus_labels,
    ensemble_labels,
    majority_vote,
    normalise_label,
    normalise_ratings,
    rater_pair_agreement,
    reference_agreement,
    vera_mh_score,
)
from stats.labels import choose_spellings

AMHART = ["yes", "no", "N/A"]
VERA = [
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
]


@pytest.mark.parametrize(
    "spelling", ["N/A", "NA", "n/a", "na", "N.A.", "not applicable", " Not  Applicable "]
)
def test_every_na_spelling_becomes_the_one_na_token(spelling: str) -> None:
    assert normalise_label(spelling) == "N/A"


@pytest.mark.parametrize("missing", [None, "", "   ", math.nan])
def test_missing_labels_normalise_to_none(missing: object) -> None:
    assert normalise_label(missing) is None


def test_whitespace_is_collapsed_and_case_kept_without_canonical_labels() -> None:
    assert normalise_label("  Best   practice \n") == "Best practice"
    assert normalise_label(3) == 3


def test_canonical_labels_give_the_canonical_spelling() -> None:
    assert normalise_label("YES", canonical=AMHART) == "yes"
    assert normalise_label(" yes ", canonical=AMHART) == "yes"
    assert normalise_label("n/a", canonical=AMHART) == "N/A"
    assert normalise_label("best  practice", canonical=VERA) == "Best Practice"
    assert normalise_label(2, canonical=["1", "2", "3"]) == "2"


def test_a_label_outside_the_canonical_set_is_a_clear_error() -> None:
    with pytest.raises(UnknownLabelError, match="'maybe' is not one of the labels: 'yes', 'no'"):
        normalise_label("maybe", canonical=AMHART)
    assert issubclass(UnknownLabelError, StatsInputError)


def test_labels_declared_not_applicable_by_the_caller_become_na() -> None:
    assert normalise_label("not relevant", canonical=VERA) == "Not Relevant"
    declared = normalise_label("not relevant", canonical=VERA, na_labels=["Not Relevant"])
    assert declared == "N/A"
    # The caller's list replaces the defaults.
    assert normalise_label("NA", na_labels=["Not Relevant"]) == "NA"
    assert normalise_label("NA", na_labels=[*DEFAULT_NA_LABELS, "Not Relevant"]) == "N/A"


def test_the_output_spelling_is_the_most_common_then_the_smallest() -> None:
    assert choose_spellings(["yes", "Yes", "yes"]) == {"yes": "yes"}
    assert choose_spellings(["Yes", "YES"]) == {"yes": "YES"}
    assert choose_spellings(["YES", "Yes"]) == {"yes": "YES"}
    assert choose_spellings(["Yes", "YES"], canonical=AMHART) == {"yes": "yes"}


def test_judge_labels_differing_only_in_case_make_a_majority() -> None:
    result = majority_vote(["Yes", "YES", "no"])
    assert result.provenance == "majority"
    assert result.label == "YES"  # tie of spellings -> smallest code point
    assert result.votes == (("YES", 2), ("no", 1))
    assert majority_vote(["Yes", "YES", "no"], canonical=AMHART).label == "yes"
    assert majority_vote(["Yes", "yes", "YES"]).provenance == "unanimous"


def test_na_spellings_vote_together() -> None:
    assert majority_vote(["n/a", "Not applicable", "yes"]).label == "N/A"


def test_the_vote_spelling_does_not_depend_on_voter_order() -> None:
    labels = ["Yes", "YES", "no", "yes", "Yes"]
    assert {majority_vote(p).label for p in (labels, labels[::-1])} == {"Yes"}


def test_human_consensus_ignores_case_and_the_tie_breaker_too() -> None:
    result = consensus({"a": "Yes", "b": "yes", "c": "No"})
    assert (result.label, result.provenance) == ("Yes", "majority")
    assert consensus({"a": "Yes", "b": "yes", "c": "yes"}).label == "yes"
    ratings = {"psych": "NO", "b": "Yes", "c": "yes", "d": "no"}
    broken = consensus(ratings, tie_policy="tie_breaker", tie_breaker="psych", canonical=AMHART)
    assert (broken.label, broken.provenance) == ("no", "tie_break")


def test_a_vote_outside_the_canonical_labels_is_rejected() -> None:
    with pytest.raises(UnknownLabelError, match="maybe"):
        majority_vote(["yes", "maybe", "yes"], canonical=AMHART)


def test_long_form_consensus_and_ensemble_are_case_insensitive() -> None:
    rows = [("c1", "j1", "q1", "Yes"), ("c1", "j2", "q1", "YES"), ("c1", "j3", "q1", "no")]
    assert ensemble_labels(rows)[("c1", "q1")].provenance == "majority"
    assert ensemble_labels(rows, canonical=AMHART)[("c1", "q1")].label == "yes"
    assert consensus_labels(rows, canonical={"q1": AMHART})[("c1", "q1")].label == "yes"


def test_normalise_ratings_merges_spellings_across_items_into_one_category() -> None:
    rows = [
        ("c1", "a", "q1", "Yes"),
        ("c1", "b", "q1", "yes"),
        ("c1", "a", "q2", " yes"),
        ("c1", "b", "q2", "NO"),
    ]
    labels = [r.label for r in normalise_ratings(rows).ratings]
    assert labels == ["yes", "yes", "yes", "NO"]
    canonical = [r.label for r in normalise_ratings(rows, canonical=AMHART).ratings]
    assert canonical == ["yes", "yes", "yes", "no"]


def test_normalise_ratings_names_where_an_unknown_label_is() -> None:
    rows = [("c1", "a", "q1", "yes"), ("c2", "b", "q1", "perhaps")]
    with pytest.raises(UnknownLabelError, match="unit 'c2', rater 'b'.*item 'q1'"):
        normalise_ratings(rows, canonical=AMHART)


def test_agreement_counts_case_variants_as_one_category() -> None:
    rows = [
        ("c1", "a", "q1", "Yes"), ("c1", "b", "q1", "yes"),
        ("c2", "a", "q1", "no"), ("c2", "b", "q1", "No"),
    ]  # fmt: skip
    item = agreement_report(rows).items["q1"]
    assert len(item.categories) == 2
    assert item.percent_agreement == 1.0
    assert agreement_report(rows, order=["no", "yes"]).items["q1"].categories == ("no", "yes")


def test_a_judge_yes_agrees_with_a_consensus_yes_whatever_the_case() -> None:
    judge = [("c1", "j1", "q1", "Yes"), ("c2", "j1", "q1", "NO"), ("c3", "j1", "q1", "n/a")]
    reference = {("c1", "q1"): "yes", ("c2", "q1"): "no", ("c3", "q1"): "N/A"}
    result = reference_agreement(judge, reference).pooled[0]
    assert (result.n, result.percent_agreement) == (3, 1.0)


def test_judges_and_single_humans_share_one_spelling_per_label() -> None:
    judges = [("c1", "j1", "q1", "Yes"), ("c2", "j1", "q1", "no")]
    humans = [("c1", "h1", "q1", "yes"), ("c2", "h1", "q1", "No")]
    result = rater_pair_agreement(judges, humans)
    assert len(result.labels) == 2
    assert result.pooled[0].percent_agreement == 1.0


def test_scores_match_labels_with_extra_whitespace() -> None:
    assert amhart_score(["Yes", " no ", "not  applicable"]).score == 0.5
    assert vera_mh_score(["best  practice"]).score == 100.0

"""Consensus labels: the modal human rating with a tie policy, and judge-ensemble votes.

A consensus never guesses: an unresolved tie returns ``label=None`` with provenance ``"tie"``
(or ``"no_majority"`` for votes), so a report can count and show the cases to adjudicate.
N/A is a label like any other here (AMHART: "N/A treated as a third category").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .data import DEFAULT_NA_LABELS, Label, is_missing, normalise_ratings, sort_labels

TiePolicy = Literal["unresolved", "tie_breaker"]
Provenance = Literal[
    "unanimous", "majority", "plurality", "tie_break", "tie", "no_majority", "no_ratings"
]


@dataclass(frozen=True)
class Consensus:
    """A consensus label (None when unresolved) and how it was reached.

    ``provenance``: "unanimous" (every rating agrees), "majority" (more than half),
    "plurality" (a unique mode without a majority), "tie_break" (the designated rater's label
    among the tied modes), "tie" (unresolved tie), "no_majority" (no label reached the vote
    threshold), "no_ratings" (nothing to go on).
    """

    label: Label | None
    provenance: Provenance
    votes: tuple[tuple[Label, int], ...]
    n_ratings: int
    tied: tuple[Label, ...] = ()
    note: str | None = None


def _votes(labels: Iterable[Label]) -> tuple[tuple[Label, int], ...]:
    counter = Counter(labels)
    order = {label: i for i, label in enumerate(sort_labels(counter))}
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], order[kv[0]])))


def consensus(
    labels_by_rater: Mapping[Hashable, Label | None],
    *,
    tie_policy: TiePolicy = "unresolved",
    tie_breaker: Hashable | None = None,
) -> Consensus:
    """Return the modal label of one unit's ratings, with a tie policy and its provenance.

    Missing ratings are ignored. A unique mode wins ("unanimous", "majority" or "plurality").
    On a tie between modes, ``tie_policy="tie_breaker"`` lets the rater ``tie_breaker`` decide
    when their own label is one of the tied modes (AMHART: the clinical psychologist breaks
    2-2 ties); otherwise, or if that rater did not rate, the result is an unresolved "tie".
    """
    if tie_policy not in ("unresolved", "tie_breaker"):
        raise ValueError(f"tie_policy must be 'unresolved' or 'tie_breaker', not {tie_policy!r}")
    if tie_policy == "tie_breaker" and tie_breaker is None:
        raise ValueError("tie_policy='tie_breaker' needs the tie_breaker rater")
    given = {r: x for r, x in labels_by_rater.items() if not is_missing(x)}
    votes = _votes(given.values())
    n = len(given)
    if not votes:
        return Consensus(None, "no_ratings", (), 0, note="no ratings")
    top = votes[0][1]
    modes = tuple(label for label, count in votes if count == top)
    if len(modes) == 1:
        if len(votes) == 1:
            provenance: Provenance = "unanimous"
        elif 2 * top > n:
            provenance = "majority"
        else:
            provenance = "plurality"
        return Consensus(modes[0], provenance, votes, n)
    if tie_policy == "tie_breaker":
        deciding = given.get(tie_breaker)
        if deciding in modes:
            note = f"tie between {modes!r} broken by rater {tie_breaker!r}"
            return Consensus(deciding, "tie_break", votes, n, modes, note)
        reason = "did not rate" if deciding is None else f"chose {deciding!r}, not a tied mode"
        note = f"tie between {modes!r} unresolved: tie-breaker {tie_breaker!r} {reason}"
        return Consensus(None, "tie", votes, n, modes, note)
    return Consensus(None, "tie", votes, n, modes, f"tie between {modes!r} unresolved")


def majority_vote(labels: Sequence[Label | None], min_votes: int | None = None) -> Consensus:
    """Return the label given by at least ``min_votes`` voters (a judge ensemble's vote).

    ``labels`` holds one entry per voter; a missing entry (a judge that failed) still counts
    as a voter. ``min_votes`` defaults to a strict majority of all voters, len(labels)//2 + 1
    (AMHART: two of three judges). No label reaching it gives "no_majority"; two labels
    reaching a low threshold give an unresolved "tie". N/A is its own category.
    """
    n_voters = len(labels)
    threshold = n_voters // 2 + 1 if min_votes is None else int(min_votes)
    if threshold < 1:
        raise ValueError("min_votes must be at least 1")
    given = [x for x in labels if not is_missing(x)]
    votes = _votes(given)
    if not votes:
        return Consensus(None, "no_ratings", (), 0, note="no votes")
    winners = tuple(label for label, count in votes if count >= threshold)
    if len(winners) == 1:
        unanimous = len(votes) == 1 and len(given) == n_voters
        return Consensus(winners[0], "unanimous" if unanimous else "majority", votes, len(given))
    if winners:
        note = f"{winners!r} each reached {threshold} votes"
        return Consensus(None, "tie", votes, len(given), winners, note)
    note = f"no label reached {threshold} of {n_voters} votes"
    return Consensus(None, "no_majority", votes, len(given), note=note)


def _group(ratings: Any, na_labels: Iterable[str]) -> dict[tuple[Hashable, Hashable], dict]:
    normalised = normalise_ratings(ratings, na="category", na_labels=na_labels)
    groups: dict[tuple[Hashable, Hashable], dict[Hashable, Label]] = {}
    for r in normalised.ratings:
        groups.setdefault((r.unit, r.item), {})[r.rater] = r.label
    return groups


def consensus_labels(
    ratings: Any,
    *,
    tie_policy: TiePolicy = "unresolved",
    tie_breaker: Hashable | None = None,
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
) -> dict[tuple[Hashable, Hashable], Consensus]:
    """Return the :func:`consensus` of every (unit, item) in long-form ratings.

    N/A spellings become the category "N/A"; missing ratings are ignored.
    """
    return {
        key: consensus(by_rater, tie_policy=tie_policy, tie_breaker=tie_breaker)
        for key, by_rater in _group(ratings, na_labels).items()
    }


def ensemble_labels(
    ratings: Any,
    *,
    min_votes: int | None = None,
    voters: Sequence[Hashable] | None = None,
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
) -> dict[tuple[Hashable, Hashable], Consensus]:
    """Return the :func:`majority_vote` of the voters for every (unit, item) in long form.

    ``voters`` (default: every rater in the data) fixes the panel, so a judge with no label
    for a unit counts as a missing vote rather than shrinking the panel.
    """
    groups = _group(ratings, na_labels)
    panel = (
        list(voters)
        if voters is not None
        else list(dict.fromkeys(r for g in groups.values() for r in g))
    )
    return {
        key: majority_vote([by_rater.get(v) for v in panel], min_votes)
        for key, by_rater in groups.items()
    }

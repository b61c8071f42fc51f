"""Consensus labels: the modal human rating with a tie policy, and judge-ensemble votes.

A consensus never guesses: an unresolved tie returns ``label=None`` with provenance ``"tie"``
(or ``"no_majority"`` for votes), so a report can count and show the cases to adjudicate.
N/A is a label like any other here (AMHART: "N/A treated as a third category").

Labels are compared after :func:`stats.labels.normalise_label`: case and whitespace are
ignored and the N/A spellings are one label, so judge labels "Yes", "YES", "no" give the
majority "yes"-label. The output spelling: the first canonical spelling when ``canonical`` is
given; otherwise the most common spelling among the votes, ties going to the smallest in
code-point order (so it does not depend on the order of the voters); N/A spellings come out
as "N/A".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .data import normalise_ratings, sort_labels
from .labels import (
    DEFAULT_NA_LABELS,
    Canonical,
    Label,
    LabelNormaliser,
    NaLabels,
    choose_spellings,
    label_key,
)

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
    # labels are normalised and share one spelling per label_key.
    counter = Counter(labels)
    order = {label: i for i, label in enumerate(sort_labels(counter))}
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], order[kv[0]])))


def _normalised(
    labels: Mapping[Hashable, object], na_labels: Iterable[str], canonical: Sequence[Label] | None
) -> dict[Hashable, Label]:
    """Return the non-missing labels, normalised and respelled one spelling per label."""
    normalise = LabelNormaliser(na_labels=na_labels, canonical=canonical)
    given = {k: normalise(x) for k, x in labels.items()}
    present = {k: x for k, x in given.items() if x is not None}
    spelling = choose_spellings(list(present.values()), canonical=canonical)
    return {k: spelling[label_key(x)] for k, x in present.items()}


def consensus(
    labels_by_rater: Mapping[Hashable, Label | None],
    *,
    tie_policy: TiePolicy = "unresolved",
    tie_breaker: Hashable | None = None,
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
    canonical: Sequence[Label] | None = None,
) -> Consensus:
    """Return the modal label of one unit's ratings, with a tie policy and its provenance.

    Labels are normalised first (:func:`stats.labels.normalise_label` with ``na_labels`` and
    ``canonical``): "Yes" and "yes" are one label, every N/A spelling is "N/A", and a label
    outside ``canonical`` raises :class:`stats.labels.UnknownLabelError`. The output spelling
    is the canonical one, else the most common among the ratings (ties: smallest in
    code-point order). Missing ratings are ignored; none at all gives "no_ratings". A unique
    mode wins ("unanimous", "majority" or "plurality"). On a tie between modes,
    ``tie_policy="tie_breaker"`` lets the rater ``tie_breaker`` decide when their own label is
    one of the tied modes (AMHART: the clinical psychologist breaks 2-2 ties); otherwise, or
    if that rater did not rate, the result is an unresolved "tie". A single rater is
    "unanimous". Reference: AMHART paper, human consensus (modal rating, psychologist breaks
    ties).
    """
    if tie_policy not in ("unresolved", "tie_breaker"):
        raise ValueError(f"tie_policy must be 'unresolved' or 'tie_breaker', not {tie_policy!r}")
    if tie_policy == "tie_breaker" and tie_breaker is None:
        raise ValueError("tie_policy='tie_breaker' needs the tie_breaker rater")
    given = _normalised(labels_by_rater, na_labels, canonical)
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


def majority_vote(
    labels: Sequence[Label | None],
    min_votes: int | None = None,
    *,
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
    canonical: Sequence[Label] | None = None,
) -> Consensus:
    """Return the label given by at least ``min_votes`` voters (a judge ensemble's vote).

    ``labels`` holds one entry per voter; a missing entry (a judge that failed) still counts
    as a voter. ``min_votes`` defaults to a strict majority of all voters, len(labels)//2 + 1
    (AMHART: two of three judges). No label reaching it gives "no_majority"; two labels
    reaching a low threshold give an unresolved "tie"; no vote at all gives "no_ratings". N/A
    is its own category. Labels are compared after :func:`stats.labels.normalise_label`
    (case, whitespace and N/A spellings ignored; ``canonical`` fixes the allowed labels), so
    "Yes", "YES", "no" give a majority for yes. Its spelling: the canonical one ("yes" with
    ``canonical=["yes", "no", "N/A"]``), else the most common spelling among its votes, a tie
    going to the smallest in code-point order ("YES" before "Yes"). Reference: AMHART paper,
    judge ensemble (two of three judges).
    """
    n_voters = len(labels)
    threshold = n_voters // 2 + 1 if min_votes is None else int(min_votes)
    if threshold < 1:
        raise ValueError("min_votes must be at least 1")
    given = list(_normalised(dict(enumerate(labels)), na_labels, canonical).values())
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


def _group(
    ratings: Any, na_labels: NaLabels, canonical: Canonical | None
) -> dict[tuple[Hashable, Hashable], dict]:
    normalised = normalise_ratings(ratings, na="category", na_labels=na_labels, canonical=canonical)
    groups: dict[tuple[Hashable, Hashable], dict[Hashable, Label]] = {}
    for r in normalised.ratings:
        groups.setdefault((r.unit, r.item), {})[r.rater] = r.label
    return groups


def consensus_labels(
    ratings: Any,
    *,
    tie_policy: TiePolicy = "unresolved",
    tie_breaker: Hashable | None = None,
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    canonical: Canonical | None = None,
) -> dict[tuple[Hashable, Hashable], Consensus]:
    """Return the :func:`consensus` of every (unit, item) in long-form ratings.

    Labels go through :func:`stats.data.normalise_ratings` (same ``na_labels`` and
    ``canonical``, each a list for every item or a mapping item -> list): N/A spellings
    become the category "N/A", case is ignored, and one spelling per label is used across the
    whole data set. Missing ratings are ignored.
    """
    return {
        # Already normalised: no second N/A mapping under the default spellings.
        key: consensus(by_rater, tie_policy=tie_policy, tie_breaker=tie_breaker, na_labels=())
        for key, by_rater in _group(ratings, na_labels, canonical).items()
    }


def ensemble_labels(
    ratings: Any,
    *,
    min_votes: int | None = None,
    voters: Sequence[Hashable] | None = None,
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    canonical: Canonical | None = None,
) -> dict[tuple[Hashable, Hashable], Consensus]:
    """Return the :func:`majority_vote` of the voters for every (unit, item) in long form.

    ``voters`` (default: every rater in the data) fixes the panel, so a judge with no label
    for a unit counts as a missing vote rather than shrinking the panel. Labels are
    normalised as in :func:`consensus_labels` (case-insensitive, N/A spellings merged).
    """
    groups = _group(ratings, na_labels, canonical)
    panel = (
        list(voters)
        if voters is not None
        else list(dict.fromkeys(r for g in groups.values() for r in g))
    )
    return {
        key: majority_vote([by_rater.get(v) for v in panel], min_votes, na_labels=())
        for key, by_rater in groups.items()
    }

"""Rater drift: does agreement with the consensus change between the start and the end of a queue?

A rater is compared with the consensus of the *other* raters of the same conversation and item
(:func:`leave_one_out_consensus`): a consensus that contained the rater's own answer would agree
with it by construction (with two raters per conversation, always). A rater's ratings are split
by position in their queue (first, middle, last third). For two
positions (first and last third) :func:`cluster_share_difference` compares the share of labels
that agree with the human consensus, last − first, with a percentile bootstrap interval that
resamples whole ratings (a conversation's labels stay together) within each third
independently (Efron & Tibshirani 1993, ch. 13; clusters as in :mod:`stats.bootstrap`). The
thirds hold different conversations, so the two groups are resampled apart; a conversation rated
early by one rater and late by another makes the groups positively correlated, and then the
interval is, if anything, too wide. Pure: plain sequences in, a frozen dataclass out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .bootstrap import (
    ConfidenceInterval,
    cluster_codes,
    make_rng,
    percentile_interval,
    resample_weights,
)
from .data import StatsInputError, is_missing

__all__ = [
    "MIN_OTHER_RATERS",
    "LeftOut",
    "ShareDifference",
    "cluster_share_difference",
    "leave_one_out_consensus",
    "position_thirds",
]

MIN_OTHER_RATERS = 2  # a consensus of one other rater is that rater: pairwise agreement, not consensus

LeftOutStatus = Literal["consensus", "tie", "too_few"]


@dataclass(frozen=True)
class LeftOut:
    """The consensus of the other raters of one (unit, item), for the rater left out.

    ``status``: ``"consensus"`` (``label`` is the others' unique modal label), ``"tie"`` (two or
    more labels share the top count among the others: no consensus, ``label`` None) or
    ``"too_few"`` (fewer than ``min_others`` other raters answered: ``label`` None).
    ``n_others`` counts the other raters who answered.
    """

    label: Hashable | None
    status: LeftOutStatus
    n_others: int


def leave_one_out_consensus(
    labels_by_rater: Mapping[Hashable, Hashable | None], *, min_others: int = MIN_OTHER_RATERS
) -> dict[Hashable, LeftOut]:
    """Return, for every rater who answered, the consensus of the remaining raters.

    ``labels_by_rater`` maps each rater of one (unit, item) to their label, already normalised
    so that equal labels compare equal (N/A is a label like any other); None is no answer
    (left out, and the rater gets no entry). For rater r the consensus is computed from the
    other raters' labels only, never r's own: the label given by strictly more of the others
    than any other label (the unique mode; a plurality suffices). When two or more labels tie
    for the top count the status is ``"tie"`` and no label is chosen (the rater left out cannot
    break it). With fewer than ``min_others`` other answers (default 2, i.e. fewer than 3
    raters in all) the status is ``"too_few"``: one other rater is a pair, not a consensus.
    Examples: yes/yes/no gives "no"'s rater the consensus yes and each "yes" rater a tie
    (yes vs no); yes/yes gives each "too_few".
    """
    if min_others < 1:
        raise StatsInputError("min_others must be at least 1")
    given = {rater: label for rater, label in labels_by_rater.items() if label is not None}
    counts = Counter(given.values())
    out: dict[Hashable, LeftOut] = {}
    for rater, own in given.items():
        others = counts.copy()
        others[own] -= 1
        n_others = len(given) - 1
        if n_others < min_others:
            out[rater] = LeftOut(None, "too_few", n_others)
            continue
        top = max(others.values())
        modes = [label for label, n in others.items() if n == top]
        if len(modes) == 1:
            out[rater] = LeftOut(modes[0], "consensus", n_others)
        else:
            out[rater] = LeftOut(None, "tie", n_others)
    return out


def position_thirds(n: int) -> list[int]:
    """Return the third (0 first, 1 middle, 2 last) of each of n queue positions, in order.

    Position i of n falls in third floor(3i / n): 9 positions give 3, 3, 3; 10 give 4, 3, 3
    (the first third takes the remainder first, then the middle).
    """
    if n < 0:
        raise StatsInputError("n must be >= 0")
    return [min(2, (3 * i) // n) for i in range(n)]


@dataclass(frozen=True)
class ShareDifference:
    """Shares of agreeing labels in two groups, their difference (second − first) and its interval."""

    share_first: float | None
    share_second: float | None
    difference: float | None
    interval: ConfidenceInterval
    n_clusters_first: int
    n_clusters_second: int
    n_rows_first: int
    n_rows_second: int
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "share_first": self.share_first,
            "share_second": self.share_second,
            "difference": self.difference,
            "interval": self.interval.as_dict(),
            "n_clusters_first": self.n_clusters_first,
            "n_clusters_second": self.n_clusters_second,
            "n_rows_first": self.n_rows_first,
            "n_rows_second": self.n_rows_second,
            "note": self.note,
        }


def _group(values: Sequence[Any], clusters: Sequence[Hashable], name: str) -> tuple[np.ndarray, np.ndarray, int]:
    if len(values) != len(clusters):
        raise StatsInputError(f"{name}: {len(values)} values for {len(clusters)} clusters")
    keep = [i for i, v in enumerate(values) if not is_missing(v)]
    x = np.array([float(values[i]) for i in keep], dtype=float)
    if ((x < 0) | (x > 1)).any():
        raise StatsInputError(f"{name}: values must be 0/1 (or shares in [0, 1])")
    if not keep:
        return x, np.zeros(0, dtype=np.int64), 0
    codes, n = cluster_codes([clusters[i] for i in keep])
    return x, codes, n


def _resampled_shares(x: np.ndarray, codes: np.ndarray, n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    sums = np.zeros((n, 2))
    np.add.at(sums, codes, np.column_stack([x, np.ones(x.size)]))
    out = []
    for weights in resample_weights(n, n_resamples, rng):
        totals = weights @ sums
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(totals[:, 0] / totals[:, 1])
    return np.concatenate(out)


def cluster_share_difference(
    first: Sequence[Any],
    first_clusters: Sequence[Hashable],
    second: Sequence[Any],
    second_clusters: Sequence[Hashable],
    *,
    n_resamples: int = 2000,
    seed: int | np.random.Generator | None = None,
    confidence: float = 0.95,
) -> ShareDifference:
    """Return share(second) − share(first) of agreeing labels with a cluster bootstrap interval.

    ``first[i]`` is 1 when label i of the first group agreed with the consensus (0 when not;
    None is left out) and ``first_clusters[i]`` its cluster (one rating: a rater's
    conversation); likewise for the second group. Each share is a ratio of sums over the
    group's labels. With an empty group every figure is None and the note says which.
    """
    if n_resamples < 1:
        raise StatsInputError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise StatsInputError("confidence must lie strictly between 0 and 1")
    xa, ca, na = _group(first, first_clusters, "first")
    xb, cb, nb = _group(second, second_clusters, "second")
    if na == 0 or nb == 0:
        empty = percentile_interval(np.array([]), confidence)
        which = "first" if na == 0 else "second"
        return ShareDifference(
            float(xa.mean()) if na else None, float(xb.mean()) if nb else None, None, empty,
            na, nb, int(xa.size), int(xb.size), f"no label in the {which} group",
        )
    rng = make_rng(seed)
    draws = _resampled_shares(xb, cb, nb, n_resamples, rng) - _resampled_shares(xa, ca, na, n_resamples, rng)
    interval = percentile_interval(draws, confidence)
    interval = ConfidenceInterval(
        interval.low, interval.high, interval.confidence, interval.n_resamples, interval.n_undefined,
        method="percentile bootstrap, ratings resampled within each group", note=interval.note,
    )
    return ShareDifference(
        float(xa.mean()), float(xb.mean()), float(xb.mean() - xa.mean()), interval,
        na, nb, int(xa.size), int(xb.size),
    )

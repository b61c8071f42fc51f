"""Raters against a reference, per item and pooled, from long-form ratings.

Typical uses: each LLM judge (and the judge ensemble) against the human consensus; each judge
against each single human rater, to ask whether a judge agrees with humans as well as humans
agree with each other.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .confusion import RaterComparison, compare_each_pair, compare_to_reference
from .consensus import Consensus
from .data import (
    DEFAULT_NA_LABELS,
    NA_CATEGORY,
    Label,
    NaPolicy,
    Rating,
    is_missing,
    is_na_label,
    normalise_ratings,
    sort_labels,
)

UnitItem = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class ReferenceAgreement:
    """Comparisons per item and pooled over (unit, item) pairs, under one N/A policy."""

    na_policy: NaPolicy
    labels: tuple[Label, ...]
    pooled: tuple[RaterComparison, ...]
    items: dict[Hashable, tuple[RaterComparison, ...]]

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (items keyed by ``str(item)``)."""
        return {
            "na_policy": self.na_policy,
            "labels": [str(x) for x in self.labels],
            "pooled": [c.as_dict() for c in self.pooled],
            "items": {str(k): [c.as_dict() for c in v] for k, v in self.items.items()},
        }


def _by_rater(ratings: Sequence[Rating]) -> dict[Hashable, dict[UnitItem, Label]]:
    out: dict[Hashable, dict[UnitItem, Label]] = {}
    for r in ratings:
        out.setdefault(r.rater, {})[(r.unit, r.item)] = r.label
    return out


def _reference_map(
    reference: Mapping[UnitItem, Label | Consensus | None], na: NaPolicy, na_labels: Iterable[str]
) -> dict[UnitItem, Label]:
    na_labels = tuple(na_labels)
    out: dict[UnitItem, Label] = {}
    for key, value in reference.items():
        label = value.label if isinstance(value, Consensus) else value
        if is_missing(label):
            continue
        if isinstance(label, str):
            label = label.strip()
        if is_na_label(label, na_labels):
            if na == "exclude":
                continue
            label = NA_CATEGORY
        out[key] = label
    return out


def _only_item(m: Mapping[UnitItem, Label], item: Hashable) -> dict[UnitItem, Label]:
    return {k: v for k, v in m.items() if k[1] == item}


def reference_agreement(
    ratings: Any,
    reference: Mapping[UnitItem, Label | Consensus | None],
    *,
    na: NaPolicy = "category",
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
    labels: Sequence[Label] | None = None,
    reference_name: Hashable = "reference",
) -> ReferenceAgreement:
    """Compare every rater in long-form ``ratings`` with a reference labelling.

    ``reference`` maps (unit, item) to a label or to a :class:`Consensus` (unresolved ones,
    label None, are missing). The N/A policy applies to both sides. Per item and pooled over
    (unit, item) pairs: n, percent agreement, Cohen's kappa and a confusion matrix per rater.
    """
    norm = normalise_ratings(ratings, na=na, na_labels=na_labels)
    ref = _reference_map(reference, na, na_labels)
    raters = _by_rater(norm.ratings)
    names = (
        tuple(labels)
        if labels is not None
        else sort_labels([*ref.values(), *(r.label for r in norm.ratings)])
    )
    items = list(dict.fromkeys([*norm.items, *(k[1] for k in ref)]))
    per_item = {
        item: compare_to_reference(
            {r: _only_item(m, item) for r, m in raters.items()},
            _only_item(ref, item),
            reference=reference_name,
            labels=names,
        )
        for item in items
    }
    pooled = compare_to_reference(raters, ref, reference=reference_name, labels=names)
    return ReferenceAgreement(na, names, pooled, per_item)


def rater_pair_agreement(
    ratings: Any,
    reference_ratings: Any,
    *,
    na: NaPolicy = "category",
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
    labels: Sequence[Label] | None = None,
) -> ReferenceAgreement:
    """Compare each rater in ``ratings`` with each rater in ``reference_ratings`` (long form).

    E.g. each judge against each single human, per item and pooled over (unit, item) pairs.
    """
    norm = normalise_ratings(ratings, na=na, na_labels=na_labels)
    ref_norm = normalise_ratings(reference_ratings, na=na, na_labels=na_labels)
    raters, refs = _by_rater(norm.ratings), _by_rater(ref_norm.ratings)
    names = (
        tuple(labels)
        if labels is not None
        else sort_labels(r.label for r in (*norm.ratings, *ref_norm.ratings))
    )
    items = list(dict.fromkeys([*norm.items, *ref_norm.items]))
    per_item = {
        item: compare_each_pair(
            {r: _only_item(m, item) for r, m in raters.items()},
            {h: _only_item(m, item) for h, m in refs.items()},
            labels=names,
        )
        for item in items
    }
    pooled = compare_each_pair(raters, refs, labels=names)
    return ReferenceAgreement(na, names, pooled, per_item)

"""Raters against a reference, per item and pooled, from long-form ratings.

Typical uses: each LLM judge (and the judge ensemble) against the human consensus; each judge
against each single human rater, to ask whether a judge agrees with humans as well as humans
agree with each other.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .confusion import RaterComparison, compare_each_pair, compare_to_reference
from .consensus import Consensus
from .data import (
    DEFAULT_NA_LABELS,
    Label,
    NaPolicy,
    Rating,
    normalise_ratings,
    sort_labels,
)
from .labels import (
    Canonical,
    LabelNormaliser,
    NaLabels,
    canonical_for,
    choose_spellings,
    label_key,
    na_labels_for,
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
    reference: Mapping[UnitItem, Label | Consensus | None],
    na: NaPolicy,
    na_labels: NaLabels,
    canonical: Canonical | None = None,
) -> dict[UnitItem, Label]:
    normalisers: dict[Hashable, LabelNormaliser] = {}
    out: dict[UnitItem, Label] = {}
    for key, value in reference.items():
        item = key[1]
        if item not in normalisers:
            normalisers[item] = LabelNormaliser(
                na_labels=na_labels_for(na_labels, item),
                canonical=canonical_for(canonical, item),
                item=item,
            )
        label, is_na = normalisers[item].split(
            value.label if isinstance(value, Consensus) else value
        )
        if label is None or (is_na and na == "exclude"):
            continue
        out[key] = label
    return out


def _same_spellings(
    *sides: Sequence[Rating] | Mapping[UnitItem, Label],
) -> list[Sequence[Rating] | dict[UnitItem, Label]]:
    # Each side was normalised on its own; make "Yes" on one side and "yes" on the other one
    # label, spelled as most often over both sides.
    tally: dict[Label, int] = {}
    for side in sides:
        labels = side.values() if isinstance(side, Mapping) else (r.label for r in side)
        for label in labels:
            tally[label] = tally.get(label, 0) + 1
    spelling = choose_spellings(tally)
    respell = {label: spelling[label_key(label)] for label in tally}
    if all(respell[x] == x for x in tally):
        return list(sides)
    out: list[Sequence[Rating] | dict[UnitItem, Label]] = []
    for side in sides:
        if isinstance(side, Mapping):
            out.append({k: respell[v] for k, v in side.items()})
        else:
            out.append([Rating(r.unit, r.rater, r.item, respell[r.label]) for r in side])
    return out


def _only_item(m: Mapping[UnitItem, Label], item: Hashable) -> dict[UnitItem, Label]:
    return {k: v for k, v in m.items() if k[1] == item}


def reference_agreement(
    ratings: Any,
    reference: Mapping[UnitItem, Label | Consensus | None],
    *,
    na: NaPolicy = "category",
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    labels: Sequence[Label] | None = None,
    reference_name: Hashable = "reference",
    canonical: Canonical | None = None,
) -> ReferenceAgreement:
    """Compare every rater in long-form ``ratings`` with a reference labelling.

    ``reference`` maps (unit, item) to a label or to a :class:`Consensus` (unresolved ones,
    label None, are missing). Both sides go through the same label normaliser
    (:func:`stats.labels.normalise_label`: case and whitespace ignored, N/A spellings, or the
    ``na_labels`` declared by the caller, as one "N/A"; ``canonical`` fixes the allowed labels
    and spelling), so a judge's "Yes" agrees with a consensus "yes". The N/A policy applies to
    both sides. Per item and pooled over (unit, item) pairs: n, percent agreement, Cohen's
    kappa and a confusion matrix per rater.
    """
    norm = normalise_ratings(ratings, na=na, na_labels=na_labels, canonical=canonical)
    rated, ref = _same_spellings(norm.ratings, _reference_map(reference, na, na_labels, canonical))
    raters = _by_rater(rated)  # type: ignore[arg-type]
    names = (
        tuple(labels)
        if labels is not None
        else sort_labels([*ref.values(), *(r.label for r in rated)])  # type: ignore[union-attr]
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
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    labels: Sequence[Label] | None = None,
    canonical: Canonical | None = None,
) -> ReferenceAgreement:
    """Compare each rater in ``ratings`` with each rater in ``reference_ratings`` (long form).

    E.g. each judge against each single human, per item and pooled over (unit, item) pairs.
    Both sides go through the same label normaliser as :func:`reference_agreement`.
    """
    norm = normalise_ratings(ratings, na=na, na_labels=na_labels, canonical=canonical)
    ref_norm = normalise_ratings(reference_ratings, na=na, na_labels=na_labels, canonical=canonical)
    rated, ref_rated = _same_spellings(norm.ratings, ref_norm.ratings)
    raters, refs = _by_rater(rated), _by_rater(ref_rated)  # type: ignore[arg-type]
    names = (
        tuple(labels) if labels is not None else sort_labels(r.label for r in (*rated, *ref_rated))  # type: ignore[union-attr]
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

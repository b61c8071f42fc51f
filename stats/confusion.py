"""Confusion matrices and agreement of raters with a reference labelling.

Rows are the reference (e.g. the human consensus), columns the rater (e.g. an LLM judge).
Units where either side has no label are dropped from the matrix and counted.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .agreement import CohenKappa, cohen_kappa
from .data import Label, is_missing, sort_labels


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (reference label, rater label) with agreement and Cohen's kappa."""

    labels: tuple[Label, ...]
    counts: tuple[tuple[int, ...], ...]
    n: int
    n_dropped: int
    percent_agreement: float | None
    kappa: CohenKappa

    def count(self, reference: Label, rater: Label) -> int:
        """Return how often the reference said ``reference`` and the rater said ``rater``."""
        return self.counts[self.labels.index(reference)][self.labels.index(rater)]

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (rows: reference, columns: rater)."""
        return {
            "labels": [str(x) for x in self.labels],
            "counts": [list(r) for r in self.counts],
            "n": self.n,
            "n_dropped": self.n_dropped,
            "percent_agreement": self.percent_agreement,
            "cohen_kappa": self.kappa.kappa,
            "note": self.kappa.note,
        }


def confusion_matrix(
    reference: Sequence[Label | None],
    rater: Sequence[Label | None],
    labels: Sequence[Label] | None = None,
) -> ConfusionMatrix:
    """Cross-tabulate two aligned label sequences (reference in rows, rater in columns).

    Pairs with a missing label on either side are dropped and counted in ``n_dropped``.
    ``labels`` fixes the rows/columns (default: every observed label, sorted), so matrices of
    several raters line up. Agreement is the diagonal share; kappa is Cohen's (1960). With no
    pair left, agreement and kappa are None.
    """
    if len(reference) != len(rater):
        raise ValueError("reference and rater must have the same length")
    pairs = [
        (a, b)
        for a, b in zip(reference, rater, strict=True)
        if not is_missing(a) and not is_missing(b)
    ]
    names = tuple(labels) if labels is not None else sort_labels(v for p in pairs for v in p)
    index = {c: i for i, c in enumerate(names)}
    table = np.zeros((len(names), len(names)), dtype=np.int64)
    for a, b in pairs:
        if a not in index or b not in index:
            raise ValueError(f"label {a if a not in index else b!r} not in labels {names!r}")
        table[index[a], index[b]] += 1
    n = len(pairs)
    return ConfusionMatrix(
        labels=names,
        counts=tuple(tuple(int(x) for x in row) for row in table),
        n=n,
        n_dropped=len(reference) - n,
        percent_agreement=float(np.trace(table) / n) if n else None,
        kappa=cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], names),
    )


@dataclass(frozen=True)
class RaterComparison:
    """One rater against one reference labelling over the units both labelled."""

    rater: Hashable
    reference: Hashable
    n: int
    n_rater_missing: int
    n_reference_missing: int
    percent_agreement: float | None
    cohen_kappa: float | None
    confusion: ConfusionMatrix
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "rater": str(self.rater),
            "reference": str(self.reference),
            "n": self.n,
            "n_rater_missing": self.n_rater_missing,
            "n_reference_missing": self.n_reference_missing,
            "percent_agreement": self.percent_agreement,
            "cohen_kappa": self.cohen_kappa,
            "confusion": self.confusion.as_dict(),
            "note": self.note,
        }


def _present(labels: Mapping[Hashable, Label | None]) -> dict[Hashable, Label]:
    return {u: x for u, x in labels.items() if not is_missing(x)}


def compare(
    rater_labels: Mapping[Hashable, Label | None],
    reference_labels: Mapping[Hashable, Label | None],
    *,
    rater: Hashable = "rater",
    reference: Hashable = "reference",
    labels: Sequence[Label] | None = None,
) -> RaterComparison:
    """Compare one rater's unit -> label mapping with a reference mapping.

    Agreement and Cohen's kappa use the units both labelled; units only one side labelled
    are counted as ``n_rater_missing`` / ``n_reference_missing``.
    """
    mine, ref = _present(rater_labels), _present(reference_labels)
    shared = [u for u in ref if u in mine]
    cm = confusion_matrix([ref[u] for u in shared], [mine[u] for u in shared], labels)
    note = cm.kappa.note
    if not shared:
        note = f"rater {rater!r} and {reference!r} share no labelled unit"
    return RaterComparison(
        rater=rater,
        reference=reference,
        n=cm.n,
        n_rater_missing=sum(1 for u in ref if u not in mine),
        n_reference_missing=sum(1 for u in mine if u not in ref),
        percent_agreement=cm.percent_agreement,
        cohen_kappa=cm.kappa.kappa,
        confusion=cm,
        note=note,
    )


def _label_set(*mappings: Mapping[Hashable, Label | None]) -> tuple[Label, ...]:
    return sort_labels(x for m in mappings for x in m.values() if not is_missing(x))


def compare_to_reference(
    labels_by_rater: Mapping[Hashable, Mapping[Hashable, Label | None]],
    reference_labels: Mapping[Hashable, Label | None],
    *,
    reference: Hashable = "reference",
    labels: Sequence[Label] | None = None,
) -> tuple[RaterComparison, ...]:
    """Compare each rater (e.g. each judge, or the ensemble) with one reference labelling.

    All confusion matrices share one label order (``labels`` or every observed label).
    """
    names = (
        tuple(labels)
        if labels is not None
        else _label_set(reference_labels, *labels_by_rater.values())
    )
    return tuple(
        compare(m, reference_labels, rater=r, reference=reference, labels=names)
        for r, m in labels_by_rater.items()
    )


def compare_each_pair(
    labels_by_rater: Mapping[Hashable, Mapping[Hashable, Label | None]],
    labels_by_reference: Mapping[Hashable, Mapping[Hashable, Label | None]],
    *,
    labels: Sequence[Label] | None = None,
) -> tuple[RaterComparison, ...]:
    """Compare each rater with each single reference rater (each judge vs each human).

    A rater is not compared with itself when it appears on both sides.
    """
    names = (
        tuple(labels)
        if labels is not None
        else _label_set(*labels_by_rater.values(), *labels_by_reference.values())
    )
    return tuple(
        compare(m, ref, rater=r, reference=h, labels=names)
        for r, m in labels_by_rater.items()
        for h, ref in labels_by_reference.items()
        if r != h
    )

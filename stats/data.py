"""Long-form ratings, the N/A policy, per-unit count tables and coincidences.

Everything downstream works on a :class:`RatingTable`: one row per unit (a conversation, or a
(conversation, item) pair when pooling), one column per rater, integer category codes with
``-1`` for a missing rating, and the derived units x categories count matrix. Category
scales (order, numeric values) live in :mod:`.scale`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .labels import (
    DEFAULT_NA_LABELS,
    NA_CATEGORY,
    Canonical,
    LabelNormaliser,
    NaLabels,
    UnknownLabelError,
    canonical_for,
    choose_spellings,
    fold_label,
    is_missing,
    label_key,
    na_labels_for,
)
from .scale import (
    LEVELS,
    Label,
    Level,
    Scale,
    StatsInputError,
    as_number,
    build_scale,
    sort_labels,
)

__all__ = [
    "DEFAULT_NA_LABELS",
    "LEVELS",
    "NA_CATEGORY",
    "NA_POLICIES",
    "Label",
    "Level",
    "NaPolicy",
    "Rating",
    "RatingTable",
    "Scale",
    "StatsInputError",
    "UnknownLabelError",
    "all_na_labels",
    "as_counts",
    "as_number",
    "build_scale",
    "build_tables",
    "coincidence_matrix",
    "count_matrix",
    "is_missing",
    "is_na_label",
    "normalise_ratings",
    "sort_labels",
    "unit_coincidences",
]

NaPolicy = Literal["category", "exclude"]

NA_POLICIES: tuple[NaPolicy, ...] = ("category", "exclude")


@dataclass(frozen=True)
class Rating:
    """One rating in long form; ``label`` is None when the rating is missing."""

    unit: Hashable
    rater: Hashable
    item: Hashable
    label: Label | None


def is_na_label(label: object, na_labels: Iterable[str] = DEFAULT_NA_LABELS) -> bool:
    """Tell whether a label is the "not applicable" answer.

    Compared as :func:`stats.labels.normalise_label` does: trimmed, inner whitespace collapsed,
    case-insensitive. A bare string ``na_labels`` is one label, not a list of characters.
    """
    if not isinstance(label, str):
        return False
    if isinstance(na_labels, str):
        na_labels = (na_labels,)
    return fold_label(label) in {fold_label(s) for s in na_labels}


def all_na_labels(na_labels: NaLabels) -> tuple[str, ...]:
    """Return every N/A label of a plain list or of a mapping item -> labels (with defaults)."""
    if isinstance(na_labels, Mapping):
        per_item = [na_labels_for(na_labels, item) for item in na_labels]
        return tuple(
            dict.fromkeys([*DEFAULT_NA_LABELS, *(x for labels in per_item for x in labels)])
        )
    return na_labels_for(na_labels, None)


def _iter_rows(ratings: Any) -> Iterable[tuple[Any, Any, Any, Any]]:
    if hasattr(ratings, "columns") and hasattr(ratings, "itertuples"):  # a pandas DataFrame
        missing = {"unit", "rater", "item", "label"} - set(ratings.columns)
        if missing:
            raise StatsInputError(f"ratings table lacks column(s): {', '.join(sorted(missing))}")
        yield from ratings[["unit", "rater", "item", "label"]].itertuples(index=False, name=None)
        return
    for row in ratings:
        if isinstance(row, Rating):
            yield (row.unit, row.rater, row.item, row.label)
        elif isinstance(row, Mapping):
            yield (row["unit"], row["rater"], row["item"], row.get("label"))
        else:
            unit, rater, item, label = row
            yield (unit, rater, item, label)


@dataclass(frozen=True)
class NormalisedRatings:
    """Ratings after the N/A policy: non-missing ratings plus what was dropped and why."""

    ratings: tuple[Rating, ...]
    items: tuple[Hashable, ...]
    n_missing: Mapping[Hashable, int]
    n_na_excluded: Mapping[Hashable, int]
    na_policy: NaPolicy


def normalise_ratings(
    ratings: Any,
    *,
    na: NaPolicy = "category",
    na_labels: NaLabels = DEFAULT_NA_LABELS,
    canonical: Canonical | None = None,
) -> NormalisedRatings:
    """Apply the label normaliser and the N/A policy to long-form ratings, counting drops.

    ``ratings`` is an iterable of :class:`Rating`, of ``(unit, rater, item, label)`` tuples, of
    mappings with those keys, or a pandas DataFrame with those columns. Every label goes
    through :func:`stats.labels.normalise_label`: missing labels (None, NaN, blank) are dropped
    and counted per item; whitespace is cleaned and case ignored; N/A answers become the single
    category ``"N/A"`` when ``na="category"`` and are dropped (counted in ``n_na_excluded``)
    when ``na="exclude"``.

    ``na_labels``: the labels meaning "not applicable", replacing the default list
    (:data:`stats.labels.DEFAULT_NA_LABELS`); a mapping item -> labels declares them per item
    (items absent from it use the defaults), e.g. ``{"Detects Potential Risk":
    ["Not Relevant"]}``. ``canonical``: the allowed labels (one list for all items, or a
    mapping item -> list); a label outside them raises
    :class:`stats.labels.UnknownLabelError` naming the unit, rater and item, and matching
    labels take the canonical spelling. Labels equal but for case are one category; its
    spelling is the canonical one, else the most common spelling over all the ratings (ties:
    smallest in code-point order), so every item and the pooled table share it.

    Two ratings of the same (unit, rater, item) raise :class:`StatsInputError`. Items keep the
    order in which they first appear. Empty input gives no ratings and no items.
    """
    if na not in NA_POLICIES:
        raise StatsInputError(f"na must be one of {NA_POLICIES}, not {na!r}")
    per_item = isinstance(na_labels, Mapping) or isinstance(canonical, Mapping)
    shared = (
        None
        if per_item
        else LabelNormaliser(na_labels=na_labels_for(na_labels, None), canonical=canonical)  # type: ignore[arg-type]
    )
    normalisers: dict[Hashable, LabelNormaliser] = {}
    kept: list[Rating] = []
    items: dict[Hashable, None] = {}
    n_missing: dict[Hashable, int] = {}
    n_na: dict[Hashable, int] = {}
    seen: set[tuple[Hashable, Hashable, Hashable]] = set()
    for unit, rater, item, label in _iter_rows(ratings):
        key = (unit, rater, item)
        if key in seen:
            raise StatsInputError(
                f"duplicate rating: unit {unit!r}, rater {rater!r}, item {item!r} appears twice"
            )
        seen.add(key)
        if item not in items:
            items[item] = None
            n_missing[item] = 0
            n_na[item] = 0
            normalisers[item] = shared or LabelNormaliser(
                na_labels=na_labels_for(na_labels, item),
                canonical=canonical_for(canonical, item),
                item=item,
            )
        try:
            clean, is_na = normalisers[item].split(label)
        except UnknownLabelError as exc:
            where = f"unit {unit!r}, rater {rater!r}"
            raise UnknownLabelError(label, exc.canonical, item, where) from None
        if clean is None:
            n_missing[item] += 1
        elif is_na and na == "exclude":
            n_na[item] += 1
        else:
            kept.append(Rating(unit, rater, item, clean))
    kept = _one_spelling_per_label(kept)
    return NormalisedRatings(tuple(kept), tuple(items), n_missing, n_na, na)


def _one_spelling_per_label(ratings: list[Rating]) -> list[Rating]:
    tally: dict[Label, int] = {}
    for r in ratings:
        tally[r.label] = tally.get(r.label, 0) + 1
    keys = [label_key(label) for label in tally]
    if len(set(keys)) == len(keys):
        return ratings  # every label already has a single spelling
    spelling = choose_spellings(tally)
    respell = {label: spelling[label_key(label)] for label in tally}
    return [
        r if respell[r.label] == r.label else Rating(r.unit, r.rater, r.item, respell[r.label])
        for r in ratings
    ]


@dataclass(frozen=True, eq=False)
class RatingTable:
    """Units x raters category codes (``-1`` = missing) and the units x categories counts.

    Only units with at least one rating and raters with at least one rating are kept.
    ``values`` holds the numeric value of each category for ordinal/interval data.
    """

    units: tuple[Hashable, ...]
    raters: tuple[Hashable, ...]
    categories: tuple[Label, ...]
    values: np.ndarray | None
    codes: np.ndarray
    counts: np.ndarray

    @property
    def n_units(self) -> int:
        """Return the number of units with at least one rating."""
        return len(self.units)

    @property
    def n_raters(self) -> int:
        """Return the number of raters with at least one rating."""
        return len(self.raters)

    @property
    def n_ratings(self) -> int:
        """Return the number of non-missing ratings."""
        return int(self.counts.sum())

    @classmethod
    def from_codes(
        cls,
        codes: np.ndarray,
        *,
        units: Sequence[Hashable],
        raters: Sequence[Hashable],
        categories: Sequence[Label],
        values: Sequence[float] | None = None,
    ) -> RatingTable:
        """Build a table from a units x raters code matrix, dropping empty rows and columns."""
        codes = np.asarray(codes, dtype=np.int64).reshape(len(units), len(raters))
        q = len(categories)
        if codes.size and (codes.max() >= q or codes.min() < -1):
            raise StatsInputError("category code out of range")
        rated = codes >= 0
        keep_u = rated.any(axis=1)
        keep_r = rated.any(axis=0)
        codes = codes[keep_u][:, keep_r]
        counts = count_matrix(codes, q)
        return cls(
            units=tuple(u for u, k in zip(units, keep_u, strict=True) if k),
            raters=tuple(r for r, k in zip(raters, keep_r, strict=True) if k),
            categories=tuple(categories),
            values=None if values is None else np.asarray(values, dtype=float),
            codes=codes,
            counts=counts,
        )

    @classmethod
    def from_matrix(
        cls,
        matrix: Sequence[Sequence[Any]] | np.ndarray,
        *,
        level: Level = "nominal",
        order: Sequence[Label] | None = None,
        raters: Sequence[Hashable] | None = None,
        units: Sequence[Hashable] | None = None,
    ) -> RatingTable:
        """Build a table from a units x raters matrix of labels (None/NaN/blank = missing)."""
        rows = [list(r) for r in (matrix.tolist() if isinstance(matrix, np.ndarray) else matrix)]
        n_raters = max((len(r) for r in rows), default=0)
        if any(len(r) != n_raters for r in rows):
            raise StatsInputError("every unit needs one entry per rater (use None for missing)")
        cells = [[None if is_missing(x) else x for x in r] for r in rows]
        scale = build_scale(
            (x for r in cells for x in r if x is not None), level=level, order=order
        )
        index = {c: i for i, c in enumerate(scale.categories)}
        codes = np.array(
            [[-1 if x is None else index[x] for x in r] for r in cells], dtype=np.int64
        ).reshape(len(rows), n_raters)
        return cls.from_codes(
            codes,
            units=list(units) if units is not None else list(range(len(rows))),
            raters=list(raters) if raters is not None else list(range(n_raters)),
            categories=scale.categories,
            values=scale.values,
        )


def count_matrix(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """Count, per unit (row), how many raters chose each category; ``-1`` codes are ignored."""
    codes = np.asarray(codes, dtype=np.int64)
    n_units = codes.shape[0]
    rows = np.broadcast_to(np.arange(n_units)[:, None], codes.shape)
    ok = codes >= 0
    flat = rows[ok] * n_categories + codes[ok]
    counts = np.bincount(flat, minlength=n_units * n_categories)
    return counts.reshape(n_units, n_categories).astype(np.int64)


def build_tables(
    ratings: Sequence[Rating],
    items: Sequence[Hashable],
    scale: Scale,
) -> tuple[dict[Hashable, RatingTable], RatingTable]:
    """Group ratings into one table per item and a pooled table of (unit, item) units.

    Per-item tables keep only the categories observed in the item unless the scale was
    declared; the pooled table keeps every observed category.
    """
    index = {c: i for i, c in enumerate(scale.categories)}
    by_item: dict[Hashable, list[Rating]] = {item: [] for item in items}
    for r in ratings:
        by_item[r.item].append(r)
    tables = {item: _table(rows, scale, index, pooled=False) for item, rows in by_item.items()}
    return tables, _table(ratings, scale, index, pooled=True)


def _table(
    rows: Sequence[Rating], scale: Scale, index: Mapping[Label, int], *, pooled: bool
) -> RatingTable:
    unit_ix: dict[Hashable, int] = {}
    rater_ix: dict[Hashable, int] = {}
    u = np.empty(len(rows), dtype=np.int64)
    r = np.empty(len(rows), dtype=np.int64)
    c = np.empty(len(rows), dtype=np.int64)
    for k, row in enumerate(rows):
        key = (row.unit, row.item) if pooled else row.unit
        u[k] = unit_ix.setdefault(key, len(unit_ix))
        r[k] = rater_ix.setdefault(row.rater, len(rater_ix))
        c[k] = index[row.label]
    categories = scale.categories
    values = scale.values
    if not scale.declared:
        used = np.unique(c)
        remap = np.full(len(categories), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        c = remap[c]
        categories = tuple(categories[i] for i in used)
        values = None if values is None else tuple(values[i] for i in used)
    codes = np.full((len(unit_ix), len(rater_ix)), -1, dtype=np.int64)
    codes[u, r] = c
    return RatingTable.from_codes(
        codes, units=list(unit_ix), raters=list(rater_ix), categories=categories, values=values
    )


def as_counts(data: RatingTable | Any) -> np.ndarray:
    """Return a float units x categories count matrix without units that have no rating."""
    counts = data.counts if isinstance(data, RatingTable) else np.asarray(data, dtype=float)
    if counts.ndim != 2:
        raise StatsInputError("counts must be a units x categories matrix")
    if (counts < 0).any():
        raise StatsInputError("counts must be non-negative")
    counts = counts.astype(float)
    return counts[counts.sum(axis=1) > 0]


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Return each unit's contribution to Krippendorff's coincidence matrix (units x q x q).

    A unit with m_u >= 2 values adds (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1) to o_ck
    (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", section C); units with
    fewer than two values are not pairable and add nothing.
    """
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    pairable = m >= 2
    outer = counts[:, :, None] * counts[:, None, :]
    diag = np.einsum("uc,ck->uck", counts, np.eye(counts.shape[1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (outer - diag) / np.where(pairable, m - 1, 1)[:, None, None]
    out[~pairable] = 0.0
    return out


def coincidence_matrix(data: RatingTable | Any) -> np.ndarray:
    """Return Krippendorff's q x q coincidence matrix o_ck of a count table."""
    return unit_coincidences(as_counts(data)).sum(axis=0)

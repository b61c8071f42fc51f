"""Judge drift between two versions run on the same conversations.

Two judge runs (version A, then version B: a new prompt, model or provider) labelled the same
conversations. The report lists the labels that flipped, the agreement between the versions
per item (percent agreement and Cohen's kappa), each version's agreement with the human
consensus on the same (conversation, item) pairs, and a paired bootstrap interval for the
difference B - A. Pure: plain mappings and sequences in, frozen dataclasses out.

Labels are compared after trimming and case folding, with the N/A spellings of
:data:`stats.data.DEFAULT_NA_LABELS` as one label; results report the labels as given.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .agreement import cohen_kappa
from .bootstrap import ConfidenceInterval, make_rng, percentile_interval, resample_weights
from .data import NA_CATEGORY, StatsInputError, is_missing, is_na_label

__all__ = [
    "DriftReport",
    "Flip",
    "FlipDirections",
    "ItemDrift",
    "LabelFlips",
    "PairedDifference",
    "PairedKappaDifference",
    "drift_report",
    "flip_directions",
    "label_flips",
    "paired_bootstrap_difference",
    "paired_kappa_difference",
]

Key = tuple[Hashable, Hashable]  # (unit, item)


@dataclass(frozen=True)
class PairedDifference:
    """Mean correctness of versions A and B on the same rows, and B - A with its interval.

    ``n_units`` is the number of resampled units (conversations), ``n_rows`` the rows behind
    the means (one per conversation, or per (conversation, item) pair); ``n_a_better`` and
    ``n_b_better`` count rows where one version scored higher (the discordant pairs).
    """

    agreement_a: float | None
    agreement_b: float | None
    difference: float | None
    interval: ConfidenceInterval
    n_units: int
    n_rows: int
    n_dropped: int
    n_a_better: int
    n_b_better: int
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "agreement_a": self.agreement_a,
            "agreement_b": self.agreement_b,
            "difference": self.difference,
            "interval": self.interval.as_dict(),
            "n_units": self.n_units,
            "n_rows": self.n_rows,
            "n_dropped": self.n_dropped,
            "n_a_better": self.n_a_better,
            "n_b_better": self.n_b_better,
            "note": self.note,
        }


def _correctness(values: Sequence[Any], name: str) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if is_missing(v):
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise StatsInputError(f"{name}[{i}] is not a number: {v!r}") from None
    if np.isinf(out).any():
        raise StatsInputError(f"{name} holds an infinite value")
    return out


def paired_bootstrap_difference(
    a_correct: Sequence[Any],
    b_correct: Sequence[Any],
    *,
    units: Sequence[Hashable] | None = None,
    n_resamples: int = 2000,
    seed: int | np.random.Generator | None = None,
    confidence: float = 0.95,
) -> PairedDifference:
    """Estimate the difference B - A in agreement with humans, with a paired bootstrap CI.

    ``a_correct[i]`` and ``b_correct[i]`` score the same row for versions A and B: 1/0 (or
    True/False) for agreeing with the human consensus, or a per-conversation agreement rate.
    Rows where either is missing (None/NaN: a judge that failed) are dropped and counted.
    The estimate is mean(b) - mean(a) over the kept rows. The interval is the percentile
    bootstrap (Efron & Tibshirani 1993, ch. 13) over units: each resample draws units with
    replacement and keeps both versions' rows of a drawn unit together (paired), so the
    correlation between versions is kept. ``units`` gives each row's conversation when rows
    are (conversation, item) pairs, so the resampling is by conversation (a cluster
    bootstrap, the statistic a ratio of resampled sums); by default each row is a unit.
    With one unit the interval is a point; with no row every figure is None.
    """
    a = _correctness(a_correct, "a_correct")
    b = _correctness(b_correct, "b_correct")
    if a.size != b.size:
        raise StatsInputError("a_correct and b_correct must have the same length (paired rows)")
    if units is not None and len(units) != a.size:
        raise StatsInputError(f"units has {len(units)} entries for {a.size} rows")
    if n_resamples < 1:
        raise StatsInputError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise StatsInputError("confidence must lie strictly between 0 and 1")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n_dropped = int((~keep).sum())
    if units is None:
        codes = np.arange(a.size)
    else:
        codes = _codes([u for u, k in zip(units, keep, strict=True) if k])
    n_units = int(codes.max()) + 1 if codes.size else 0
    a_better, b_better = int((a > b).sum()), int((b > a).sum())
    if a.size == 0:
        empty = percentile_interval(np.array([np.nan]), confidence)
        return PairedDifference(
            None, None, None, empty, 0, 0, n_dropped, 0, 0, "no row with both versions scored"
        )
    features = np.zeros((n_units, 3))
    np.add.at(features, codes, np.column_stack([a, b, np.ones(a.size)]))
    draws = []
    for weights in resample_weights(n_units, n_resamples, make_rng(seed)):
        sums = weights @ features
        draws.append((sums[:, 1] - sums[:, 0]) / sums[:, 2])
    interval = percentile_interval(np.concatenate(draws), confidence)
    interval = ConfidenceInterval(
        interval.low,
        interval.high,
        interval.confidence,
        interval.n_resamples,
        interval.n_undefined,
        method="paired percentile bootstrap over units",
        note=interval.note,
    )
    note = f"{n_dropped} row(s) without both versions' scores left out" if n_dropped else None
    return PairedDifference(
        agreement_a=float(a.mean()),
        agreement_b=float(b.mean()),
        difference=float(b.mean() - a.mean()),
        interval=interval,
        n_units=n_units,
        n_rows=int(a.size),
        n_dropped=n_dropped,
        n_a_better=a_better,
        n_b_better=b_better,
        note=note,
    )


def _codes(values: Sequence[Hashable]) -> np.ndarray:
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(v, len(index)) for v in values], dtype=np.int64)


# --- label flips ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Flip:
    """One (conversation, item) whose label changed between versions A and B."""

    unit: Hashable
    item: Hashable
    label_a: Any
    label_b: Any


@dataclass(frozen=True)
class ItemDrift:
    """Agreement between versions A and B on one item (or pooled when ``item`` is None).

    ``n_compared`` pairs have a label from both versions; ``n_only_a`` / ``n_only_b`` pairs
    have a label from one version only (the other failed or skipped it). ``kappa`` is Cohen's
    kappa between the versions (None when undefined, e.g. a single label used throughout).
    """

    item: Hashable
    n_compared: int
    n_same: int
    n_flipped: int
    agreement: float | None
    kappa: float | None
    n_only_a: int
    n_only_b: int


@dataclass(frozen=True)
class LabelFlips:
    """The flipped labels, listed by (unit, item) in input order, and agreement per item."""

    flips: tuple[Flip, ...]
    items: tuple[ItemDrift, ...]
    pooled: ItemDrift

    def as_dict(self) -> dict[str, object]:
        """Return a mapping for JSON (units, items and labels as given)."""
        return {
            "flips": [asdict(f) for f in self.flips],
            "items": [asdict(i) for i in self.items],
            "pooled": asdict(self.pooled),
        }


def _label_map(labels: Mapping[Key, Any] | Iterable[tuple[Any, ...]], name: str) -> dict[Key, Any]:
    if isinstance(labels, Mapping):
        rows: Iterable[tuple[Any, ...]] = ((k[0], k[1], v) for k, v in labels.items())
    else:
        rows = labels
    out: dict[Key, Any] = {}
    for row in rows:
        if len(row) != 3:
            raise StatsInputError(f"{name}: each row must be (unit, item, label)")
        unit, item, label = row
        if (unit, item) in out:
            raise StatsInputError(f"{name}: unit {unit!r}, item {item!r} appears twice")
        out[(unit, item)] = label
    return out


def _norm(label: Any) -> Any:
    if label is None:
        return None
    if isinstance(label, str):
        return _norm_text(label) if label.strip() else None
    if is_missing(label):
        return None
    return label


@lru_cache(maxsize=4096)
def _norm_text(label: str) -> str:
    # Runs once per distinct spelling: a drift report compares hundreds of thousands of labels.
    return NA_CATEGORY if is_na_label(label) else label.strip().casefold()


def _item_drift(
    item: Hashable, pairs: list[tuple[Any, Any]], only_a: int, only_b: int
) -> ItemDrift:
    same = sum(1 for x, y in pairs if x == y)
    kappa = cohen_kappa([x for x, _ in pairs], [y for _, y in pairs]).kappa if pairs else None
    return ItemDrift(
        item=item,
        n_compared=len(pairs),
        n_same=same,
        n_flipped=len(pairs) - same,
        agreement=same / len(pairs) if pairs else None,
        kappa=kappa,
        n_only_a=only_a,
        n_only_b=only_b,
    )


def label_flips(
    labels_a: Mapping[Key, Any] | Iterable[tuple[Any, ...]],
    labels_b: Mapping[Key, Any] | Iterable[tuple[Any, ...]],
) -> LabelFlips:
    """List the (unit, item) labels that changed from version A to B, and agreement per item.

    Each version's labels are a mapping (unit, item) -> label or rows (unit, item, label);
    None/NaN/blank means no label. A pair labelled by both versions is compared (after
    trimming, case folding, N/A spellings unified) and listed in ``flips`` when it differs;
    a pair labelled by one version only is counted, not listed. Per item and pooled: percent
    agreement and Cohen's kappa between the versions. Items keep first-appearance order.
    """
    a = _label_map(labels_a, "labels_a")
    b = _label_map(labels_b, "labels_b")
    flips: list[Flip] = []
    per_item: dict[Hashable, list[tuple[Any, Any]]] = {}
    only: dict[Hashable, list[int]] = {}
    for key in list(a) + [k for k in b if k not in a]:
        item = key[1]
        per_item.setdefault(item, [])
        only.setdefault(item, [0, 0])
        x, y = _norm(a.get(key)), _norm(b.get(key))
        if x is None and y is None:
            continue
        if y is None:
            only[item][0] += 1
        elif x is None:
            only[item][1] += 1
        else:
            per_item[item].append((x, y))
            if x != y:
                flips.append(Flip(key[0], item, a[key], b[key]))
    items = tuple(_item_drift(i, p, *only[i]) for i, p in per_item.items())
    pooled = _item_drift(
        None,
        [pair for p in per_item.values() for pair in p],
        sum(o[0] for o in only.values()),
        sum(o[1] for o in only.values()),
    )
    return LabelFlips(tuple(flips), items, pooled)


# --- the report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftReport:
    """Flips between versions, and each version's agreement with humans, per item and pooled.

    ``per_item`` maps each item to the paired difference (B - A) in agreement with the human
    consensus over the pairs both versions and the humans labelled; ``pooled`` does the same
    over all items, resampling conversations.
    """

    flips: LabelFlips
    per_item: Mapping[Hashable, PairedDifference]
    pooled: PairedDifference

    def as_dict(self) -> dict[str, object]:
        """Return a mapping for JSON; ``per_item`` becomes a list with an ``item`` key each."""
        return {
            "flips": self.flips.as_dict(),
            "per_item": [{"item": k, **v.as_dict()} for k, v in self.per_item.items()],
            "pooled": self.pooled.as_dict(),
        }


def drift_report(
    labels_a: Mapping[Key, Any] | Iterable[tuple[Any, ...]],
    labels_b: Mapping[Key, Any] | Iterable[tuple[Any, ...]],
    reference: Mapping[Key, Any] | Iterable[tuple[Any, ...]],
    *,
    n_resamples: int = 2000,
    seed: int | np.random.Generator | None = None,
    confidence: float = 0.95,
) -> DriftReport:
    """Compare two judge versions with each other and with the human consensus.

    ``reference`` holds the human consensus labels, keyed like the versions' labels. Agreement
    with humans is computed on the (unit, item) pairs where the reference and both versions
    have a label (pairs missing from a version are dropped and counted, so both versions are
    scored on the same pairs). Per item the bootstrap resamples conversations of that item;
    pooled, it resamples conversations with all their items (:func:`paired_bootstrap_difference`).
    One generator from ``seed`` serves the items in order and then the pooled figure.
    """
    a = _label_map(labels_a, "labels_a")
    b = _label_map(labels_b, "labels_b")
    ref = _label_map(reference, "reference")
    flips = label_flips(a, b)
    rng = make_rng(seed)
    rows: dict[Hashable, tuple[list[Any], list[Any], list[Any]]] = {}
    for (unit, item), label in ref.items():
        truth = _norm(label)
        if truth is None:
            continue
        units, a_ok, b_ok = rows.setdefault(item, ([], [], []))
        units.append(unit)
        for got, store in ((a.get((unit, item)), a_ok), (b.get((unit, item)), b_ok)):
            value = _norm(got)
            store.append(None if value is None else float(value == truth))
    per_item = {
        item: paired_bootstrap_difference(
            a_ok, b_ok, units=units, n_resamples=n_resamples, seed=rng, confidence=confidence
        )
        for item, (units, a_ok, b_ok) in rows.items()
    }
    all_units = [u for units, _, _ in rows.values() for u in units]
    all_a = [x for _, a_ok, _ in rows.values() for x in a_ok]
    all_b = [x for _, _, b_ok in rows.values() for x in b_ok]
    pooled = paired_bootstrap_difference(
        all_a, all_b, units=all_units, n_resamples=n_resamples, seed=rng, confidence=confidence
    )
    return DriftReport(flips, per_item, pooled)


# --- towards or away from the humans -------------------------------------------------------


@dataclass(frozen=True)
class FlipDirections:
    """How the flipped labels of one item (or all, ``item`` None) moved relative to the human consensus.

    ``towards``: B's label equals the consensus and A's did not; ``away``: A's equalled it and B's
    does not; ``other``: neither (both differ from the consensus, e.g. among three categories);
    ``no_reference``: the pair has no consensus label. ``net`` is towards - away.
    """

    item: Hashable
    n_flipped: int
    towards: int
    away: int
    other: int
    no_reference: int

    @property
    def net(self) -> int:
        return self.towards - self.away

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (``net`` included)."""
        return {**asdict(self), "net": self.net}


def flip_directions(
    flips: Iterable[Flip], reference: Mapping[Key, Any] | Iterable[tuple[Any, ...]]
) -> tuple[dict[Hashable, FlipDirections], FlipDirections]:
    """Count each item's flips that moved towards, away from, or neither way from the human consensus.

    Labels are compared as everywhere in this module (trimmed, case folded, N/A spellings one
    label). Returns the counts per item (first-appearance order) and pooled over items.
    """
    ref = _label_map(reference, "reference")
    counts: dict[Hashable, list[int]] = {}
    for flip in flips:
        row = counts.setdefault(flip.item, [0, 0, 0, 0, 0])  # flipped, towards, away, other, no reference
        row[0] += 1
        truth = _norm(ref.get((flip.unit, flip.item)))
        a, b = _norm(flip.label_a), _norm(flip.label_b)
        if truth is None:
            row[4] += 1
        elif b == truth and a != truth:
            row[1] += 1
        elif a == truth and b != truth:
            row[2] += 1
        else:
            row[3] += 1
    per_item = {item: FlipDirections(item, *row) for item, row in counts.items()}
    pooled = FlipDirections(None, *(sum(r[i] for r in counts.values()) for i in range(5)))
    return per_item, pooled


@dataclass(frozen=True)
class PairedKappaDifference:
    """Cohen's kappa of versions A and B with the humans on the same rows, and B - A with its interval."""

    kappa_a: float | None
    kappa_b: float | None
    difference: float | None
    interval: ConfidenceInterval
    n_units: int
    n_rows: int
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {"kappa_a": self.kappa_a, "kappa_b": self.kappa_b, "difference": self.difference,
                "interval": self.interval.as_dict(), "n_units": self.n_units, "n_rows": self.n_rows, "note": self.note}


def _kappa_of_sums(agree: np.ndarray, n: np.ndarray, version: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Return Cohen's kappa from summed counts: agreements, rows, and each side's category counts (NaN if undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        po = agree / n
        pe = (version * human).sum(axis=-1) / (n * n)
        kappa = (po - pe) / (1.0 - pe)
    return np.where((n > 0) & (pe < 1.0 - 1e-12), kappa, np.nan)


def paired_kappa_difference(
    reference: Sequence[Any],
    labels_a: Sequence[Any],
    labels_b: Sequence[Any],
    *,
    units: Sequence[Hashable],
    n_resamples: int = 2000,
    seed: int | np.random.Generator | None = None,
    confidence: float = 0.95,
) -> PairedKappaDifference:
    """Estimate the difference B - A in Cohen's kappa with the human consensus, with a paired cluster bootstrap CI.

    Row i holds the consensus label and both versions' labels of one (conversation, item) pair;
    rows where any of the three is missing are dropped, so both versions are scored on the same
    rows. Kappa is Cohen's (1960) with each side's own marginals, as :func:`stats.agreement.cohen_kappa`.
    The interval is the percentile bootstrap over ``units`` (conversations, each kept whole with
    both versions' rows: paired), each resample's kappas computed from resampled sums of
    per-conversation counts. A resample where either kappa is undefined (one category only) is
    left out and counted in the interval. No row: every figure None; one category only (Pe = 1):
    that kappa None. Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13.
    """
    if not len(reference) == len(labels_a) == len(labels_b) == len(units):
        raise StatsInputError("reference, labels_a, labels_b and units must have the same length")
    if n_resamples < 1:
        raise StatsInputError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise StatsInputError("confidence must lie strictly between 0 and 1")
    rows = [(u, _norm(h), _norm(x), _norm(y)) for u, h, x, y in zip(units, reference, labels_a, labels_b, strict=True)]
    rows = [r for r in rows if r[1] is not None and r[2] is not None and r[3] is not None]
    if not rows:
        empty = percentile_interval(np.array([np.nan]), confidence)
        return PairedKappaDifference(None, None, None, empty, 0, 0, "no row with the consensus and both versions")
    categories = {c: i for i, c in enumerate(sorted({str(v) for r in rows for v in r[1:]}))}
    codes = _codes([r[0] for r in rows])
    n_units, k = int(codes.max()) + 1, len(categories)
    # Per conversation: rows, A agrees, B agrees, then A's, B's and the humans' category counts.
    features = np.zeros((n_units, 3 + 3 * k))
    for code, (_, h, x, y) in zip(codes, rows, strict=True):
        hi, xi, yi = categories[str(h)], categories[str(x)], categories[str(y)]
        features[code, 0] += 1
        features[code, 1] += float(x == h)
        features[code, 2] += float(y == h)
        features[code, 3 + xi] += 1
        features[code, 3 + k + yi] += 1
        features[code, 3 + 2 * k + hi] += 1

    def kappas(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, human = sums[..., 0], sums[..., 3 + 2 * k : 3 + 3 * k]
        return (_kappa_of_sums(sums[..., 1], n, sums[..., 3 : 3 + k], human),
                _kappa_of_sums(sums[..., 2], n, sums[..., 3 + k : 3 + 2 * k], human))

    point_a, point_b = kappas(features.sum(axis=0)[None])
    ka, kb = float(point_a[0]), float(point_b[0])
    draws = []
    for weights in resample_weights(n_units, n_resamples, make_rng(seed)):
        a, b = kappas(weights @ features)
        draws.append(b - a)
    interval = percentile_interval(np.concatenate(draws), confidence)
    interval = ConfidenceInterval(interval.low, interval.high, interval.confidence, interval.n_resamples,
                                  interval.n_undefined, method="paired percentile bootstrap over units", note=interval.note)
    kappa_a, kappa_b = (None if np.isnan(ka) else ka), (None if np.isnan(kb) else kb)
    difference = None if kappa_a is None or kappa_b is None else kappa_b - kappa_a
    note = None if difference is not None else "kappa undefined for a version (one category only)"
    return PairedKappaDifference(kappa_a, kappa_b, difference, interval, n_units, len(rows), note)

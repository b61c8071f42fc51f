"""Percent agreement, Fleiss' kappa, Gwet's AC1 and Cohen's kappa (per pair and mean).

The multi-rater coefficients take a units x categories count table (or a
:class:`~stats.data.RatingTable`), so they tolerate missing ratings and a varying
number of raters per unit:

* percent agreement = Fleiss' P0 = mean over units with >= 2 ratings of
  P_u = sum_c n_uc (n_uc - 1) / (m_u (m_u - 1)), the share of agreeing rater pairs in unit u;
* chance proportions pi_c = mean over units with >= 1 rating of n_uc / m_u;
* Fleiss' kappa: Pe = sum_c pi_c^2 (Fleiss 1971);
* Gwet's AC1: Pe = sum_c pi_c (1 - pi_c) / (q - 1) (Gwet 2008, eq. for multiple raters).

With the same number of raters on every unit these are exactly the textbook formulas. With a
varying number they are the generalisation in Gwet (2014), Handbook of Inter-Rater Reliability,
4th ed., ch. 2 and the R package irrCAC (``fleiss.kappa.raw``, ``gwet.ac1.raw``): P0 over
units rated at least twice, pi_c over all rated units.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy import sparse

from .bootstrap import Batched
from .data import Label, RatingTable, as_counts, is_missing, sort_labels


@dataclass(frozen=True)
class PercentAgreement:
    """Mean share of agreeing rater pairs over units rated at least twice."""

    value: float | None
    n_units: int
    note: str | None = None


FLEISS_1971 = "fleiss_1971"
GWET_2014_VARYING_RATERS = "gwet_2014_varying_raters"
FLEISS_VARIANT_LABELS: dict[str, str] = {
    FLEISS_1971: "Fleiss (1971): the same number of raters on every unit",
    GWET_2014_VARYING_RATERS: (
        "Gwet (2014) generalisation for a varying number of raters per unit (as irrCAC): "
        "P0 over units rated at least twice, chance agreement over all rated units"
    ),
}


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' kappa with its observed (P0) and chance (Pe) agreement.

    ``variant`` names the estimator actually used: ``"fleiss_1971"`` when every rated unit
    has the same number of ratings, ``"gwet_2014_varying_raters"`` otherwise (None when
    nothing was rated); ``variant_label`` says the same in words. ``min_raters`` and
    ``max_raters`` count ratings over units rated at least twice.
    """

    kappa: float | None
    p0: float | None
    pe: float | None
    n_units: int
    min_raters: int
    max_raters: int
    note: str | None = None
    variant: str | None = None
    variant_label: str | None = None


@dataclass(frozen=True)
class GwetAC1:
    """Gwet's first-order agreement coefficient with Pa, Pe and the scale size q."""

    ac1: float | None
    pa: float | None
    pe: float | None
    n_categories: int
    n_units: int
    note: str | None = None


@dataclass(frozen=True)
class CohenKappa:
    """Cohen's kappa of two raters over the units both labelled."""

    kappa: float | None
    po: float | None
    pe: float | None
    n: int
    n_dropped: int = 0
    note: str | None = None


@dataclass(frozen=True)
class PairKappa:
    """Cohen's kappa of one rater pair."""

    rater_a: Hashable
    rater_b: Hashable
    kappa: float | None
    po: float | None
    pe: float | None
    n: int
    note: str | None = None


@dataclass(frozen=True)
class CohenSummary:
    """Cohen's kappa for every rater pair with a shared unit, and their mean."""

    pairs: tuple[PairKappa, ...]
    mean: float | None
    n_pairs_defined: int
    note: str | None = None


def _nan_to_none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _names(data: RatingTable | Any, q: int) -> tuple[Label, ...]:
    return data.categories if isinstance(data, RatingTable) else tuple(range(q))


def _unit_features(counts: np.ndarray) -> np.ndarray:
    m = counts.sum(axis=1)
    pairable = m >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        p_u = np.where(pairable, (counts * (counts - 1)).sum(axis=1) / (m * (m - 1)), 0.0)
        shares = counts / m[:, None]
    return np.column_stack([p_u, pairable.astype(float), np.ones(len(m)), shares])


def _p0_pi(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        p0 = np.where(sums[:, 1] > 0, sums[:, 0] / sums[:, 1], np.nan)
        pi = sums[:, 3:] / sums[:, 2:3]
    return p0, pi


def percent_agreement_batched(data: RatingTable | Any) -> Batched:
    """Return percent agreement as a function of unit weights (see :mod:`.bootstrap`)."""

    def finalize(sums: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_p0_pi(sums)[0],)

    return Batched(_unit_features(as_counts(data)), finalize)


def fleiss_batched(data: RatingTable | Any) -> Batched:
    """Return Fleiss' kappa (kappa, P0, Pe) as a function of unit weights."""

    def finalize(sums: np.ndarray) -> tuple[np.ndarray, ...]:
        p0, pi = _p0_pi(sums)
        pe = (pi**2).sum(axis=1)
        ok = ((pi > 0).sum(axis=1) >= 2) & ~np.isnan(p0)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(ok, (p0 - pe) / (1 - pe), np.nan)
        return kappa, p0, pe

    return Batched(_unit_features(as_counts(data)), finalize)


def gwet_batched(data: RatingTable | Any, n_categories: int | None = None) -> Batched:
    """Return Gwet's AC1 (AC1, Pa, Pe) as a function of unit weights."""
    counts = as_counts(data)
    q = counts.shape[1] if n_categories is None else n_categories

    def finalize(sums: np.ndarray) -> tuple[np.ndarray, ...]:
        pa, pi = _p0_pi(sums)
        if q < 2:
            nan = np.full(len(pa), np.nan)
            return nan, pa, nan
        pe = (pi * (1 - pi)).sum(axis=1) / (q - 1)
        ac1 = (pa - pe) / (1 - pe)  # pe <= 1/q < 1, so the ratio is always defined
        return ac1, pa, pe

    return Batched(_unit_features(counts), finalize)


def _pooled_note(counts: np.ndarray, names: Sequence[Label], coefficient: str) -> str | None:
    m = counts.sum(axis=1)
    if counts.shape[0] == 0:
        return f"no ratings: {coefficient} undefined"
    if not (m >= 2).any():
        return f"no unit has two or more ratings: {coefficient} undefined"
    used = np.flatnonzero(counts.sum(axis=0) > 0)
    if len(used) == 1 and coefficient != "Gwet's AC1":
        return f"only one category observed ({names[used[0]]!r}): {coefficient} undefined (Pe = 1)"
    return None


def percent_agreement(data: RatingTable | Any) -> PercentAgreement:
    """Compute percent agreement: the mean share of agreeing rater pairs per unit (Fleiss' P0).

    Units with fewer than two ratings carry no pair and are left out. Undefined (None, with a
    note) when no unit has two ratings. Reference: Fleiss (1971), Psychol. Bull. 76, eq. (2).
    """
    counts = as_counts(data)
    value = percent_agreement_batched(counts).estimate()[0]
    n = int((counts.sum(axis=1) >= 2).sum())
    note = None if n else "no unit has two or more ratings: percent agreement undefined"
    return PercentAgreement(_nan_to_none(value), n, note)


def fleiss_kappa(data: RatingTable | Any) -> FleissKappa:
    """Compute Fleiss' kappa, (P0 - Pe) / (1 - Pe), for any number of raters per unit.

    P0 is percent agreement over units rated at least twice; Pe = sum_c pi_c^2 with pi_c the
    mean share of category c per rated unit (Gwet 2014, ch. 2). With equal raters per unit this
    is Fleiss (1971). Undefined when no unit has two ratings or a single category is observed
    (Pe = 1); one rater therefore gives None. Input: units x categories counts or a table.

    The result's ``variant`` says which of the two was computed: ``"fleiss_1971"`` when every
    rated unit (at least one rating) has the same number of ratings, else
    ``"gwet_2014_varying_raters"`` -- a unit with a single rating among units rated three
    times makes it the generalisation, since that unit counts in pi_c but not in P0. None for
    no rating at all. Reference: Fleiss (1971), Psychol. Bull. 76, 378-382; Gwet (2014),
    Handbook of Inter-Rater Reliability, 4th ed., ch. 2; irrCAC ``fleiss.kappa.raw``.
    """
    counts = as_counts(data)
    kappa, p0, pe = fleiss_batched(counts).estimate()
    m = counts.sum(axis=1)
    pairable = m[m >= 2]
    variant = None
    if len(m):
        variant = FLEISS_1971 if m.min() == m.max() else GWET_2014_VARYING_RATERS
    return FleissKappa(
        kappa=_nan_to_none(kappa),
        p0=_nan_to_none(p0),
        pe=_nan_to_none(pe) if counts.shape[0] else None,
        n_units=len(pairable),
        min_raters=int(pairable.min()) if len(pairable) else 0,
        max_raters=int(pairable.max()) if len(pairable) else 0,
        note=_pooled_note(counts, _names(data, counts.shape[1]), "Fleiss' kappa"),
        variant=variant,
        variant_label=None if variant is None else FLEISS_VARIANT_LABELS[variant],
    )


def gwet_ac1(data: RatingTable | Any, n_categories: int | None = None) -> GwetAC1:
    """Compute Gwet's AC1, (Pa - Pe) / (1 - Pe) with Pe = sum_c pi_c (1 - pi_c) / (q - 1).

    ``n_categories`` (q) is the size of the rating scale; it defaults to the number of count
    columns, i.e. the observed or declared categories. AC1 stays defined when one category
    dominates (where kappa collapses) but needs q >= 2 and a unit rated twice. Pa and pi_c are
    as in :func:`fleiss_kappa`. Reference: Gwet (2008), Br. J. Math. Stat. Psychol. 61, 29-48;
    Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.
    """
    counts = as_counts(data)
    q = counts.shape[1] if n_categories is None else int(n_categories)
    ac1, pa, pe = gwet_batched(counts, q).estimate()
    note = _pooled_note(counts, _names(data, counts.shape[1]), "Gwet's AC1")
    if note is None and q < 2:
        note = "Gwet's AC1 needs a scale of at least two categories (declare it with `order`)"
    return GwetAC1(
        _nan_to_none(ac1),
        _nan_to_none(pa),
        _nan_to_none(pe),
        q,
        int((counts.sum(axis=1) >= 2).sum()),
        note,
    )


def _kappa_from_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # tables: B x q x q integer-valued counts, so n^2 == sum(row * col) is an exact test of Pe = 1.
    n = tables.sum(axis=(1, 2))
    agree = np.trace(tables, axis1=1, axis2=2)
    rc = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1)
    denominator = n * n - rc
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(denominator > 0, (n * agree - rc) / denominator, np.nan)
        po = np.where(n > 0, agree / n, np.nan)
        pe = np.where(n > 0, rc / (n * n), np.nan)
    return kappa, po, pe


def _kappa_note(table: np.ndarray, names: Sequence[Label]) -> str | None:
    n = table.sum()
    if n == 0:
        return "no unit labelled by both: Cohen's kappa undefined"
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    if n * n == (rows * cols).sum():
        label = names[int(np.argmax(rows))]
        return f"both raters used only {label!r}: Cohen's kappa undefined (Pe = 1)"
    return None


def cohen_kappa(
    a: Sequence[Label | None], b: Sequence[Label | None], labels: Sequence[Label] | None = None
) -> CohenKappa:
    """Compute Cohen's kappa (Po - Pe) / (1 - Pe) of two aligned label sequences.

    Positions where either label is missing (None, NaN, blank) are dropped and counted in
    ``n_dropped``. Pe = sum_c p_a(c) p_b(c) from each rater's own marginals (Cohen 1960,
    Educ. Psychol. Meas. 20, 37-46). Undefined (None + note) with no shared unit, or when both
    raters used one and the same category (Pe = 1). ``labels`` fixes the categories (optional).
    """
    if len(a) != len(b):
        raise ValueError("the two label sequences must have the same length")
    kept = [(x, y) for x, y in zip(a, b, strict=True) if not is_missing(x) and not is_missing(y)]
    names = tuple(labels) if labels is not None else sort_labels(v for p in kept for v in p)
    index = {c: i for i, c in enumerate(names)}
    table = np.zeros((len(names), len(names)))
    for x, y in kept:
        if x not in index or y not in index:
            raise ValueError(f"label {x if x not in index else y!r} not in labels")
        table[index[x], index[y]] += 1
    kappa, po, pe = (float(v[0]) for v in _kappa_from_tables(table[None]))
    return CohenKappa(
        _nan_to_none(kappa),
        _nan_to_none(po),
        _nan_to_none(pe),
        len(kept),
        len(a) - len(kept),
        _kappa_note(table, names),
    )


def _overlapping_pairs(codes: np.ndarray) -> list[tuple[int, int]]:
    rated = (codes >= 0).astype(np.int64)
    shared = rated.T @ rated
    return [(i, j) for i, j in combinations(range(codes.shape[1]), 2) if shared[i, j] > 0]


def _pair_features(
    codes: np.ndarray, q: int, pairs: Sequence[tuple[int, int]]
) -> sparse.csr_matrix:
    # One-hot (code_a, code_b) per unit and pair, sparse: a study with many rotating raters
    # has many pairs but each unit only touches the few pairs of its own raters.
    rows, cols = [], []
    for k, (i, j) in enumerate(pairs):
        both = np.flatnonzero((codes[:, i] >= 0) & (codes[:, j] >= 0))
        rows.append(both)
        cols.append(k * q * q + codes[both, i] * q + codes[both, j])
    row = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
    col = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    shape = (codes.shape[0], len(pairs) * q * q)
    return sparse.csr_matrix((np.ones(len(row)), (row, col)), shape=shape)


def cohen_mean_batched(table: RatingTable) -> Batched:
    """Return the mean pairwise Cohen's kappa as a function of unit weights."""
    q = len(table.categories)
    pairs = _overlapping_pairs(table.codes)

    def finalize(sums: np.ndarray) -> tuple[np.ndarray, ...]:
        if not pairs:
            return (np.full(sums.shape[0], np.nan),)
        tables = sums.reshape(sums.shape[0] * len(pairs), q, q)
        kappas = _kappa_from_tables(tables)[0].reshape(sums.shape[0], len(pairs))
        defined = ~np.isnan(kappas)
        n_defined = defined.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(n_defined > 0, np.where(defined, kappas, 0).sum(1) / n_defined, np.nan)
        return (mean,)

    return Batched(_pair_features(table.codes, q, pairs), finalize)


def pairwise_cohen(table: RatingTable) -> CohenSummary:
    """Compute Cohen's kappa for each rater pair that shares a unit, and their mean.

    Each pair uses the units both rated. The mean is the unweighted mean of the defined pair
    kappas (Light 1971, Psychol. Bull. 76, 365-377, extended to incomplete designs). Pairs
    that share no unit are not listed; undefined pairs (one shared category) are listed with
    None and left out of the mean. One rater gives no pair and a None mean.
    """
    q = len(table.categories)
    pairs = _overlapping_pairs(table.codes)
    features = _pair_features(table.codes, q, pairs)
    tables = np.asarray(features.sum(axis=0)).reshape(len(pairs), q, q)
    kappa, po, pe = _kappa_from_tables(tables) if pairs else (np.empty(0),) * 3
    results = tuple(
        PairKappa(
            table.raters[i],
            table.raters[j],
            _nan_to_none(kappa[k]),
            _nan_to_none(po[k]),
            _nan_to_none(pe[k]),
            int(tables[k].sum()),
            _kappa_note(tables[k], table.categories),
        )
        for k, (i, j) in enumerate(pairs)
    )
    defined = [p.kappa for p in results if p.kappa is not None]
    note = None
    if table.n_raters < 2:
        note = "fewer than two raters: no Cohen's kappa pair"
    elif not pairs:
        note = "no two raters share a unit: no Cohen's kappa pair"
    elif not defined:
        note = "Cohen's kappa undefined for every rater pair"
    elif len(defined) < len(results):
        note = f"mean Cohen's kappa over {len(defined)} of {len(results)} pairs (others undefined)"
    mean = float(np.mean(defined)) if defined else None
    return CohenSummary(results, mean, len(defined), note)

"""Krippendorff's alpha (nominal, ordinal, interval) from per-unit coincidences.

alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck, where o is the
coincidence matrix of pairable values (units with at least two values), n_c its margins and
n = sum_c n_c (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", Annenberg
School for Communication, sections C-E). Missing values and any number of coders per unit are
allowed; units with a single value are not pairable and drop out.

Metrics d_ck: nominal 1 for c != k; interval (v_c - v_k)^2; ordinal
(sum_{g between c and k} n_g - (n_c + n_k) / 2)^2, which depends on the margins and is
therefore recomputed for every bootstrap resample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .bootstrap import Batched
from .data import LEVELS, Level, RatingTable, StatsInputError, as_counts, unit_coincidences


@dataclass(frozen=True)
class KrippendorffAlpha:
    """Krippendorff's alpha at one level, with observed and expected disagreement."""

    alpha: float | None
    level: Level
    observed_disagreement: float | None
    expected_disagreement: float | None
    n_units: int
    n_values: int
    note: str | None = None


def _ordinal_delta(margins: np.ndarray) -> np.ndarray:
    # margins: B x q -> B x q x q ordinal distances.
    b, q = margins.shape
    cum = np.concatenate([np.zeros((b, 1)), np.cumsum(margins, axis=1)], axis=1)
    lo = np.minimum.outer(np.arange(q), np.arange(q))
    hi = np.maximum.outer(np.arange(q), np.arange(q))
    between = cum[:, hi + 1] - cum[:, lo]
    half = (margins[:, :, None] + margins[:, None, :]) / 2
    return (between - half) ** 2


def _fixed_delta(level: Level, q: int, values: np.ndarray | None) -> np.ndarray | None:
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "interval":
        if values is None or len(values) != q:
            raise StatsInputError("interval alpha needs one numeric value per category")
        v = np.asarray(values, dtype=float)
        return (v[:, None] - v[None, :]) ** 2
    return None


def alpha_batched(
    data: RatingTable | Any,
    level: Level = "nominal",
    values: Sequence[float] | None = None,
) -> Batched:
    """Return Krippendorff's alpha (alpha, D_o, D_e) as a function of unit weights."""
    if level not in LEVELS:
        raise StatsInputError(f"level must be one of {LEVELS}, not {level!r}")
    counts = as_counts(data)
    q = counts.shape[1]
    if values is None and isinstance(data, RatingTable) and data.values is not None:
        values = data.values
    delta = _fixed_delta(level, q, None if values is None else np.asarray(values, dtype=float))
    features = unit_coincidences(counts).reshape(counts.shape[0], q * q)

    def finalize(sums: np.ndarray) -> tuple[np.ndarray, ...]:
        o = sums.reshape(sums.shape[0], q, q)
        margins = o.sum(axis=2)
        n = margins.sum(axis=1)
        d = _ordinal_delta(margins) if delta is None else delta[None]
        observed = (o * d).sum(axis=(1, 2))
        expected = np.einsum("bc,bk,bck->b", margins, margins, d)
        ok = (margins > 0).sum(axis=1) >= 2
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = np.where(ok, 1 - (n - 1) * observed / expected, np.nan)
            d_o = np.where(n > 0, observed / n, np.nan)
            d_e = np.where(n > 1, expected / (n * (n - 1)), np.nan)
        return alpha, d_o, d_e

    return Batched(features, finalize)


def krippendorff_alpha(
    data: RatingTable | Any,
    level: Level = "nominal",
    values: Sequence[float] | None = None,
) -> KrippendorffAlpha:
    """Compute Krippendorff's alpha for nominal, ordinal or interval data.

    ``data`` is a units x categories count table (columns in scale order for ordinal data) or a
    :class:`RatingTable`. Interval alpha needs ``values`` (the numeric value of each column),
    taken from the table when it has them. Tolerates missing ratings and varying coders per
    unit. Undefined (None + note) with no pairable unit (one rater, one rating per unit, all
    missing) or a single category among pairable values (D_e = 0). Reference: Krippendorff
    (2011), "Computing Krippendorff's Alpha-Reliability"; Hayes & Krippendorff (2007),
    Communication Methods and Measures 1, 77-89.
    """
    batched = alpha_batched(data, level, values)
    alpha, d_o, d_e = batched.estimate()
    counts = as_counts(data)
    pairable = counts[counts.sum(axis=1) >= 2]
    n_values = int(pairable.sum())
    note = None
    if counts.shape[0] == 0:
        note = "no ratings: Krippendorff's alpha undefined"
    elif pairable.shape[0] == 0:
        note = "no unit has two or more ratings: Krippendorff's alpha undefined"
    elif np.isnan(alpha):
        used = np.flatnonzero(pairable.sum(axis=0) > 0)
        name = data.categories[used[0]] if isinstance(data, RatingTable) else int(used[0])
        note = f"only one category among paired ratings ({name!r}): alpha undefined (D_e = 0)"
    return KrippendorffAlpha(
        alpha=None if np.isnan(alpha) else alpha,
        level=level,
        observed_disagreement=None if np.isnan(d_o) else d_o,
        expected_disagreement=None if np.isnan(d_e) else d_e,
        n_units=int(pairable.shape[0]),
        n_values=n_values,
        note=note,
    )

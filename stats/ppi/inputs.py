"""Input checks for the PPI estimators: numbers with NaN for missing, probabilities, samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from ..data import StatsInputError, is_missing

__all__ = [
    "Sample",
    "Values",
    "as_scores",
    "check_confidence",
    "check_inclusion_prob",
    "kish_size",
    "make_sample",
    "t_value",
    "z_value",
]

Values = Sequence[Any] | np.ndarray


def as_scores(values: Values, name: str) -> np.ndarray:
    """Return a 1-D float array, NaN for missing entries; reject non-numbers and infinities."""
    if isinstance(values, str | bytes):
        raise StatsInputError(f"{name} must be a sequence of numbers, not a string")
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        out = values.astype(float)
    else:
        try:
            out = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            out = np.array([_one_score(v, name, i) for i, v in enumerate(values)], dtype=float)
    if out.ndim != 1:
        raise StatsInputError(f"{name} must be one-dimensional (one score per conversation)")
    if np.isinf(out).any():
        raise StatsInputError(f"{name} holds an infinite value")
    return out


def _one_score(value: Any, name: str, index: int) -> float:
    if is_missing(value):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise StatsInputError(f"{name}[{index}] is not a number: {value!r}") from None


def check_inclusion_prob(inclusion_prob: Values, n: int, which: str = "human-rated") -> np.ndarray:
    """Return inclusion probabilities as floats after checking length and range (0, 1]."""
    name = "inclusion_prob" if which == "human-rated" else "unlabeled_inclusion_prob"
    pi = as_scores(inclusion_prob, name)
    if pi.size != n:
        raise StatsInputError(f"{name} has {pi.size} entries for {n} {which} conversations")
    if np.isnan(pi).any():
        raise StatsInputError(
            "inclusion_prob has a missing value: every rated conversation needs one"
        )
    if which != "human-rated":  # an unrated conversation may have had no chance of being rated (weight 1)
        if (pi < 0).any() or (pi > 1).any():
            raise StatsInputError("inclusion probabilities of the unrated conversations must lie in [0, 1)")
    elif (pi <= 0).any() or (pi > 1).any():
        raise StatsInputError("inclusion probabilities must lie in (0, 1]")
    return pi


def check_confidence(confidence: float) -> float:
    """Return ``confidence`` after checking 0 < confidence < 1."""
    if not 0 < confidence < 1:
        raise StatsInputError("confidence must lie strictly between 0 and 1")
    return float(confidence)


def z_value(confidence: float) -> float:
    """Return the two-sided standard normal quantile z_{(1+confidence)/2}."""
    return NormalDist().inv_cdf((1 + confidence) / 2)


def t_value(confidence: float, n: float) -> float:
    """Return Student's two-sided quantile t_{n-1, (1+confidence)/2} (n: the effective sample size)."""
    return float(scipy_stats.t.ppf((1 + confidence) / 2, n - 1))


def kish_size(weights: np.ndarray) -> float:
    """Return Kish's effective sample size (Σ w)² / Σ w² (n with equal weights; Kish, Survey Sampling, 1965, sec. 11.7)."""
    return float(weights.sum() ** 2 / (weights @ weights))


@dataclass(frozen=True, eq=False)
class Sample:
    """Cleaned data: human (n x k) and judge scores on the rated and the unrated conversations.

    ``pi`` are the rated conversations' inclusion probabilities and ``pi_unlabeled`` the
    unrated ones' (n / (n + m) for all when no plan was given); ``weighted`` tells whether
    probabilities were given for the rated ones, ``weighted_unlabeled`` for the unrated ones.
    """

    y: np.ndarray
    f_labeled: np.ndarray
    f_unlabeled: np.ndarray
    pi: np.ndarray
    weighted: bool
    n_dropped_labeled: int
    n_dropped_unlabeled: int
    pi_unlabeled: np.ndarray | None = None
    weighted_unlabeled: bool = False

    @property
    def n(self) -> int:
        """Return the number of rated conversations kept."""
        return self.y.shape[0]

    @property
    def m(self) -> int:
        """Return the number of unrated conversations kept."""
        return self.f_unlabeled.shape[0]


def make_sample(
    y: np.ndarray,
    f_labeled: np.ndarray,
    f_unlabeled: np.ndarray,
    inclusion_prob: Values | None,
    unlabeled_inclusion_prob: Values | None = None,
) -> Sample:
    """Align and clean the columns (n x k, n x k, m x k): drop rows with a missing score.

    Fewer than 2 rated conversations is not an error here: the estimators then say why no
    interval can be given, and the judges-only estimate is still computed.
    """
    if y.shape != f_labeled.shape:
        raise StatsInputError(
            f"human scores ({y.shape[0]}) and judge scores on the rated conversations "
            f"({f_labeled.shape[0]}) must have the same length"
        )
    pi = None if inclusion_prob is None else check_inclusion_prob(inclusion_prob, y.shape[0])
    pi_u = None
    if unlabeled_inclusion_prob is not None:
        pi_u = check_inclusion_prob(unlabeled_inclusion_prob, f_unlabeled.shape[0], "unrated")
        if (pi_u >= 1).any():
            raise StatsInputError(
                "an unrated conversation has inclusion probability 1: a plan that was sure to "
                "pick it would have had it rated"
            )
    keep = ~(np.isnan(y).any(axis=1) | np.isnan(f_labeled).any(axis=1))
    keep_u = ~np.isnan(f_unlabeled).any(axis=1)
    y, f_labeled, f_unlabeled = y[keep], f_labeled[keep], f_unlabeled[keep_u]
    n, m = y.shape[0], f_unlabeled.shape[0]
    share = n / (n + m) if n + m else 1.0
    return Sample(
        y=y,
        f_labeled=f_labeled,
        f_unlabeled=f_unlabeled,
        pi=np.full(n, share) if pi is None else pi[keep],
        weighted=pi is not None,
        n_dropped_labeled=int((~keep).sum()),
        n_dropped_unlabeled=int((~keep_u).sum()),
        pi_unlabeled=np.full(m, share) if pi_u is None else pi_u[keep_u],
        weighted_unlabeled=pi_u is not None,
    )

"""Statistics as functions of unit weights, and the vectorised unit bootstrap.

Every coefficient in this package is a function of sums over units of per-unit quantities
(counts, pair agreements, coincidences). A :class:`Batched` statistic holds those per-unit
``features`` (units x k) and a ``finalize`` that turns weighted sums (B x k) into B values.
The point estimate uses weight 1 for every unit; a bootstrap resample uses how many times
each unit was drawn. One matrix product ``W @ features`` thus evaluates every resample at once,
and the estimate and its resamples go through the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# Undefined resamples are NaN inside this module only; the public results say None plus a note.
Finalizer = Callable[[np.ndarray], tuple[np.ndarray, ...]]

_CHUNK_CELLS = 4_000_000  # weights drawn per chunk (resamples x units), bounds peak memory


@dataclass(frozen=True, eq=False)
class Batched:
    """A statistic as ``finalize(weights @ features)``; the first output is the statistic.

    ``features`` is a dense array or a scipy sparse matrix with one row per unit.
    """

    features: Any
    finalize: Finalizer

    def estimate(self) -> tuple[float, ...]:
        """Evaluate at unit weights 1 (the point estimate); NaN where undefined."""
        sums = np.asarray(np.ones((1, self.features.shape[0])) @ self.features)
        return tuple(float(x[0]) for x in self.finalize(sums))


@dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile bootstrap interval over units, with the count of undefined resamples."""

    low: float | None
    high: float | None
    confidence: float
    n_resamples: int
    n_undefined: int
    method: str = "percentile bootstrap over units"
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "method": self.method,
            "note": self.note,
        }


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Return a numpy Generator for a seed (or pass a Generator through)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def resample_weights(
    n_units: int,
    n_resamples: int,
    rng: np.random.Generator,
    *,
    chunk_size: int | None = None,
) -> Iterator[np.ndarray]:
    """Yield chunks of bootstrap weights: how often each unit was drawn (rows sum to n_units).

    Each resample draws ``n_units`` units uniformly with replacement (Efron's nonparametric
    bootstrap). Chunks bound memory for large studies; the draws depend only on the
    generator state, ``n_units``, ``n_resamples`` and the chunk size.
    """
    if n_units <= 0:
        raise ValueError("cannot resample zero units")
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_CELLS // n_units)
    done = 0
    while done < n_resamples:
        b = min(chunk_size, n_resamples - done)
        draws = rng.integers(0, n_units, size=(b, n_units))
        draws += (np.arange(b) * n_units)[:, None]
        weights = np.bincount(draws.ravel(), minlength=b * n_units).reshape(b, n_units)
        yield weights.astype(float)
        done += b


def bootstrap(
    statistics: Mapping[str, Batched],
    *,
    n_resamples: int,
    seed: int | np.random.Generator | None,
    chunk_size: int | None = None,
) -> dict[str, np.ndarray]:
    """Evaluate several statistics on the same unit resamples; NaN marks undefined values.

    All statistics must share the units (rows of their features). Returns, per statistic, an
    array of ``n_resamples`` values.
    """
    if not statistics:
        return {}
    names = list(statistics)
    n_units = statistics[names[0]].features.shape[0]
    if any(statistics[n].features.shape[0] != n_units for n in names):
        raise ValueError("statistics must be computed over the same units")
    out: dict[str, list[np.ndarray]] = {n: [] for n in names}
    rng = make_rng(seed)
    for weights in resample_weights(n_units, n_resamples, rng, chunk_size=chunk_size):
        for name in names:
            sums = np.asarray(weights @ statistics[name].features)
            out[name].append(statistics[name].finalize(sums)[0])
    return {n: np.concatenate(v) if v else np.empty(0) for n, v in out.items()}


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> ConfidenceInterval:
    """Return the percentile interval of bootstrap values, ignoring undefined (NaN) ones.

    The bounds are the (1 - confidence)/2 and (1 + confidence)/2 quantiles (linear
    interpolation) of the defined resampled values (Efron & Tibshirani 1993, ch. 13). With no
    defined value, the bounds are None and the note says so.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    values = np.asarray(values, dtype=float)
    defined = values[~np.isnan(values)]
    n_undefined = int(values.size - defined.size)
    if defined.size == 0:
        note = (
            "no bootstrap resample gave a defined value"
            if values.size
            else "no bootstrap resamples were drawn"
        )
        return ConfidenceInterval(None, None, confidence, int(values.size), n_undefined, note=note)
    tail = (1 - confidence) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    note = None
    if n_undefined:
        note = (
            f"{n_undefined} of {values.size} resamples were undefined and left out of the interval"
        )
    return ConfidenceInterval(
        float(low), float(high), confidence, int(values.size), n_undefined, note=note
    )


def bootstrap_intervals(
    statistics: Mapping[str, Batched],
    *,
    n_resamples: int,
    seed: int | np.random.Generator | None,
    confidence: float = 0.95,
) -> dict[str, ConfidenceInterval]:
    """Return a percentile confidence interval per statistic from shared unit resamples.

    Units are resampled with replacement ``n_resamples`` times from a seeded numpy Generator.
    With a single unit every resample equals the estimate (the interval is a point).
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    draws = bootstrap(statistics, n_resamples=n_resamples, seed=seed)
    return {name: percentile_interval(v, confidence) for name, v in draws.items()}

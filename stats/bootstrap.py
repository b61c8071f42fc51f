"""Statistics as functions of unit weights, and the vectorised unit bootstrap.

Every coefficient in this package is a function of sums over units of per-unit quantities
(counts, pair agreements, coincidences). A :class:`Batched` statistic holds those per-unit
``features`` (units x k) and a ``finalize`` that turns weighted sums (B x k) into B values.
The point estimate uses weight 1 for every unit; a bootstrap resample uses how many times
each unit was drawn. One matrix product ``W @ features`` thus evaluates every resample at once,
and the estimate and its resamples go through the same code.

A cluster bootstrap (all units of a drawn cluster come together, e.g. every item of a drawn
conversation) is the same computation one level up: drawing a cluster k times gives each of
its units weight k, so ``W_units @ features == W_clusters @ (features summed per cluster)``.
The features are summed per cluster once, and resamples draw clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import sparse

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


UNITS_METHOD = "percentile bootstrap over units"
CLUSTERS_METHOD = "percentile bootstrap over clusters (all units of a drawn cluster together)"


@dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile bootstrap interval, with the count of undefined resamples.

    ``n_undefined`` counts resamples where the coefficient was undefined (e.g. kappa when a
    resample holds a single category, or no unit rated twice); they are left out of the
    interval. :attr:`percent_undefined` gives them as a percentage of ``n_resamples``.
    ``method`` says what was resampled (units, or whole clusters of units).
    """

    low: float | None
    high: float | None
    confidence: float
    n_resamples: int
    n_undefined: int
    method: str = UNITS_METHOD
    note: str | None = None

    @property
    def percent_undefined(self) -> float | None:
        """Return the percentage (0-100) of resamples where the coefficient was undefined."""
        return 100.0 * self.n_undefined / self.n_resamples if self.n_resamples else None

    @property
    def width(self) -> float | None:
        """Return high - low, or None when the interval is undefined."""
        if self.low is None or self.high is None:
            return None
        return self.high - self.low

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "low": self.low,
            "high": self.high,
            "width": self.width,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "percent_undefined": self.percent_undefined,
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


def cluster_codes(clusters: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    """Return each unit's cluster index (clusters numbered in order of first appearance)."""
    index: dict[Hashable, int] = {}
    codes = np.fromiter(
        (index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(clusters)
    )
    return codes, len(index)


def sum_by_cluster(features: Any, codes: np.ndarray, n_clusters: int) -> Any:
    """Sum the rows of ``features`` (dense or sparse) per cluster: n_clusters x k."""
    n_units = features.shape[0]
    member = sparse.csr_matrix(
        (np.ones(n_units), (codes, np.arange(n_units))), shape=(n_clusters, n_units)
    )
    return member @ features


def bootstrap(
    statistics: Mapping[str, Batched],
    *,
    n_resamples: int,
    seed: int | np.random.Generator | None,
    chunk_size: int | None = None,
    clusters: Sequence[Hashable] | None = None,
) -> dict[str, np.ndarray]:
    """Evaluate several statistics on the same resamples; NaN marks undefined values.

    All statistics must share the units (rows of their features). Without ``clusters`` each
    resample draws units with replacement (Efron's nonparametric bootstrap). With
    ``clusters`` (one cluster label per unit, e.g. the conversation of each (conversation,
    item) unit) each resample draws as many clusters as there are, with replacement, and a
    drawn cluster brings all its units (the cluster bootstrap: Davison & Hinkley 1997,
    Bootstrap Methods and their Application, section 3.8; Field & Welsh 2007, JRSS B 69,
    369-390). When every cluster holds one unit, in unit order, the draws are exactly those
    of the unit bootstrap. Returns, per statistic, an array of ``n_resamples`` values.
    """
    if not statistics:
        return {}
    names = list(statistics)
    n_units = statistics[names[0]].features.shape[0]
    if any(statistics[n].features.shape[0] != n_units for n in names):
        raise ValueError("statistics must be computed over the same units")
    features = {n: statistics[n].features for n in names}
    n_draw = n_units
    if clusters is not None:
        if len(clusters) != n_units:
            raise ValueError("clusters must give one cluster per unit")
        codes, n_draw = cluster_codes(clusters)
        if n_draw < n_units:  # otherwise every cluster is one unit, in unit order
            features = {n: sum_by_cluster(f, codes, n_draw) for n, f in features.items()}
    out: dict[str, list[np.ndarray]] = {n: [] for n in names}
    rng = make_rng(seed)
    for weights in resample_weights(n_draw, n_resamples, rng, chunk_size=chunk_size):
        for name in names:
            sums = np.asarray(weights @ features[name])
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
            f"{n_undefined} of {values.size} resamples ({100 * n_undefined / values.size:.1f}%) "
            "were undefined and left out of the interval"
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
    clusters: Sequence[Hashable] | None = None,
) -> dict[str, ConfidenceInterval]:
    """Return a percentile confidence interval per statistic from shared resamples.

    Units (or, with ``clusters``, whole clusters of units: see :func:`bootstrap`) are
    resampled with replacement ``n_resamples`` times from a seeded numpy Generator. With a
    single unit (cluster) every resample equals the estimate (the interval is a point).
    Undefined resamples are counted in ``n_undefined`` / ``percent_undefined`` and left out.
    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13.
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    draws = bootstrap(statistics, n_resamples=n_resamples, seed=seed, clusters=clusters)
    method = UNITS_METHOD if clusters is None else CLUSTERS_METHOD
    out = {name: percentile_interval(v, confidence) for name, v in draws.items()}
    if method != UNITS_METHOD:
        out = {name: replace(ci, method=method) for name, ci in out.items()}
    return out

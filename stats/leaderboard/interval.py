"""The small-sample t interval from a cluster bootstrap's standard error, and the test it inverts.

With G clusters the cluster bootstrap's spread is that of the plug-in distribution: it is too
narrow by about sqrt((G - 1)/G) and its quantiles are normal ones where Student's t_{G-1}
belongs (Hesterberg 2015; Cameron & Miller 2015, sec. VI, with few clusters). The interval widens
both: estimate ± t_{df, (1 + confidence)/2} · SE with

    SE² = Σ_j G_j/(G_j - 1) · s_j²

over the independent samples j (one for a paired comparison or one chatbot's score; each
chatbot for an unpaired comparison), s_j² the variance (divisor B - 1) of sample j's defined
resampled values and G_j its number of clusters; df = G - 1 for one sample, and the
Welch–Satterthwaite value (Σ v_j)² / Σ v_j²/(G_j - 1), v_j = G_j/(G_j - 1) · s_j², for two
(Satterthwaite 1946; Welch 1947). The two-sided p-value of "no difference" is
2 P(T_df >= |estimate| / SE): below 1 - confidence exactly when the interval leaves 0 out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

__all__ = ["SmallSampleInterval", "small_sample_t_interval", "t_p_value"]


@dataclass(frozen=True)
class SmallSampleInterval:
    """A small-sample t interval with its p-value, standard error and degrees of freedom.

    ``low``, ``high``, ``std_error``, ``df`` and ``p_value`` are None when no resample of some
    sample is defined (or the estimate is not). ``n_undefined`` counts the resamples left out
    (undefined in any sample), ``note`` says how many.
    """

    low: float | None
    high: float | None
    std_error: float | None
    df: float | None
    p_value: float | None
    n_resamples: int
    n_undefined: int
    note: str | None = None


def t_p_value(estimate: float, std_error: float, df: float) -> float:
    """Return the two-sided p-value 2 P(T_df >= |estimate| / SE) of "the true value is 0".

    Student's t with ``df`` degrees of freedom (df > 0). With SE = 0 (every resample the same
    value) the p-value is 1 when the estimate is 0 and 0 otherwise. The test inverts
    :func:`small_sample_t_interval`: p < 1 - confidence exactly when the interval leaves 0 out.
    """
    if not df > 0:
        raise ValueError("df must be positive")
    if std_error == 0:
        return 1.0 if estimate == 0 else 0.0
    return float(min(1.0, 2 * scipy_stats.t.sf(abs(estimate) / std_error, df)))


def small_sample_t_interval(
    estimate: float, samples: Sequence[tuple[np.ndarray, int]], confidence: float = 0.95
) -> SmallSampleInterval:
    """Return the small-sample t interval of a cluster bootstrap (module docstring: the formula).

    ``samples`` holds, per independent sample, its B resampled values (NaN: undefined) and its
    number of clusters G_j (at least 2): one sample for a paired difference or a chatbot's own
    score, two for an unpaired difference (each chatbot's clusters drawn on their own), in the
    same resample order. A resample undefined in any sample is left out of every sample and
    counted. References: Hesterberg, What teachers should know about the bootstrap, The
    American Statistician 69 (2015), 371-386 (a bootstrap interval is too narrow by
    sqrt((n - 1)/n) and z where t_{n-1} belongs); Cameron & Miller, A practitioner's guide to
    cluster-robust inference, J. Human Resources 50 (2015), 317-372, sec. VI (with few clusters:
    the G/(G - 1) factor and t_{G-1} critical values); Welch, Biometrika 34 (1947), 28-35 (two
    samples).

    Edge cases: with fewer than two defined resamples, or an undefined estimate, the bounds and
    p-value are None; when every defined resample has the same value SE is 0 and the interval
    is the point (the caller says so in words).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    if not samples:
        raise ValueError("at least one sample of resampled values is needed")
    draws = [np.asarray(values, dtype=float) for values, _ in samples]
    clusters = [int(g) for _, g in samples]
    if any(g < 2 for g in clusters):
        raise ValueError("every sample needs at least two clusters")
    if len({d.size for d in draws}) != 1:
        raise ValueError("every sample needs the same number of resamples")
    n_resamples = int(draws[0].size)
    defined = np.ones(n_resamples, dtype=bool)
    for d in draws:
        defined &= ~np.isnan(d)
    n_undefined = int(n_resamples - defined.sum())
    note = None
    if n_undefined and n_resamples:
        note = (f"{n_undefined} of {n_resamples} resamples ({100 * n_undefined / n_resamples:.1f}%) were undefined "
                "and left out of the interval")
    if not np.isfinite(estimate) or defined.sum() < 2:
        note = note or "fewer than two bootstrap resamples gave a defined value"
        return SmallSampleInterval(None, None, None, None, None, n_resamples, n_undefined, note)
    parts = [g / (g - 1) * float(np.var(d[defined], ddof=1)) for d, g in zip(draws, clusters, strict=True)]
    variance = sum(parts)
    if len(parts) == 1:
        df = float(clusters[0] - 1)
    elif variance == 0:
        df = float(min(clusters) - 1)
    else:
        df = variance**2 / sum(v**2 / (g - 1) for v, g in zip(parts, clusters, strict=True))
    se = variance**0.5
    half = float(scipy_stats.t.ppf((1 + confidence) / 2, df)) * se
    return SmallSampleInterval(
        float(estimate - half), float(estimate + half), se, df, t_p_value(float(estimate), se, df), n_resamples,
        n_undefined, note,
    )

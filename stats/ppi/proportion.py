"""The humans-only interval of a yes/no proportion: Wilson's score interval, with an effective sample size under a plan.

Why. The humans-only estimate of a yes/no score (a mean of 0/1 answers, or an item's yes-rate
over its applicable conversations) is a proportion p̂ of the rated conversations. On a few tens
of answers p̂ lives on a coarse lattice and the symmetric interval p̂ ± t·SE covers less than
stated: 0.932 for a stated 0.95 at n = 30 (bench/ppi_coverage.py, "biased_judge"), and 0.934
for a Hájek-weighted proportion under the oversampling plan ("oversampled").

**Wilson score interval** (Wilson, "Probable inference, the law of succession, and statistical
inference", JASA 22:209-212, 1927; the interval Brown, Cai & DasGupta, Statist. Sci. 16:101-133,
2001, recommend for small n). It inverts the score test |p̂ - p| <= z √(p(1 - p)/n)::

    (p̂ + z²/(2n) ± z √(p̂(1 - p̂)/n + z²/(4n²))) / (1 + z²/n),     z = z_{(1+c)/2}

exactly statsmodels' ``proportion_confint(count, nobs, alpha, method="wilson")``. It is not
symmetric around p̂ (it leans towards 1/2) and stays inside [0, 1].

**Under a sampling plan** (unequal inclusion probabilities π) p̂ is the Hájek proportion
Σ w y / Σ w over the conversations in the proportion's denominator (w = 1/π), and n is replaced
by the effective sample size of Korn & Graubard ("Confidence intervals for proportions with
small expected number of positive counts estimated from survey data", Survey Methodology
24:193-201, 1998): n over the estimated design effect, i.e. ::

    n* = p̂(1 - p̂) / v̂,     v̂ = Σ w̃_i² (y_i - p̂)²,  w̃ = w / Σ w

with v̂ the Taylor-linearised variance of the Hájek proportion (the engine's, ddof 0). Wilson's
interval with this n* is the one Franco, Little, Louis & Slud ("Comparative study of confidence
intervals for proportions in complex sample surveys", J. Surv. Stat. Methodol. 7:334-364, 2019)
recommend for complex samples. With equal weights v̂ = p̂(1 - p̂)/n, so n* = n and the interval
is Wilson's own. n* is capped at the number of conversations in the denominator: a plan may
make the proportion more precise than simple random sampling would (a design effect below 1),
but the interval never counts more answers than were given. Korn & Graubard's degrees-of-freedom
factor (t_{n-1}/t_{df})² is 1 here: the engine treats every plan as Poisson sampling, with no
strata or clusters, so df = n - 1.

Edge cases: the engine asks for this interval only when p̂ lies strictly between 0 and 1 (with
every answer the same it gives no interval and says why), so v̂ > 0 and at least one yes and one
no are counted. Any other target (an AMHART score that is not 0 or 1 per conversation, a VERA-MH
score) keeps the small-sample t interval of :mod:`.engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import StatsInputError
from .inputs import z_value

__all__ = ["Proportion", "proportion_of", "wilson_interval"]

RELATIVE = 1e-9  # n* within this of the count is the count (equal weights, up to rounding)


@dataclass(frozen=True)
class Proportion:
    """A humans-only proportion: its estimate, the n its Wilson interval uses, and its bounds."""

    estimate: float
    n: float  # the effective sample size n* (the count itself with equal weights)
    counted: int  # rated conversations in the denominator
    low: float
    high: float
    weighted: bool


def wilson_interval(p: float, n: float, confidence: float) -> tuple[float, float]:
    """Return Wilson's score interval for a proportion ``p`` observed on ``n`` (possibly effective) answers.

    Equals statsmodels' ``proportion_confint(p * n, n, 1 - confidence, method="wilson")``.
    """
    if not 0 <= p <= 1:
        raise StatsInputError(f"a proportion must lie in [0, 1], not {p!r}")
    if not n > 0:
        raise StatsInputError(f"a Wilson interval needs a positive number of answers, not {n!r}")
    z = z_value(confidence)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * float(np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)))
    return max(0.0, centre - half), min(1.0, centre + half)


def _zero_one(x: np.ndarray) -> bool:
    return bool(np.isin(x, (0.0, 1.0)).all())


def _parts(y: np.ndarray, target: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Return (yes, counted) per rated conversation when the target is a proportion, else None.

    A "mean" of one 0/1 column is a proportion of every rated conversation; a "ratio" of two
    0/1 columns with yes <= applicable (an item's yes-rate, N/A leaving the denominator) is a
    proportion of the applicable ones.
    """
    if target == "mean" and y.ndim == 2 and y.shape[1] == 1 and _zero_one(y):
        return y[:, 0], np.ones(y.shape[0], dtype=bool)
    if target == "ratio" and y.ndim == 2 and y.shape[1] == 2 and _zero_one(y) and bool((y[:, 0] <= y[:, 1]).all()):
        return y[:, 0], y[:, 1] == 1
    return None


def proportion_of(y: np.ndarray, pi: np.ndarray, weighted: bool, target: str, confidence: float) -> Proportion | None:
    """Return the humans-only proportion and its Wilson interval, or None when the target is not a proportion.

    ``y`` are the rated conversations' human scores (n x k, no missing values), ``pi`` their
    inclusion probabilities, ``weighted`` whether a plan gave them, ``target`` the engine's
    target name ("mean" or "ratio"). Also None when the counted answers are all the same (the
    engine gives no interval then).
    """
    parts = _parts(y, target)
    if parts is None:
        return None
    yes, counted = parts
    answers, w = yes[counted], 1 / pi[counted]
    if answers.size < 2 or float(np.ptp(answers)) == 0:
        return None
    shares = w / w.sum()
    p = float(shares @ answers)
    n = float(answers.size)
    if weighted:
        variance = float((shares**2) @ (answers - p) ** 2)
        n_star = p * (1 - p) / variance
        n = n if n_star >= n * (1 - RELATIVE) else n_star
    low, high = wilson_interval(p, n, confidence)
    return Proportion(p, n, int(answers.size), low, high, weighted)

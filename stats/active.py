"""Active statistical inference: which conversations clinicians rate next, and unbiased scores.

Zrnic & Candès, "Active Statistical Inference", ICML 2024 (arXiv:2403.03208), with the
authors' code (github.com/tijana-zrnic/active-inference; ``ppi_py`` has no active-inference
function, so the tests check these functions against the formulas of that code).

**Setting.** A judge run labelled N conversations. Conversation i has the judges' score
Ŷ_i = f(X_i) (its AMHART score, or its VERA-MH label counts) and an uncertainty u_i >= 0 (how
much the judges disagreed on it). Clinicians rate only a budget of them. Each conversation is
*visited* once, in a random order, and is then rated with probability π_i, independently of
the others (ξ_i ~ Bernoulli(π_i): Poisson sampling, the paper's design; the number rated is
random, its mean is Σ π, and the budget holds in expectation, as in the paper).

**Sampling rule** (:func:`active_probabilities`). The paper's uncertainty-proportional rule
mixed with uniform sampling, π^(τ)(x) = (1 - τ) η u(x) + τ n_b/n with η = (n_b/n) / mean(u),
clipped to [0, 1], as the authors' notebooks compute it. For the m conversations a batch
visits, with b ratings expected::

    π_i = min(1, c · [(1 - τ) u_i / ū + τ] · b / m)        ū = mean of u over the batch

c = 1 is the authors' rule exactly. When it would put some π above 1, the clip would lose part
of the budget; c > 1 then gives it to the others, so Σ π = b always. τ is the **floor**:
every conversation has π_i >= τ b/m > 0, which the estimator needs (a conversation that
cannot be rated cannot be corrected) and which bounds the weights 1/π.

**Estimator** (:func:`active_estimate`): the paper's active inference estimator of a mean::

    Δ_i = Ŷ_i + (Y_i - Ŷ_i) ξ_i / π_i        θ̂ = (1/n) Σ Δ_i  over the n visited conversations
    σ̂² = (1/n) Σ (Δ_i - θ̂)²                 interval θ̂ ± z_{(1+c)/2} σ̂ / √n

(ddof 0: numpy's ``std``, as the authors' code). E[Δ_i | X_i] = E[Y_i | X_i] whatever f and
π are, so θ̂ is unbiased for the mean human score, and Var(Δ) = Var(Y) + E[(Y - Ŷ)²(1/π - 1)]:
rating more often the conversations where the judges err (large (Y - Ŷ)²) is what narrows the
interval against uniform sampling at the same budget. A score that is a smooth function g of
means (the VERA-MH score, from Best Practice, High Potential for Harm and relevant label
counts) plugs the estimated means into g; its interval is the delta method's, the same
formula on the linearised increments ∇g(θ̂) · Δ_i, as for PPI (:mod:`stats.ppi.engine`).

**Batches: sequential active inference.** The study grows batch by batch: batch t visits the
next conversations of the random order, and its probabilities (the budget left, the tuned τ of
:func:`tune_mixing`) may depend on the ratings of the batches before it, never on its own.
This is the paper's sequential setting: with F_{t-1} everything known before batch t is drawn,
E[Δ_i - θ | F_{t-1}] = 0 for each conversation i of batch t, so the centred increments form a
martingale difference sequence, and the same estimator and interval are valid by the
martingale central limit theorem (Hall & Heyde 1980, Martingale Limit Theory, thm 3.2), given
probabilities bounded below (the floor) and a stabilising variance. Stopping once the interval
is narrow enough uses the data only through the interval's width: the fixed-width sequential
interval of Chow & Robbins (Ann. Math. Statist. 36:457-462, 1965), asymptotically valid.

**τ tuning** (:func:`tune_mixing`): before each batch after the first, τ is chosen on a grid
in [floor, 1] to minimise the estimated variance term mean((Y - Ŷ)² / π^(τ)), as the authors'
notebooks tune it on held-out data; here on the conversations rated so far, weighted by 1/π of
their own draw so they stand for the conversations visited (an importance-weighted estimate of
the same mean). Too few ratings (:data:`MIN_TUNE`) and τ stays where it started.

Expected width after the next batch (:func:`expected_active_width`): the current increments'
spread plus, for each conversation the batch will visit, Var(Y) + r_i (1 - π_i)/π_i with r_i a
planning value of E[(Y_i - Ŷ_i)²] (:mod:`stats.planning`, rescaled to the squared errors seen
so far). Plain sequences in, frozen dataclasses out; randomness from a seed or a Generator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bootstrap import make_rng
from .data import StatsInputError
from .ppi.engine import MEAN, Target
from .ppi.inputs import check_confidence, z_value

__all__ = [
    "ESTIMATOR",
    "MIN_TUNE",
    "SMALL_N",
    "TAU_START",
    "ActiveEstimate",
    "active_estimate",
    "active_probabilities",
    "draw_batch",
    "expected_active_width",
    "planned_variance",
    "tune_mixing",
    "visit_order",
]

TAU_START = 0.5  # the authors' sequential notebooks mix half uniform sampling in
MIN_TUNE = 20  # rated conversations needed before τ is re-tuned on them
SMALL_N = 30  # below this many rated conversations the normal interval may under-cover
FLAT = 1e-12  # a variance below this (relative) is zero: no interval

ESTIMATOR = {
    "name": "active inference estimator: the judges' score plus the inverse-probability-weighted clinician-minus-judge "
    "correction on the rated conversations",
    "reference": "Zrnic & Candès, Active Statistical Inference, ICML 2024 (arXiv:2403.03208); the authors' code "
    "github.com/tijana-zrnic/active-inference",
    "sequential": "sequential active inference (batches whose probabilities depend on earlier batches): martingale "
    "central limit theorem (Hall & Heyde 1980, thm 3.2); stopping at a target width: Chow & Robbins (1965)",
    "sampling_rule": "uncertainty-proportional mixed with uniform (the paper's pi = (1 - tau) eta u + tau n_b/n), "
    "capped at 1 with the cut budget given to the others; tau >= the floor",
    "ddof": 0,
    "interval": "normal (Wald)",
}


def _values(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise StatsInputError(f"{name} must be one-dimensional (one value per conversation)")
    return array


def active_probabilities(uncertainty: Sequence[float] | np.ndarray, expected: float, *, tau: float) -> np.ndarray:
    """Return each visited conversation's probability of being rated (module docstring).

    ``uncertainty`` holds u_i >= 0 of the m conversations the batch visits, ``expected`` the
    ratings b the batch may use (0 < b <= m), ``tau`` the share of uniform sampling, in (0, 1]
    (the floor: π_i >= τ b/m). Σ π = b. All uncertainties equal (or all 0): π = b/m each.
    Raises StatsInputError for a negative or non-finite uncertainty, a b outside (0, m] or a τ
    outside (0, 1].
    """
    u = _values(uncertainty, "uncertainty")
    m = u.size
    if m == 0:
        raise StatsInputError("no conversation to visit")
    if not np.isfinite(u).all() or (u < 0).any():
        raise StatsInputError("uncertainties must be finite numbers >= 0")
    if not (math.isfinite(expected) and 0 < expected <= m):
        raise StatsInputError(f"the expected number of ratings must lie in (0, {m}], not {expected!r}")
    if not (math.isfinite(tau) and 0 < tau <= 1):
        raise StatsInputError(f"the floor (share of uniform sampling) must lie in (0, 1], not {tau!r}")
    mean = float(u.mean())
    shape = (1 - tau) * u / mean + tau if mean > 0 else np.ones(m)
    base = shape * expected / m  # the authors' rule, before the clip
    capped = np.zeros(m, dtype=bool)
    # Water-filling: cap at 1 and give the rest of the budget to the others, until none is above 1.
    for _ in range(m + 1):
        free = ~capped
        scale = (expected - capped.sum()) / base[free].sum() if free.any() else 1.0
        over = free & (base * scale >= 1 - 1e-12)
        if not over.any():
            break
        capped |= over
    probs = np.where(capped, 1.0, np.minimum(1.0, base * max(scale, 1.0)))
    return probs


def visit_order(n: int, seed: int | np.random.Generator) -> np.ndarray:
    """Return the random order (a permutation of 0..n-1) in which the conversations are visited."""
    if n < 1:
        raise StatsInputError("no conversation to visit")
    return make_rng(seed).permutation(n)


def draw_batch(inclusion_prob: Sequence[float] | np.ndarray, rng: int | np.random.Generator) -> np.ndarray:
    """Return ξ_i ~ Bernoulli(π_i), independently: which visited conversations are rated."""
    pi = _values(inclusion_prob, "inclusion_prob")
    if np.isnan(pi).any() or (pi <= 0).any() or (pi > 1).any():
        raise StatsInputError("inclusion probabilities must lie in (0, 1]")
    return make_rng(rng).random(pi.size) < pi


def tune_mixing(
    uncertainty: Sequence[float] | np.ndarray,
    squared_error: Sequence[float] | np.ndarray,
    inclusion_prob: Sequence[float] | np.ndarray,
    *,
    mean_uncertainty: float,
    floor: float,
    start: float = TAU_START,
    steps: int = 100,
) -> tuple[float, int]:
    """Return the mixing weight τ in [floor, 1] for the next batch, and how many ratings it rests on.

    The rated conversations so far give u_j, (Y_j - Ŷ_j)² and the π_j they were drawn with; τ
    minimises Σ_j (1/π_j) (Y_j - Ŷ_j)² / [(1 - τ) u_j / ū + τ] over ``steps`` values from
    ``floor`` to 1 (ū: ``mean_uncertainty`` of the whole population), the authors' tuning of
    τ, importance-weighted (module docstring). With fewer than :data:`MIN_TUNE` rated
    conversations, or no judge error seen, or no uncertainty at all, τ stays max(start, floor).
    """
    u = _values(uncertainty, "uncertainty")
    r = _values(squared_error, "squared_error")
    pi = _values(inclusion_prob, "inclusion_prob")
    if not (u.size == r.size == pi.size):
        raise StatsInputError("uncertainty, squared_error and inclusion_prob must have the same length")
    if not (0 < floor <= 1):
        raise StatsInputError(f"the floor must lie in (0, 1], not {floor!r}")
    fallback = max(start, floor)
    keep = np.isfinite(u) & np.isfinite(r) & np.isfinite(pi) & (pi > 0)
    u, r, pi = u[keep], r[keep], pi[keep]
    if u.size < MIN_TUNE or not (r > 0).any() or not mean_uncertainty > 0:
        return fallback, int(u.size)
    grid = np.linspace(floor, 1.0, steps)
    shapes = (1 - grid[:, None]) * u[None, :] / mean_uncertainty + grid[:, None]
    objective = ((r / pi)[None, :] / shapes).sum(axis=1)
    return float(grid[int(np.argmin(objective))]), int(u.size)


@dataclass(frozen=True)
class ActiveEstimate:
    """An active inference estimate with its interval, or why it has none.

    ``spread`` is σ̂² of the (linearised) increments and ``n_visited`` their number, which
    :func:`expected_active_width` extends; ``judge_only`` is the judges' score over the same
    visited conversations (uncorrected).
    """

    target: str
    estimate: float | None
    std_error: float | None
    low: float | None
    high: float | None
    confidence: float
    n_visited: int
    n_rated: int
    n_dropped: int
    judge_only: float | None
    spread: float | None
    cannot_estimate: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def width(self) -> float | None:
        """Return the interval's width (high - low), None without an interval."""
        return None if self.low is None or self.high is None else self.high - self.low

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping, with the estimator's name and reference."""
        return {
            "target": self.target, "estimate": self.estimate, "std_error": self.std_error, "low": self.low,
            "high": self.high, "width": self.width, "confidence": self.confidence, "n_visited": self.n_visited,
            "n_rated": self.n_rated, "n_dropped": self.n_dropped, "judge_only": self.judge_only,
            "cannot_estimate": self.cannot_estimate, "notes": list(self.notes),
            "estimator": ESTIMATOR["name"], "reference": ESTIMATOR["reference"], "ddof": 0,
            "interval": "normal (Wald)" if self.target == "mean" else "normal (Wald), delta method",
        }


def _matrix(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise StatsInputError(f"{name} must hold one score (or one row of means) per conversation")
    return array


def active_estimate(
    judge: Any,
    human: Any,
    selected: Sequence[bool] | np.ndarray,
    inclusion_prob: Sequence[float] | np.ndarray,
    *,
    target: Target = MEAN,
    confidence: float = 0.95,
) -> ActiveEstimate:
    """Return the active inference estimate of ``target`` from the visited conversations.

    Aligned per visited conversation: ``judge`` the judges' score Ŷ_i (a number, or a row of
    means such as VERA-MH counts; must be defined: give a fallback score where the judges gave
    none, any fixed f keeps the estimator unbiased), ``human`` the clinicians' score Y_i (NaN
    where not rated), ``selected`` ξ_i and ``inclusion_prob`` π_i. Returns θ̂ = g(mean Δ) with
    the normal interval of the module docstring. A rated conversation whose human score is
    missing (every label N/A, no consensus) is left out and counted (the estimate then assumes
    such scores are missing at random). No interval, with the reason, below 2 rated
    conversations, when the increments do not vary, or when g is undefined; a note below
    :data:`SMALL_N` rated conversations. Raises StatsInputError for mismatched lengths, a
    missing judge score, or π outside (0, 1].
    """
    confidence = check_confidence(confidence)
    f = _matrix(judge, "judge")
    y = _matrix(human, "human")
    xi = np.asarray(selected, dtype=bool)
    pi = _values(inclusion_prob, "inclusion_prob")
    n = f.shape[0]
    if y.shape != f.shape or xi.shape != (n,) or pi.shape != (n,):
        raise StatsInputError(
            f"judge ({f.shape[0]}), human ({y.shape[0]}), selected ({xi.size}) and inclusion_prob ({pi.size}) "
            "must describe the same visited conversations"
        )
    if np.isnan(f).any():
        raise StatsInputError("every visited conversation needs a judge score (give a fallback where the judges gave none)")
    if np.isnan(pi).any() or (pi <= 0).any() or (pi > 1).any():
        raise StatsInputError("inclusion probabilities must lie in (0, 1]")
    missing = xi & np.isnan(y).any(axis=1)
    keep = ~missing
    f, y, xi, pi = f[keep], y[keep], xi[keep], pi[keep]
    notes: list[str] = []
    dropped = int(missing.sum())
    if dropped:
        notes.append(f"{dropped} rated conversation(s) without a clinicians' score (every label not applicable, or "
                     "no consensus) left out")
    n, rated = f.shape[0], int(xi.sum())
    judge_mean = target.score(f.mean(axis=0)) if n else float("nan")
    judge_only = float(judge_mean) if np.isfinite(judge_mean) else None

    def without(why: str, value: float | None = None) -> ActiveEstimate:
        return ActiveEstimate(target.name, value, None, None, None, confidence, n, rated, dropped, judge_only, None,
                              f"cannot be estimated: {why}", tuple(notes))

    if n == 0:
        return without("no conversation visited yet")
    correction = np.where(xi[:, None], (np.nan_to_num(y) - f) / pi[:, None], 0.0)
    increments = f + correction
    mu = increments.mean(axis=0)
    value, grad = target.score(mu), target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return without(target.undefined)
    if target.caveat is not None and (caveat := target.caveat(mu)):
        notes.append(caveat)
    if rated < 2:
        return without(f"only {rated} rated conversation(s) with a clinicians' score; an interval needs at least 2",
                       float(value))
    if 2 <= rated < SMALL_N:
        notes.append(f"only {rated} rated conversations: the normal interval may cover less often than stated "
                     "(bench/active_sampling.py)")
    z = increments @ grad
    spread = float(np.var(z))  # ddof 0, as the authors' np.std
    if spread <= FLAT * max(1.0, float(np.abs(z).max()) ** 2):
        return without("the increments do not vary (every judge and clinician score the same), so a normal interval "
                       "would be a single point", float(value))
    se = math.sqrt(spread / n)
    half = z_value(confidence) * se
    return ActiveEstimate(target.name, float(value), se, float(value) - half, float(value) + half, confidence, n, rated,
                          dropped, judge_only, spread, None, tuple(notes))


def planned_variance(var_y: float, squared_error: Any, inclusion_prob: Any) -> np.ndarray:
    """Return each conversation's expected Var(Δ_i) = var_y + r_i (1 - π_i) / π_i (module docstring)."""
    r = _values(squared_error, "squared_error")
    pi = _values(inclusion_prob, "inclusion_prob")
    if r.size != pi.size:
        raise StatsInputError("squared_error and inclusion_prob must have the same length")
    if not (math.isfinite(var_y) and var_y >= 0) or not np.isfinite(r).all() or (r < 0).any():
        raise StatsInputError("variances must be finite numbers >= 0")
    if np.isnan(pi).any() or (pi <= 0).any() or (pi > 1).any():
        raise StatsInputError("inclusion probabilities must lie in (0, 1]")
    return var_y + r * (1 - pi) / pi


def expected_active_width(
    *,
    visited_variance: float,
    n_visited: int,
    next_variance: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
) -> float | None:
    """Return the expected interval width once the next batch's conversations are visited and rated.

    ``visited_variance`` is Σ (Δ_i - θ̂)² over the n conversations visited so far (n σ̂², from
    :class:`ActiveEstimate`, or the planned Σ Var(Δ_i) where no interval exists yet) and
    ``next_variance`` each next conversation's expected Var(Δ_i) (:func:`planned_variance`)::

        width = 2 z √( [visited_variance + Σ next Var(Δ_i)] / (n + m)² )

    None when nothing is or would be visited. The realised width varies around it.
    """
    confidence = check_confidence(confidence)
    extra = _values(next_variance, "next_variance")
    if not (math.isfinite(visited_variance) and visited_variance >= 0) or (extra < 0).any() or not np.isfinite(extra).all():
        raise StatsInputError("variances must be finite numbers >= 0")
    count = n_visited + extra.size
    if count == 0:
        return None
    return float(2 * z_value(confidence) * math.sqrt((visited_variance + float(extra.sum())) / count**2))

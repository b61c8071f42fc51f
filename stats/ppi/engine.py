"""Judge-assisted scores: prediction-powered inference (PPI, PPI++) for a chatbot's score.

Setting. A chatbot has N judged conversations: the LLM judge (or the ensemble) gave each a
score Ŷ_i (a 0/1 item, an AMHART conversation score, VERA-MH label counts). Clinicians rated
a sample S of n of them, whose human consensus scores are Y_i. The target θ is the mean human
score of the conversations the chatbot produces: a superpopulation mean, since the N
conversations are themselves simulated draws of what the chatbot says.

Estimators, for λ in [0, 1] (λ = 1 classical PPI, λ = 0 the human-only estimate, λ tuned
from the data PPI++), with inclusion probabilities π_i (n/N for a simple random sample) and
Hájek weights w_i = 1/π_i:

``judge_term="all"`` (default): the human-rated conversations are a sample of the N judged
ones (a two-phase design), and the judge term averages over all N of them::

    θ̂_λ = λ · mean_{i<=N} Ŷ_i  +  Σ_S w_i (Y_i - λŶ_i) / Σ_S w_i

    Var ≈ s²_Y / N  +  n/(n-1) · Σ_S (1 - π_i) w_i² e_i² / (Σ_S w_i)²

with e_i = R_i - R̂ the Hájek residuals of R = Y - λŶ. The first term is the phase-1 variance
(N draws of the chatbot), the second the Taylor-linearised variance of the Hájek mean under
Poisson sampling (Särndal, Swensson & Wretman 1992, Model Assisted Survey Sampling, on
two-phase sampling and the Hájek estimator; Breidt & Opsomer 2017, Statist. Sci. 32:190-205,
on such difference estimators). The two errors are uncorrelated because the phase-2 error has
mean zero given the N judged conversations. For a simple random sample (π_i = n/N) the
variance is exactly s²_Y/N + (1 - n/N) s²_R/n, which is the paper's var(Ŷ)/N + var(R)/n once
the covariance of the two terms (the rated conversations appear in both) is added:
var(λŶ)/N + var(R)/n + 2 cov(λŶ, R)/N. For stratified or oversampled fixed-size plans the
Poisson formula, which centres residuals on the overall mean rather than on each stratum's,
is conservative. Unequal probabilities keep θ̂ unbiased (to O(1/n), Hájek) because each rated
conversation stands for 1/π_i judged ones; probabilities from a plan drawn over a larger
population (every chatbot at once) stay valid for one chatbot's conversations, since the
Hájek weights are normalised within the conversations passed. Tuned λ minimises the second term (the first does
not depend on λ): λ̂ = Σ a_i u_i v_i / Σ a_i v_i², a_i = (1 - π_i) w_i², u and v the
Hájek-centred Y and Ŷ; for a simple random sample this is cov(Y, Ŷ)/var(Ŷ). It is the PPI++
optimum cov/((1 + n/N') var) of the paper's form written for this one: the two estimators
coincide under λ' = λ (N - n)/N with N' = N - n unrated conversations.

``judge_term="unlabeled"`` (the paper's form; Angelopoulos, Bates, Fannjiang, Jordan & Zrnic,
"Prediction-powered inference", Science 382:669-674, 2023): the judge term averages over the
N' conversations nobody rated, which must be an independent sample from the same
distribution (so no unequal inclusion probabilities)::

    θ̂_λ = λ · mean_unrated Ŷ + mean_S (Y - λŶ),   Var = λ² s²_Ŷ,unrated / N' + s²_{Y-λŶ} / n

    λ̂ = cov_S(Y, Ŷ) / ((1 + n/N') var(Ŷ over S and the unrated))     (clipped to [0, 1])

(Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference", arXiv:2311.01453,
2023, mean estimation; the same λ̂ as the authors' ppi_py package, which pools var(Ŷ)).

Scores that are smooth functions of means (a yes-rate over applicable conversations, the
VERA-MH score) use the delta method, as PPI++ does for M-estimators: the vector of means is
estimated as above and the variance is that of the linearised score z_i = ∇g(μ̂)·Y_i (and
∇g(μ̂)·Ŷ_i for the judge); λ is tuned on the linearised scores at the classical estimate.

Intervals are normal (Wald): θ̂ ± z_{(1+c)/2} SE. Variances use n-1 denominators. With fewer
than about 30 rated conversations the interval can under-cover (bench/ppi_coverage.py prints
the coverage). Missing scores (None, NaN, pandas NA) are dropped and counted: a rated
conversation whose human or judge score is missing leaves the sample entirely; the estimate
then concerns conversations with a defined score and assumes the scores are missing for
reasons unrelated to their value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..data import StatsInputError
from .inputs import Sample, check_confidence, z_value
from .results import JUDGE_TERMS, JudgeTerm, PPIEstimate, ScoreEstimate

__all__ = ["MEAN", "RATIO", "SMALL_N", "Target", "ppi_estimate"]

SMALL_N = 30  # below this many rated conversations the Wald interval is flagged


Score = Callable[[np.ndarray], float]  # vector of means -> score (NaN when undefined)
Gradient = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class Target:
    """A score as a smooth function of a vector of means, with its gradient."""

    name: str
    score: Score
    gradient: Gradient
    undefined: str  # why the score can be undefined, for the note
    caveat: Callable[[np.ndarray], str | None] | None = None  # a note on an estimate's means


MEAN = Target(
    "mean",
    lambda mu: float(mu[0]),
    lambda mu: np.ones(1),
    "undefined",
)


def _ratio_score(mu: np.ndarray) -> float:
    return float(mu[0] / mu[1]) if mu[1] > 0 else float("nan")


def _ratio_gradient(mu: np.ndarray) -> np.ndarray:
    if not mu[1] > 0:
        return np.full(2, np.nan)
    return np.array([1 / mu[1], -mu[0] / mu[1] ** 2])


RATIO = Target(
    "ratio",
    _ratio_score,
    _ratio_gradient,
    "the estimated mean of the denominator is not positive",
)


def _hajek(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return w @ x / w.sum()


def _means(d: Sample, lam: float, judge_term: JudgeTerm) -> np.ndarray:
    """Return the vector of estimated means for this λ (λ = 0: human-only)."""
    if judge_term == "unlabeled":
        return lam * d.f_unlabeled.mean(axis=0) + (d.y - lam * d.f_labeled).mean(axis=0)
    n_total = d.n + d.m
    judge_mean = (d.f_labeled.sum(axis=0) + d.f_unlabeled.sum(axis=0)) / n_total
    return lam * judge_mean + _hajek(1 / d.pi, d.y - lam * d.f_labeled)


def _variance(
    d: Sample, lam: float, grad: np.ndarray, judge_term: JudgeTerm
) -> tuple[float, float]:
    """Return (Var of the estimate, variance s² of the linearised human score)."""
    n = d.n
    z, zh = d.y @ grad, d.f_labeled @ grad
    if judge_term == "unlabeled":
        s2 = float(np.var(z, ddof=1))
        imputed = lam**2 * float(np.var(d.f_unlabeled @ grad, ddof=1)) / d.m if lam else 0.0
        return imputed + float(np.var(z - lam * zh, ddof=1)) / n, s2
    w = 1 / d.pi
    total_w = w.sum()
    zc = z - _hajek(w, z)
    s2 = n / (n - 1) * float(w @ zc**2) / total_w
    e = z - lam * zh
    e = e - _hajek(w, e)
    phase2 = n / (n - 1) * float(((1 - d.pi) * w**2) @ e**2) / total_w**2
    return float(s2 / (n + d.m) + phase2), float(s2)


def _tuned_lambda(d: Sample, grad: np.ndarray, judge_term: JudgeTerm) -> float | None:
    """Return the variance-minimising λ clipped to [0, 1], or None when it is undefined."""
    z, zh = d.y @ grad, d.f_labeled @ grad
    if judge_term == "unlabeled":
        pooled = np.concatenate([zh, d.f_unlabeled @ grad])
        denominator = (1 + d.n / d.m) * float(np.var(pooled, ddof=1))
        numerator = float(np.cov(z, zh, ddof=1)[0, 1])
    else:
        w = 1 / d.pi
        a = (1 - d.pi) * w**2
        u, v = z - _hajek(w, z), zh - _hajek(w, zh)
        numerator, denominator = float(a @ (u * v)), float(a @ v**2)
    if not denominator > 1e-15 * max(1.0, abs(numerator)):
        return None
    return float(np.clip(numerator / denominator, 0.0, 1.0))


def _interval(
    method: str, value: float, var: float, confidence: float, note: str | None = None
) -> ScoreEstimate:
    se = float(np.sqrt(max(var, 0.0)))
    half = z_value(confidence) * se
    return ScoreEstimate(method, value, se, value - half, value + half, confidence, note)


def _undefined(method: str, confidence: float, why: str) -> ScoreEstimate:
    return ScoreEstimate(method, None, None, None, None, confidence, f"undefined: {why}")


def _estimate(
    d: Sample, target: Target, lam: float, judge_term: JudgeTerm, method: str, confidence: float
) -> tuple[ScoreEstimate, float | None]:
    """Return the estimate for this λ and the variance s² of the linearised human score."""
    mu = _means(d, lam, judge_term)
    value = target.score(mu)
    grad = target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return _undefined(method, confidence, target.undefined), None
    var, s2 = _variance(d, lam, grad, judge_term)
    note = target.caveat(mu) if target.caveat is not None else None
    return _interval(method, value, var, confidence, note), s2


def _judge_only(d: Sample, target: Target, confidence: float) -> ScoreEstimate:
    f_all = np.vstack([d.f_labeled, d.f_unlabeled])
    mu = f_all.mean(axis=0)
    value, grad = target.score(mu), target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return _undefined("judge_only", confidence, target.undefined)
    var = float(np.var(f_all @ grad, ddof=1)) / f_all.shape[0]
    note = "naive: treats judge scores as human ones, so it ignores judge error and bias"
    caveat = target.caveat(mu) if target.caveat is not None else None
    if caveat:
        note = f"{note}; {caveat}"
    return _interval("judge_only", value, var, confidence, note)


def ppi_estimate(
    d: Sample,
    target: Target,
    *,
    confidence: float,
    tuned: bool,
    judge_term: JudgeTerm,
    notes: Sequence[str] = (),
) -> PPIEstimate:
    """Compute PPI (or PPI++), judge-only and human-only estimates of ``target`` on a sample.

    The engine behind :func:`ppi_mean`, :func:`ppi_ratio` and the instrument scores of
    :mod:`.scores`; see the module docstring for the estimators and their variances.
    """
    confidence = check_confidence(confidence)
    if judge_term not in JUDGE_TERMS:
        raise StatsInputError(f"judge_term must be one of {JUDGE_TERMS}, not {judge_term!r}")
    if judge_term == "unlabeled":
        if d.weighted:
            raise StatsInputError(
                "inclusion probabilities need judge_term='all': with unequal sampling the "
                "unrated conversations are not a random sample of the chatbot's conversations"
            )
        if d.m < 2:
            raise StatsInputError(
                "judge_term='unlabeled' needs at least 2 judged conversations nobody rated"
            )
    notes = list(notes)
    if d.n_dropped_labeled:
        notes.append(
            f"{d.n_dropped_labeled} rated conversation(s) with a missing human or judge score "
            "left out"
        )
    if d.n_dropped_unlabeled:
        notes.append(
            f"{d.n_dropped_unlabeled} unrated conversation(s) with no judge score left out"
        )
    if d.n < SMALL_N:
        notes.append(
            f"only {d.n} rated conversations: the normal interval may cover less often than "
            "stated (bench/ppi_coverage.py)"
        )
    lam = 1.0
    if tuned:
        classical = _means(d, 1.0, judge_term)
        grad = target.gradient(classical)
        found = _tuned_lambda(d, grad, judge_term) if np.isfinite(grad).all() else None
        if found is None:
            notes.append(
                "power tuning undefined (the judge's scores do not vary among the rated "
                "conversations, or every conversation was rated): classical PPI (lambda = 1) used"
            )
        else:
            lam = found
    ppi, _ = _estimate(d, target, lam, judge_term, "ppi++" if tuned else "ppi", confidence)
    human, s2 = _estimate(d, target, 0.0, judge_term, "human_only", confidence)
    judge = _judge_only(d, target, confidence)
    effective_n = None
    if ppi.std_error is not None and ppi.std_error > 0 and s2 is not None and s2 > 0:
        effective_n = float(s2 / ppi.std_error**2)
    if ppi.std_error == 0:
        notes.append(
            "zero estimated variance (every rated conversation has the same scores): the "
            "interval is a single point and understates the uncertainty"
        )
    correction = None
    if ppi.estimate is not None and judge.estimate is not None:
        correction = ppi.estimate - judge.estimate
    return PPIEstimate(
        target=target.name,
        ppi=ppi,
        judge_only=judge,
        human_only=human,
        lam=lam,
        tuned=tuned,
        judge_term=judge_term,
        weighted=d.weighted,
        n_labeled=d.n,
        n_unlabeled=d.m,
        n_total=d.n + d.m,
        n_dropped_labeled=d.n_dropped_labeled,
        n_dropped_unlabeled=d.n_dropped_unlabeled,
        correction=correction,
        effective_n=effective_n,
        notes=tuple(notes),
    )

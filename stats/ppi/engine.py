"""Judge-assisted scores: prediction-powered inference (PPI, PPI++) for a chatbot's score.

Setting. A chatbot has N judged conversations: the LLM judge (or the ensemble) gave each a
score Ŷ_i (a 0/1 item, an AMHART conversation score, VERA-MH label counts). Clinicians rated
a sample of n of them, whose human consensus scores are Y_i; the other N' = N - n are
unrated. The target θ is the mean human score of the conversations the chatbot produces: a
superpopulation mean, since the N conversations are themselves simulated draws of what the
chatbot says.

**PPI** (``judge_term="unlabeled"``, the default; Angelopoulos, Bates, Fannjiang, Jordan &
Zrnic, "Prediction-powered inference", Science 382:669-674, 2023) and **PPI++** (λ tuned;
Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453, 2023), mean estimation, exactly as the authors' package ``ppi_py``
computes them (``ppi_mean_pointestimate`` / ``ppi_mean_ci``)::

    θ̂_λ = λ · mean_unrated Ŷ + mean_rated (Y - λŶ)

    Var = λ² var₀(Ŷ over the unrated) / N'  +  var₀(Y - λŶ over the rated) / n

with var₀ the variance with divisor n (ddof 0), as ppi_py. λ = 1 is PPI; PPI++ takes ppi_py's
``lam=None`` value, computed at the λ = 1 estimate and clipped to [0, 1]::

    λ̂ = cov₀(Y, Ŷ over the rated) / ((1 + n/N') · var₁(Ŷ over all N judged))

(var₁: divisor N - 1, numpy's ``np.cov``, as ppi_py). λ = 0 is the humans-only estimate,
mean_rated Y with Var = var₀(Y)/n (ppi_py's ``classical_mean_ci``).

Sampling plans. When the rated conversations were drawn with unequal inclusion probabilities
π_i (oversampled disagreements), each rated conversation stands for 1/π_i judged ones and
each unrated one for 1/(1 - π_i): under Poisson sampling from the superpopulation the rated
and the unrated conversations are two independent samples whose densities are tilted by π and
1 - π, so PPI with these importance weights (ppi_py's ``w`` and ``w_unlabeled``) is unbiased
to O(1/n). Both means are Hájek means Σ w x / Σ w (Hájek 1971; Särndal, Swensson & Wretman
1992, Model Assisted Survey Sampling, sec. 5.7), which is what ppi_py computes after it
normalises the weights. Their variances are the Taylor-linearised Hájek variances
Σ w̃_i² (x_i - x̄_w)² with w̃ = w / Σ w; with equal weights these are var₀/n exactly, so
the weighted formula reproduces ppi_py on unweighted data. (ppi_py's own weighted interval
uses var₀(w x), which is not centred on the weighted mean and grows with the spread of the
weights times the mean; it is not used.) The weighted λ̂ is the same formula with the
Hájek-weighted covariance and the effective sizes 1/Σ w̃² and 1/Σ ṽ² in place of n and N';
it reduces to ppi_py's with equal weights. A rated conversation with π = 1 (a stratum the
plan rated in full) is never among the unrated, so it also enters the judge term, with weight
1: a certainty stratum, as in any Horvitz-Thompson estimator. The fixed-size stratified plans of
:mod:`stats.sampling` are treated as Poisson sampling, which is conservative.

**Two-phase difference estimator** (``judge_term="all"``): the judge term averages over all
N judged conversations (the rated ones included) and the rated conversations are a second-
phase sample of them::

    θ̂_λ = λ · mean_{i<=N} Ŷ_i  +  Σ_S w_i (Y_i - λŶ_i) / Σ_S w_i

    Var ≈ s²_Y / N  +  n/(n-1) · Σ_S (1 - π_i) w_i² e_i² / (Σ_S w_i)²

with e_i = R_i - R̂ the Hájek residuals of R = Y - λŶ and n/(n-1) (ddof 1) corrections
(Särndal, Swensson & Wretman 1992, ch. 9, two-phase sampling; Breidt & Opsomer 2017,
Statist. Sci. 32:190-205). It is not the paper's PPI: under simple random sampling its λ = 1
equals the paper's form with λ' = (N - n)/N. It needs the inclusion probabilities of the rated
conversations only. Tuned λ minimises its second term: λ̂ = Σ a_i u_i v_i / Σ a_i v_i²,
a_i = (1 - π_i) w_i², u and v the Hájek-centred Y and Ŷ.

**Cross-fitted PPI++** (``tuning="cross-fit"``, the judge-assisted report's PPI++). ppi_py's
λ̂ is estimated on the rated conversations it then weights, so λ̂ is correlated with the
rectifier mean_rated(Y - λŶ): at n = 100-150 that biases the estimate by about a fifth of its
standard error and the interval covers 0.92 where 0.95 is stated (bench/ppi_coverage.py). Cross-
fitting removes the correlation (the sample-splitting device of Chernozhukov et al.,
"Double/debiased machine learning", Econometrics J. 21:C1-C68, 2018; for PPI, Zrnic & Candès,
"Cross-prediction-powered inference", PNAS 121(15), 2024): each rated conversation i gets the
λ̂_{-i} that the same formula gives without it (leave-one-out, so no random fold assignment and
no dependence on row order), clipped to [0, 1]::

    θ̂ = λ̄ · mean_unrated Ŷ + Σ w̃_i (Y_i - λ̂_{-i} Ŷ_i),     λ̄ = Σ w̃_i λ̂_{-i}

    Var = λ̄² var₀(Ŷ over the unrated)/N' + n/(n-1) · Σ w̃_i² (R_i - R̄)²,   R_i = Y_i - λ̂_{-i} Ŷ_i

always with the small-sample t interval below (ddof 1 and Student's t_{n-1} with equal weights). The λ the result reports is λ̄. With n = 2 (no λ̂_{-i} defined) λ = 1 is used, with a
note.

Scores that are smooth functions of means (a yes-rate over applicable conversations, the
VERA-MH score from its Best Practice, High Potential for Harm and relevant shares) are
estimated by plugging the PPI estimates of the means into the score formula; the interval
comes from the delta method (PPI++ sec. on M-estimation): the variance is that of the
linearised score z_i = ∇g(μ̂)·Y_i (and ∇g(μ̂)·Ŷ_i for the judge), i.e. ppi_py's
``ppi_mean_ci`` applied to the linearised scores; λ is tuned on the linearised scores at the
λ = 1 estimate. For a plain mean (an AMHART score) the gradient is 1 and nothing changes.

Intervals are normal (Wald): θ̂ ± z_{(1+c)/2} SE, as ppi_py draws them. With ``small_sample=True``
(what the judge-assisted report draws, for PPI, PPI++, the two-phase and the humans-only
estimates) they are small-sample t intervals: the rated term's variance multiplied by
n_e/(n_e - 1) and θ̂ ± t_{n_e - 1, (1+c)/2} SE, n_e = 1/Σ w̃² Kish's effective number of rated
conversations (n with equal weights: ddof 1 and Student's t_{n-1}; Kish, Survey Sampling, 1965,
sec. 11.7; Hesterberg 2015 on z where t belongs). bench/ppi_coverage.py measures both. One
exception: the humans-only interval of a yes/no proportion (a mean of 0/1 answers, an item's
yes-rate) is Wilson's score interval, with Korn & Graubard's effective sample size under a plan
(:mod:`.proportion`): the t interval's symmetric band on a lattice of a few tens of answers
covered 0.932 at n = 30. Its estimate and standard error are unchanged.
An interval is not given, and the reason is
said in words, when fewer than 2 rated conversations have a score, when the human scores of
the rated conversations do not vary (every one the same label: their spread, on which the
interval rests, cannot be estimated), or when the estimated variance is zero. With fewer
than about 30 rated conversations the interval can under-cover (bench/ppi_coverage.py prints
the coverage). Missing scores (None, NaN, pandas NA) are dropped and counted: a rated
conversation whose human or judge score is missing leaves the sample entirely; the estimate
then concerns conversations with a defined score and assumes the scores are missing for
reasons unrelated to their value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..data import StatsInputError
from .inputs import Sample, check_confidence, kish_size, t_value, z_value
from .proportion import proportion_of
from .results import JUDGE_TERMS, TUNINGS, JudgeTerm, PPIEstimate, ScoreEstimate, Tuning

__all__ = ["MEAN", "RATIO", "SMALL_N", "Target", "ppi_estimate"]

SMALL_N = 30  # below this many rated conversations the Wald interval is flagged
FLAT = 1e-9  # relative spread below which scores count as all the same (rounding noise)


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


def _shares(d: Sample) -> tuple[np.ndarray, np.ndarray]:
    """Return the normalised weights w̃ (rated, 1/π) and ṽ (judge term, see ``_judge_sample``)."""
    w = 1 / d.pi
    v, _ = _judge_sample(d)
    return w / w.sum(), (v / v.sum() if v.size else v)


def _judge_sample(d: Sample) -> tuple[np.ndarray, np.ndarray]:
    """Return the judge term's weights and scores: the unrated conversations, 1/(1 - π) each.

    Rated conversations a plan was sure to pick (π = 1, a stratum rated in full) never appear
    among the unrated ones, so the unrated would not represent them: they enter the judge term
    too, with weight 1, as a certainty stratum does in any Horvitz-Thompson estimator.
    """
    v = 1 / (1 - d.pi_unlabeled) if d.m else np.zeros(0)
    f = d.f_unlabeled
    certain = d.pi >= 1 if d.weighted else np.zeros(d.n, dtype=bool)
    if certain.any() and d.m:
        v = np.concatenate([v, np.ones(int(certain.sum()))])
        f = np.vstack([f, d.f_labeled[certain]])
    return v, f


def _linearised_var(weights: np.ndarray, x: np.ndarray) -> float:
    """Return Σ w̃² (x - x̄_w)²: var₀(x)/n with equal weights (the Hájek mean's variance)."""
    centred = x - weights @ x
    return float((weights**2) @ centred**2)


def _means(d: Sample, lam: float, judge_term: JudgeTerm) -> np.ndarray:
    """Return the vector of estimated means for this λ (λ = 0: human-only)."""
    if judge_term == "unlabeled":
        wl, wu = _shares(d)
        judge = wu @ _judge_sample(d)[1] if d.m else np.zeros(d.y.shape[1])
        return lam * judge + wl @ (d.y - lam * d.f_labeled)
    n_total = d.n + d.m
    judge_mean = (d.f_labeled.sum(axis=0) + d.f_unlabeled.sum(axis=0)) / n_total
    return lam * judge_mean + _hajek(1 / d.pi, d.y - lam * d.f_labeled)


def _variance(d: Sample, lam: float, grad: np.ndarray, judge_term: JudgeTerm, small: bool = False) -> float:
    """Return the estimated variance of the estimate of g(μ) for this λ (``small``: rated term ddof 1)."""
    z, zh = d.y @ grad, d.f_labeled @ grad
    if judge_term == "unlabeled":
        wl, wu = _shares(d)
        imputed = lam**2 * _linearised_var(wu, _judge_sample(d)[1] @ grad) if lam and d.m else 0.0
        rated = _linearised_var(wl, z - lam * zh)
        if small:
            n_eff = kish_size(wl)
            rated *= n_eff / (n_eff - 1)
        return imputed + rated
    n = d.n
    w = 1 / d.pi
    total_w = w.sum()
    zc = z - _hajek(w, z)
    s2 = n / (n - 1) * float(w @ zc**2) / total_w
    e = z - lam * zh
    e = e - _hajek(w, e)
    phase2 = n / (n - 1) * float(((1 - d.pi) * w**2) @ e**2) / total_w**2
    return float(s2 / (n + d.m) + phase2)


def _tuned_lambda(d: Sample, grad: np.ndarray, judge_term: JudgeTerm) -> float | None:
    """Return the variance-minimising λ clipped to [0, 1], or None when it is undefined."""
    z, zh = d.y @ grad, d.f_labeled @ grad
    if judge_term == "unlabeled":
        wl, wu = _shares(d)
        u, v = z - wl @ z, zh - wl @ zh
        numerator = float((wl**2) @ (u * v))  # cov₀/n with equal weights
        pooled = np.concatenate([zh, d.f_unlabeled @ grad])  # every judged conversation
        spread = float(np.var(pooled, ddof=1)) if pooled.size > 1 else 0.0
        denominator = (float(wl @ wl) + float(wu @ wu)) * spread  # (1/n + 1/N') var₁
    else:
        w = 1 / d.pi
        a = (1 - d.pi) * w**2
        u, v = z - _hajek(w, z), zh - _hajek(w, zh)
        numerator, denominator = float(a @ (u * v)), float(a @ v**2)
    if not denominator > 1e-15 * max(1.0, abs(numerator)):
        return None
    return float(np.clip(numerator / denominator, 0.0, 1.0))


def _loo_lambdas(d: Sample, grad: np.ndarray) -> np.ndarray:
    """Return λ̂_{-i} for each rated conversation i: ``_tuned_lambda`` without conversation i.

    Vectorised from running sums (O(n + N')); where a λ̂_{-i} is undefined, λ = 1. A plan with a
    certainty stratum (π = 1) changes the judge term when a rated conversation is left out, so
    then each λ̂_{-i} is computed by ``_tuned_lambda`` on the sample without i.
    """
    n = d.n
    if d.weighted and bool((d.pi >= 1).any()) and d.m:
        keep = np.ones(n, dtype=bool)
        lams = np.ones(n)
        for i in range(n):
            keep[i] = False
            found = _tuned_lambda(_without(d, keep), grad, "unlabeled")
            lams[i] = 1.0 if found is None else found
            keep[i] = True
        return lams
    z, zh = d.y @ grad, d.f_labeled @ grad
    w = 1 / d.pi
    total = w.sum() - w  # Σ_{j≠i} w_j
    mean_z = (w @ z - w * z) / total
    mean_h = (w @ zh - w * zh) / total
    w2 = w**2
    s_zh = w2 @ (z * zh) - w2 * z * zh
    s_z = w2 @ z - w2 * z
    s_h = w2 @ zh - w2 * zh
    s_1 = w2.sum() - w2
    numerator = (s_zh - mean_h * s_z - mean_z * s_h + mean_z * mean_h * s_1) / total**2
    _, wu = _shares(d)
    fu = d.f_unlabeled @ grad
    pooled_n = n - 1 + fu.size
    sum1 = zh.sum() + fu.sum() - zh
    sum2 = (zh**2).sum() + (fu**2).sum() - zh**2
    spread = (sum2 - sum1**2 / pooled_n) / (pooled_n - 1) if pooled_n > 1 else np.zeros(n)
    denominator = (s_1 / total**2 + float(wu @ wu)) * spread
    defined = denominator > 1e-15 * np.maximum(1.0, np.abs(numerator))
    lam = np.divide(numerator, denominator, out=np.ones(n), where=defined)
    return np.clip(lam, 0.0, 1.0)


def _without(d: Sample, keep: np.ndarray) -> Sample:
    return replace(d, y=d.y[keep], f_labeled=d.f_labeled[keep], pi=d.pi[keep])


def _cross_fit(
    d: Sample, target: Target, confidence: float, note: str | None
) -> tuple[ScoreEstimate, float, list[str]]:
    """Return the cross-fitted PPI++ estimate (module docstring), its λ̄ and notes."""
    method = "ppi++_cf"
    notes: list[str] = []
    grad = target.gradient(_means(d, 1.0, "unlabeled"))
    if not np.isfinite(grad).all():
        return _undefined(method, confidence, target.undefined, 1), 1.0, notes
    if d.n >= 3:
        lams = _loo_lambdas(d, grad)
    else:
        lams = np.ones(d.n)
        notes.append("power tuning needs at least 3 rated conversations: lambda = 1 used")
    wl, wu = _shares(d)
    judge_scores = _judge_sample(d)[1]
    lam_bar = float(wl @ lams)
    mu = lam_bar * (wu @ judge_scores) + wl @ (d.y - lams[:, None] * d.f_labeled)
    value = target.score(mu)
    grad = target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return _undefined(method, confidence, target.undefined, 1), lam_bar, notes
    caveat = target.caveat(mu) if target.caveat is not None else None
    note = "; ".join(x for x in (note, caveat) if x) or None
    z, zh = d.y @ grad, d.f_labeled @ grad
    if _flat(z):
        return _no_interval(method, value, confidence, note, 1, _flat_reason(d.n)), lam_bar, notes
    imputed = lam_bar**2 * _linearised_var(wu, judge_scores @ grad) if lam_bar else 0.0
    n_eff = kish_size(wl)
    var = imputed + n_eff / (n_eff - 1) * _linearised_var(wl, z - lams * zh)
    return _interval(method, value, var, confidence, note, 1, t_value(confidence, n_eff)), lam_bar, notes


def _flat(x: np.ndarray) -> bool:
    """Tell whether the values are all the same (up to rounding)."""
    return x.size == 0 or float(np.ptp(x)) <= FLAT * max(1.0, float(np.abs(x).max()))


def _interval(
    method: str, value: float, var: float, confidence: float, note: str | None, ddof: int,
    quantile: float | None = None,
) -> ScoreEstimate:
    se = float(np.sqrt(max(var, 0.0)))
    if se <= FLAT * max(1.0, abs(value)):
        return _no_interval(
            method, value, confidence, note, ddof,
            "the estimated variance is zero (the scores leave no spread to measure), so a "
            "normal interval would be a single point",
        )
    half = (z_value(confidence) if quantile is None else quantile) * se
    return ScoreEstimate(method, value, se, value - half, value + half, confidence, note, None, ddof,
                         "normal" if quantile is None else "t")


def _no_interval(
    method: str, value: float | None, confidence: float, note: str | None, ddof: int, why: str
) -> ScoreEstimate:
    return ScoreEstimate(
        method, value, None, None, None, confidence, note, f"cannot be estimated: {why}", ddof
    )


def _undefined(method: str, confidence: float, why: str, ddof: int) -> ScoreEstimate:
    return ScoreEstimate(
        method, None, None, None, None, confidence, f"undefined: {why}",
        f"cannot be estimated: {why}", ddof,
    )


def _too_few(n: int) -> str:
    if n == 0:
        return "no clinician rated any of these conversations (with a defined score)"
    return f"only {n} rated conversation with a defined score; an interval needs at least 2"


def _flat_reason(n: int) -> str:
    return (
        f"the clinicians' scores are the same on all {n} rated conversations (one label "
        "throughout), so their spread, on which the interval rests, cannot be estimated; rate "
        "more conversations"
    )


def _estimate(
    d: Sample, target: Target, lam: float, judge_term: JudgeTerm, method: str, confidence: float,
    small: bool = False,
) -> ScoreEstimate:
    """Return the estimate for this λ, or why it has no interval.

    ``small``: ddof 1 and t_{n-1}, except a humans-only proportion's Wilson interval (.proportion).
    """
    ddof = 1 if (judge_term == "all" and method != "human_only") or small else 0
    if d.n == 0:
        return _undefined(method, confidence, _too_few(0), ddof)
    term = "unlabeled" if method == "human_only" else judge_term
    mu = _means(d, lam, term)
    value = target.score(mu)
    grad = target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return _undefined(method, confidence, target.undefined, ddof)
    note = target.caveat(mu) if target.caveat is not None else None
    if d.n < 2:
        return _no_interval(method, value, confidence, note, ddof, _too_few(d.n))
    if _flat(d.y @ grad):
        return _no_interval(method, value, confidence, note, ddof, _flat_reason(d.n))
    var = _variance(d, lam, grad, term, small)
    wilson = proportion_of(d.y, d.pi, d.weighted, target.name, confidence) if small and method == "human_only" else None
    if wilson is not None:  # a yes/no proportion: Wilson's score interval around the same estimate (.proportion)
        est = _interval(method, value, var, confidence, note, ddof)
        if est.cannot_estimate is None:
            return replace(est, low=wilson.low, high=wilson.high, interval_n=wilson.n,
                           interval="wilson_effective_n" if wilson.weighted else "wilson")
    quantile = t_value(confidence, kish_size(_shares(d)[0])) if small else None
    return _interval(method, value, var, confidence, note, ddof, quantile)


def _judge_only(d: Sample, target: Target, confidence: float) -> ScoreEstimate:
    f_all = np.vstack([d.f_labeled, d.f_unlabeled])
    if f_all.shape[0] == 0:
        return _undefined("judge_only", confidence, "no judged conversation has a score", 0)
    mu = f_all.mean(axis=0)
    value, grad = target.score(mu), target.gradient(mu)
    if not (np.isfinite(value) and np.isfinite(grad).all()):
        return _undefined("judge_only", confidence, target.undefined, 0)
    note = "uncorrected: treats judge scores as human ones, so it ignores judge error and bias"
    caveat = target.caveat(mu) if target.caveat is not None else None
    if caveat:
        note = f"{note}; {caveat}"
    if f_all.shape[0] < 2:
        return _no_interval("judge_only", value, confidence, note, 0, "only 1 judged conversation")
    var = float(np.var(f_all @ grad, ddof=0)) / f_all.shape[0]
    return _interval("judge_only", value, var, confidence, note, 0)


def _check_weights(d: Sample, judge_term: JudgeTerm) -> None:
    if judge_term != "unlabeled" or not d.weighted or d.weighted_unlabeled:
        return
    if d.n and not _flat(d.pi):
        raise StatsInputError(
            "PPI with unequal inclusion probabilities needs those of the unrated conversations "
            "too (unlabeled_inclusion_prob: each unrated conversation counts 1/(1 - π)), or "
            "judge_term='all' (the two-phase estimator, which needs only the rated ones)"
        )


def _weights_name(d: Sample, judge_term: JudgeTerm) -> str:
    if not d.weighted:
        return "equal"
    if judge_term == "all":
        return "Hajek: rated conversations 1/pi"
    if d.weighted_unlabeled:
        return "Hajek: rated conversations 1/pi, unrated ones 1/(1 - pi)"
    return "equal (every inclusion probability the same)"


def _interval_name(target: Target, small: bool) -> str:
    name = "Student t (n - 1 df), ddof 1" if small else "normal (Wald)"
    return name if target.name == "mean" else f"{name}, delta method"


def ppi_estimate(
    d: Sample,
    target: Target,
    *,
    confidence: float,
    tuned: bool,
    judge_term: JudgeTerm,
    notes: Sequence[str] = (),
    tuning: Tuning = "same-sample",
    small_sample: bool = False,
) -> PPIEstimate:
    """Compute PPI (or PPI++), judge-only and human-only estimates of ``target`` on a sample.

    The engine behind :func:`ppi_mean`, :func:`ppi_ratio` and the instrument scores of
    :mod:`.scores`; see the module docstring for the estimators and their variances.
    """
    confidence = check_confidence(confidence)
    if judge_term not in JUDGE_TERMS:
        raise StatsInputError(f"judge_term must be one of {JUDGE_TERMS}, not {judge_term!r}")
    if tuning not in TUNINGS:
        raise StatsInputError(f"tuning must be one of {TUNINGS}, not {tuning!r}")
    cross_fit = tuned and tuning == "cross-fit"
    if cross_fit and judge_term != "unlabeled":
        raise StatsInputError("cross-fitted tuning is defined for PPI (judge_term='unlabeled') only")
    _check_weights(d, judge_term)
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
    if 2 <= d.n < SMALL_N:
        notes.append(
            f"only {d.n} rated conversations: the normal interval may cover less often than "
            "stated (bench/ppi_coverage.py)"
        )
    if judge_term == "unlabeled":
        method = ("ppi++_cf" if cross_fit else "ppi++") if tuned else "ppi"
    else:
        method = "two_phase_tuned" if tuned else "two_phase"
    lam = 1.0
    census = judge_term == "unlabeled" and d.m == 0
    if tuned and d.n >= 2 and not census and not cross_fit:
        classical = _means(d, 1.0, judge_term)
        grad = target.gradient(classical)
        found = _tuned_lambda(d, grad, judge_term) if np.isfinite(grad).all() else None
        if found is None:
            notes.append(
                "power tuning undefined (the judge's scores do not vary, or every conversation "
                "was rated): lambda = 1 used"
            )
        else:
            lam = found
    if census and d.n:
        ppi = _undefined(
            method, confidence,
            "every judged conversation was rated, so there is nothing for the judges to add: "
            "the humans-only estimate is the answer", 0,
        )
    elif cross_fit and d.n >= 2:
        note = _estimate(d, target, 1.0, judge_term, method, confidence).note
        ppi, lam, more = _cross_fit(d, target, confidence, note)
        notes.extend(more)
    else:
        ppi = _estimate(d, target, lam, judge_term, method, confidence, small_sample)
    human = _estimate(d, target, 0.0, "unlabeled", "human_only", confidence, small_sample)
    judge = _judge_only(d, target, confidence)
    effective_n = None
    if ppi.std_error and d.n >= 2:
        human_mu = _means(d, 0.0, "unlabeled")
        grad = target.gradient(human_mu)
        if np.isfinite(grad).all():
            wl, _ = _shares(d)
            z = d.y @ grad
            spread = float(wl @ (z - wl @ z) ** 2)  # σ², ddof 0, Hájek-weighted
            if spread > 0:
                effective_n = float(spread / ppi.std_error**2)
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
        tuning=tuning if tuned else None,
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
        weights=_weights_name(d, judge_term),
        interval=_interval_name(target, small_sample or cross_fit),
    )

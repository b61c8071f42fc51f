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
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from .data import StatsInputError, is_missing

__all__ = [
    "JUDGE_TERMS",
    "JudgeTerm",
    "PPIEstimate",
    "ScoreEstimate",
    "ppi_mean",
    "ppi_ratio",
]

JudgeTerm = Literal["all", "unlabeled"]
JUDGE_TERMS: tuple[JudgeTerm, ...] = ("all", "unlabeled")

Values = Sequence[Any] | np.ndarray
SMALL_N = 30  # below this many rated conversations the Wald interval is flagged


@dataclass(frozen=True)
class ScoreEstimate:
    """One estimate of a score with its normal interval; None (with a note) when undefined.

    ``method`` is "ppi" (λ = 1), "ppi++" (tuned λ), "human_only" or "judge_only".
    """

    method: str
    estimate: float | None
    std_error: float | None
    low: float | None
    high: float | None
    confidence: float
    note: str | None = None

    @property
    def width(self) -> float | None:
        """Return the interval width (high - low), or None when undefined."""
        if self.low is None or self.high is None:
            return None
        return self.high - self.low

    def covers(self, value: float) -> bool:
        """Tell whether the closed interval contains ``value`` (False when undefined)."""
        return self.low is not None and self.high is not None and self.low <= value <= self.high

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "method": self.method,
            "estimate": self.estimate,
            "std_error": self.std_error,
            "low": self.low,
            "high": self.high,
            "width": self.width,
            "confidence": self.confidence,
            "note": self.note,
        }


@dataclass(frozen=True)
class PPIEstimate:
    """The judge-assisted (PPI) estimate beside the judge-only and the human-only ones.

    ``ppi`` is the prediction-powered estimate (classical PPI, or PPI++ when ``tuned``);
    ``judge_only`` is the judge's mean over all ``n_total`` judged conversations with a naive
    interval that treats judge scores as if they were human ones (it ignores judge error);
    ``human_only`` uses the human-rated conversations alone (Hájek-weighted when inclusion
    probabilities were given). ``lam`` is the λ used (1 for classical PPI). ``correction`` is
    ppi minus judge-only: how far the human sample moved the judge's figure. ``effective_n``
    is s²/Var(ppi), the number of simple-random human ratings that would give the human-only
    mean the same precision ("what the judges buy"); None when either variance is zero.
    """

    target: str
    ppi: ScoreEstimate
    judge_only: ScoreEstimate
    human_only: ScoreEstimate
    lam: float
    tuned: bool
    judge_term: JudgeTerm
    weighted: bool
    n_labeled: int
    n_unlabeled: int
    n_total: int
    n_dropped_labeled: int
    n_dropped_unlabeled: int
    correction: float | None
    effective_n: float | None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "target": self.target,
            "ppi": self.ppi.as_dict(),
            "judge_only": self.judge_only.as_dict(),
            "human_only": self.human_only.as_dict(),
            "lam": self.lam,
            "tuned": self.tuned,
            "judge_term": self.judge_term,
            "weighted": self.weighted,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "n_total": self.n_total,
            "n_dropped_labeled": self.n_dropped_labeled,
            "n_dropped_unlabeled": self.n_dropped_unlabeled,
            "correction": self.correction,
            "effective_n": self.effective_n,
            "notes": list(self.notes),
        }


# --- input -------------------------------------------------------------------------------


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


def check_inclusion_prob(inclusion_prob: Values, n: int) -> np.ndarray:
    """Return inclusion probabilities as floats after checking length and range (0, 1]."""
    pi = as_scores(inclusion_prob, "inclusion_prob")
    if pi.size != n:
        raise StatsInputError(
            f"inclusion_prob has {pi.size} entries for {n} human-rated conversations"
        )
    if np.isnan(pi).any():
        raise StatsInputError(
            "inclusion_prob has a missing value: every rated conversation needs one"
        )
    if (pi <= 0).any() or (pi > 1).any():
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


@dataclass(frozen=True, eq=False)
class Sample:
    """Cleaned data: human (n x k) and judge scores on the rated and the unrated conversations."""

    y: np.ndarray
    f_labeled: np.ndarray
    f_unlabeled: np.ndarray
    pi: np.ndarray
    weighted: bool
    n_dropped_labeled: int
    n_dropped_unlabeled: int

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
) -> Sample:
    """Align and clean the columns (n x k, n x k, m x k): drop rows with a missing score."""
    if y.shape != f_labeled.shape:
        raise StatsInputError(
            f"human scores ({y.shape[0]}) and judge scores on the rated conversations "
            f"({f_labeled.shape[0]}) must have the same length"
        )
    pi = None if inclusion_prob is None else check_inclusion_prob(inclusion_prob, y.shape[0])
    if y.shape[0] == 0:
        raise StatsInputError("no human-rated conversation: PPI needs at least 2")
    keep = ~(np.isnan(y).any(axis=1) | np.isnan(f_labeled).any(axis=1))
    keep_u = ~np.isnan(f_unlabeled).any(axis=1)
    y, f_labeled, f_unlabeled = y[keep], f_labeled[keep], f_unlabeled[keep_u]
    n, m = y.shape[0], f_unlabeled.shape[0]
    if n < 2:
        raise StatsInputError(
            f"{n} human-rated conversation(s) with a defined score: PPI needs at least 2"
        )
    return Sample(
        y=y,
        f_labeled=f_labeled,
        f_unlabeled=f_unlabeled,
        pi=np.full(n, n / (n + m)) if pi is None else pi[keep],
        weighted=pi is not None,
        n_dropped_labeled=int((~keep).sum()),
        n_dropped_unlabeled=int((~keep_u).sum()),
    )


# --- the estimators ---------------------------------------------------------------------

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
    :mod:`.ppi_scores`; see the module docstring for the estimators and their variances.
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


def ppi_mean(
    y_labeled: Values,
    yhat_labeled: Values,
    yhat_unlabeled: Values,
    *,
    confidence: float = 0.95,
    inclusion_prob: Values | None = None,
    tuned: bool = False,
    judge_term: JudgeTerm = "all",
) -> PPIEstimate:
    """Estimate a chatbot's mean human score from judge scores and a human-rated sample.

    ``y_labeled`` are the human consensus scores of the rated conversations and
    ``yhat_labeled`` the judge's scores of the same conversations, in the same order;
    ``yhat_unlabeled`` the judge's scores of the judged conversations nobody rated. With the
    default ``judge_term="all"`` the estimate is

        θ̂ = λ · mean(Ŷ over all n + N' judged) + Σ w_i (Y_i - λŶ_i) / Σ w_i  (over the rated)

    with λ = 1, or tuned (PPI++) when ``tuned=True``, and w_i = 1/``inclusion_prob``_i
    (equal weights when omitted: the rated conversations are then a simple random sample of
    the judged ones). ``judge_term="unlabeled"`` gives the paper's form, whose judge term
    averages over the unrated conversations only. Variances, λ̂ and references: module
    docstring. Scores may be 0/1 item answers, AMHART conversation scores or any number.

    Edge cases: fewer than 2 rated conversations with defined scores, lengths that differ,
    probabilities outside (0, 1], a non-number or an infinity raise
    :class:`~stats.data.StatsInputError`; missing scores are dropped and counted (module
    docstring); zero variance (every rated conversation scored alike, judge and humans
    agreeing) gives a point interval and a note; tuning falls back to λ = 1, with a note,
    when the judge's rated scores do not vary.
    """
    y = as_scores(y_labeled, "y_labeled")[:, None]
    f_lab = as_scores(yhat_labeled, "yhat_labeled")[:, None]
    f_unl = as_scores(yhat_unlabeled, "yhat_unlabeled")[:, None]
    d = make_sample(y, f_lab, f_unl, inclusion_prob)
    return ppi_estimate(d, MEAN, confidence=confidence, tuned=tuned, judge_term=judge_term)


def ppi_ratio(
    numerator_labeled: Values,
    denominator_labeled: Values,
    numerator_hat_labeled: Values,
    denominator_hat_labeled: Values,
    numerator_hat_unlabeled: Values,
    denominator_hat_unlabeled: Values,
    *,
    confidence: float = 0.95,
    inclusion_prob: Values | None = None,
    tuned: bool = False,
    judge_term: JudgeTerm = "all",
) -> PPIEstimate:
    """Estimate a ratio of two means, E[A]/E[B], from judge scores and a human-rated sample.

    For a yes-rate over applicable conversations, A_i = 1 if conversation i's answer is yes
    and B_i = 1 if it is yes or no (N/A leaves the denominator); :mod:`.ppi_scores` builds
    these from labels. Each mean is estimated as in :func:`ppi_mean` (same λ for both) and
    the ratio's variance comes from the delta method with the linearised score
    (A_i - r B_i)/mean(B) (module docstring). A ratio whose denominator mean is not positive
    (nothing applicable) is None with a note. The six sequences come in pairs: human A and B
    of the rated conversations, the judge's A and B of the same conversations in the same
    order, the judge's A and B of the unrated ones. Edge cases as in :func:`ppi_mean`; a
    conversation is dropped when any of its values is missing.
    """
    y = _columns(numerator_labeled, denominator_labeled, "labeled")
    f_lab = _columns(numerator_hat_labeled, denominator_hat_labeled, "hat_labeled")
    f_unl = _columns(numerator_hat_unlabeled, denominator_hat_unlabeled, "hat_unlabeled")
    d = make_sample(y, f_lab, f_unl, inclusion_prob)
    return ppi_estimate(d, RATIO, confidence=confidence, tuned=tuned, judge_term=judge_term)


def _columns(a: Values, b: Values, suffix: str) -> np.ndarray:
    x = as_scores(a, f"numerator_{suffix}")
    y = as_scores(b, f"denominator_{suffix}")
    if x.size != y.size:
        raise StatsInputError(
            f"numerator_{suffix} and denominator_{suffix} must have the same length"
        )
    return np.column_stack([x, y])

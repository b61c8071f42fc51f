"""The results of a judge-assisted estimate: one estimate per method, and all of them together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ESTIMATORS", "INTERVALS", "JUDGE_TERMS", "TUNINGS", "JudgeTerm", "PPIEstimate", "ScoreEstimate", "Tuning"]

JudgeTerm = Literal["unlabeled", "all"]
JUDGE_TERMS: tuple[JudgeTerm, ...] = ("unlabeled", "all")
# How PPI++'s λ is estimated: on the rated conversations it weights (ppi_py's), or cross-fitted.
Tuning = Literal["same-sample", "cross-fit"]
TUNINGS: tuple[Tuning, ...] = ("same-sample", "cross-fit")

# What each method is called in the literature, and where it comes from (for pages, API, CSV
# and a methods paragraph).
ESTIMATORS: dict[str, dict[str, str]] = {
    "ppi": {
        "name": "Prediction-powered inference (PPI)",
        "reference": "Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, Prediction-powered inference, "
        "Science 382:669-674 (2023); computed as ppi_py's ppi_mean_ci with lam=1",
    },
    "ppi++": {
        "name": "Power-tuned prediction-powered inference (PPI++)",
        "reference": "Angelopoulos, Duchi & Zrnic, PPI++: Efficient prediction-powered inference, "
        "arXiv:2311.01453 (2023); lambda as ppi_py's ppi_mean_ci with lam=None",
    },
    "ppi++_cf": {
        "name": "Power-tuned prediction-powered inference (PPI++), cross-fitted lambda",
        "reference": "Angelopoulos, Duchi & Zrnic, PPI++, arXiv:2311.01453 (2023), with lambda "
        "cross-fitted leave-one-out (Chernozhukov et al., Econometrics J. 21:C1-C68, 2018; Zrnic & "
        "Candes, Cross-prediction-powered inference, PNAS 121(15), 2024) and a Student t (n - 1 df) "
        "interval with ddof 1 (small-sample correction; Hesterberg, Am. Stat. 69:371-386, 2015)",
    },
    "two_phase": {
        "name": "Two-phase difference estimator (judge term over every judged conversation)",
        "reference": "Sarndal, Swensson & Wretman, Model Assisted Survey Sampling (1992), ch. 9 "
        "(two-phase sampling); Breidt & Opsomer, Statist. Sci. 32:190-205 (2017)",
    },
    "two_phase_tuned": {
        "name": "Two-phase difference estimator with variance-minimising lambda",
        "reference": "Sarndal, Swensson & Wretman (1992), ch. 9; Breidt & Opsomer (2017)",
    },
    "human_only": {
        "name": "Humans only: classical mean of the rated conversations",
        "reference": "the lam=0 case of PPI; ppi_py's classical_mean_ci; Hajek-weighted under a "
        "sampling plan (Hajek 1971; Sarndal, Swensson & Wretman 1992, sec. 5.7); the interval of a "
        "yes/no proportion is Wilson's score interval (Wilson 1927), with Korn & Graubard's (1998) "
        "effective sample size under a sampling plan",
    },
    "judge_only": {
        "name": "Judges only (uncorrected)",
        "reference": "the judges' mean over every judged conversation; its interval ignores the "
        "judges' errors",
    },
}

# How an estimate's interval was drawn (``ScoreEstimate.interval``), named as the literature names it.
INTERVALS: dict[str, dict[str, str]] = {
    "normal": {
        "name": "Normal (Wald) interval: estimate ± z SE",
        "reference": "as ppi_py draws it (Angelopoulos et al., Science 382:669-674, 2023)",
    },
    "t": {
        "name": "Small-sample t interval: estimate ± Student's t (n - 1 df) SE, variance with divisor n - 1",
        "reference": "n the rated conversations, Kish's effective number under a sampling plan (Kish, "
        "Survey Sampling, 1965, sec. 11.7); Hesterberg, Am. Stat. 69:371-386 (2015)",
    },
    "wilson": {
        "name": "Wilson score interval",
        "reference": "Wilson, Probable inference, the law of succession, and statistical inference, "
        "JASA 22:209-212 (1927); Brown, Cai & DasGupta, Statist. Sci. 16:101-133 (2001); equals "
        "statsmodels' proportion_confint(method='wilson')",
    },
    "wilson_effective_n": {
        "name": "Wilson score interval with an effective sample size",
        "reference": "Wilson (1927) with n replaced by Korn & Graubard's effective sample size "
        "p(1 - p)/v (Survey Methodology 24:193-201, 1998), v the Hajek proportion's linearised "
        "variance, capped at the rated answers; Franco, Little, Louis & Slud, J. Surv. Stat. "
        "Methodol. 7:334-364 (2019)",
    },
}


@dataclass(frozen=True)
class ScoreEstimate:
    """One estimate of a score with its normal interval, or the reason it cannot be given.

    ``method`` is "ppi" (λ = 1), "ppi++" (tuned λ), "two_phase", "two_phase_tuned",
    "human_only" or "judge_only". ``cannot_estimate`` says, in words, why there is no interval
    (or no estimate at all): fewer than 2 rated conversations, human scores that do not vary,
    a zero estimated variance. Then ``std_error``, ``low`` and ``high`` are None; ``estimate``
    stays when it is defined (the mean of identical scores is that score). ``ddof`` is the
    delta degrees of freedom of the variances (0: divided by n, as ppi_py). ``interval`` says how
    the interval was drawn (a key of ``INTERVALS``: "normal", "t", "wilson" or
    "wilson_effective_n"; None without an interval); a Wilson interval is not symmetric around
    the estimate, and ``interval_n`` is the number of answers (effective under a plan) it used.
    """

    method: str
    estimate: float | None
    std_error: float | None
    low: float | None
    high: float | None
    confidence: float
    note: str | None = None
    cannot_estimate: str | None = None
    ddof: int = 0
    interval: str | None = None
    interval_n: float | None = None

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
            "estimator": ESTIMATORS[self.method]["name"],
            "estimate": self.estimate,
            "std_error": self.std_error,
            "low": self.low,
            "high": self.high,
            "width": self.width,
            "confidence": self.confidence,
            "ddof": self.ddof,
            "interval": self.interval,
            "interval_name": INTERVALS[self.interval]["name"] if self.interval else None,
            "interval_n": self.interval_n,
            "note": self.note,
            "cannot_estimate": self.cannot_estimate,
        }


@dataclass(frozen=True)
class PPIEstimate:
    """The judge-assisted estimate beside the judge-only and the human-only ones.

    ``ppi`` is the prediction-powered estimate (PPI, or PPI++ when ``tuned``; the two-phase
    difference estimator when ``judge_term == "all"``); ``judge_only`` is the judge's mean
    over all ``n_total`` judged conversations with a naive interval that treats judge scores
    as if they were human ones (it ignores judge error); ``human_only`` uses the human-rated
    conversations alone (Hájek-weighted when inclusion probabilities were given). ``lam`` is
    the λ used (1 for classical PPI). ``correction`` is ppi minus judge-only: how far the
    human sample moved the judge's figure. ``effective_n`` is σ²/Var(ppi), the number of
    simple-random human ratings that would give the human-only mean the same precision
    ("what the judges buy"); None when either variance is zero. ``weights`` says which
    weights were used ("equal" or the inverse inclusion probabilities); ``interval`` how the
    interval was made (normal, with the delta method for a function of means).
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
    weights: str = "equal"
    interval: str = "normal (Wald)"
    tuning: Tuning | None = None

    @property
    def method(self) -> str:
        """Return the judge-assisted method's key ("ppi", "ppi++", "two_phase", ...)."""
        return self.ppi.method

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping."""
        return {
            "target": self.target,
            "method": self.method,
            "estimator": ESTIMATORS[self.method]["name"],
            "reference": ESTIMATORS[self.method]["reference"],
            "ppi": self.ppi.as_dict(),
            "judge_only": self.judge_only.as_dict(),
            "human_only": self.human_only.as_dict(),
            "lam": self.lam,
            "tuned": self.tuned,
            "tuning": self.tuning,
            "judge_term": self.judge_term,
            "weighted": self.weighted,
            "weights": self.weights,
            "interval": self.interval,
            "ddof": self.ppi.ddof,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "n_total": self.n_total,
            "n_dropped_labeled": self.n_dropped_labeled,
            "n_dropped_unlabeled": self.n_dropped_unlabeled,
            "correction": self.correction,
            "effective_n": self.effective_n,
            "notes": list(self.notes),
        }

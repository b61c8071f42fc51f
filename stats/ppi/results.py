"""The results of a judge-assisted estimate: one estimate per method, and all three together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["JUDGE_TERMS", "JudgeTerm", "PPIEstimate", "ScoreEstimate"]

JudgeTerm = Literal["all", "unlabeled"]
JUDGE_TERMS: tuple[JudgeTerm, ...] = ("all", "unlabeled")


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

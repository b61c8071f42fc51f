"""What the leaderboard's procedures are called, where they come from, and what they return."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MAX_UNDEFINED_SHARE",
    "METHODS",
    "MIN_CLUSTERS",
    "PROCEDURES",
    "ChatbotScore",
    "Comparison",
    "Method",
    "PairComparison",
    "ScoreKind",
]

ScoreKind = Literal["amhart", "vera_mh"]
Method = Literal["judge_only", "human_only", "ppi", "ppi_tuned"]
METHODS: tuple[Method, ...] = ("judge_only", "human_only", "ppi", "ppi_tuned")

DEFAULT_SEED = 20260101  # the reports' bootstrap seed (reliability, drift): one default everywhere
# 2/(B + 1) is the smallest two-sided bootstrap p-value B resamples can give: with 5,000 it is
# 0.0004, below Holm's first threshold 0.05/m for up to 125 pairs (16 chatbots).
DEFAULT_RESAMPLES = 5000
DEFAULT_ALPHA = 0.05
# Fewer clusters than this and a cluster bootstrap is known to be too narrow (Cameron, Gelbach
# & Miller 2008): no decision below it, "cannot decide yet" instead.
MIN_CLUSTERS = 10
# More undefined resamples than this share (a chatbot with no scored conversation among the
# drawn clusters) and the interval describes another population: no decision.
MAX_UNDEFINED_SHARE = 0.10

# Names and references, for the pages, the API, the CSV and a methods paragraph.
PROCEDURES: dict[str, dict[str, str]] = {
    "cluster_bootstrap": {
        "name": "Percentile cluster bootstrap",
        "reference": "Davison & Hinkley, Bootstrap Methods and their Application (1997), sec. 3.8 "
        "(resampling clusters); Efron & Tibshirani, An Introduction to the Bootstrap (1993), ch. 13 "
        "(percentile interval)",
    },
    "paired_cluster_bootstrap": {
        "name": "Paired cluster bootstrap of the difference (percentile interval)",
        "reference": "Davison & Hinkley (1997), sec. 3.8: each resample draws clusters with replacement and a "
        "drawn cluster brings the conversations of both chatbots, so what the cluster does to both cancels in "
        "the difference; Efron & Tibshirani (1993), ch. 13",
    },
    "unpaired_cluster_bootstrap": {
        "name": "Unpaired cluster bootstrap of the difference (percentile interval)",
        "reference": "Davison & Hinkley (1997), sec. 3.8 and 4.4 (two independent samples, each resampled on "
        "its own); Efron & Tibshirani (1993), ch. 13",
    },
    "bootstrap_p": {
        "name": "Two-sided bootstrap p-value from the resampled differences",
        "reference": "Davison & Hinkley (1997), sec. 4.4 (p = (1 + #)/(B + 1)) and 4.5 (tests from "
        "confidence sets): p = min(1, 2 min((1 + #{d* <= 0}), (1 + #{d* >= 0})) / (B + 1))",
    },
    "holm": {
        "name": "Holm step-down adjustment over the pairs",
        "reference": "Holm, A simple sequentially rejective multiple test procedure, Scand. J. Statist. "
        "6:65-70 (1979); controls the familywise error rate; equal to statsmodels' multipletests(method='holm')",
    },
    "ppi_bootstrap": {
        "name": "Each resample re-estimates the score by PPI (the prediction-powered bootstrap, clusters "
        "resampled)",
        "reference": "Zrnic, A note on the prediction-powered bootstrap, arXiv:2405.18379 (2024)",
    },
}


@dataclass(frozen=True)
class ChatbotScore:
    """One chatbot's score by one method, with its cluster-bootstrap interval (if asked for).

    ``estimate`` is the method's estimate on every conversation (each weight 1); ``low`` and
    ``high`` are None, with ``cannot_estimate`` saying why, when the interval is not given.
    ``n_conversations`` counts the conversations the estimate uses, ``n_rated`` those with a
    human score among them, ``n_clusters`` the clusters holding them.
    """

    chatbot: str
    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    n_conversations: int
    n_rated: int
    n_clusters: int
    n_resamples: int = 0
    n_undefined: int = 0
    cannot_estimate: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class PairComparison:
    """Two chatbots compared by one method: the difference ``a - b`` with its interval and decision.

    ``a`` is the chatbot with the higher estimate. ``design`` is "paired" (every cluster holds
    conversations of both), "partly paired" (some do) or "unpaired" (none does: independent
    resamples, ``design_note`` says why). ``decision`` is "higher" (``a`` scores higher than
    ``b`` after the adjustment), "no_difference" or "cannot_decide"; ``verdict`` says it in
    words. ``p_value`` is the bootstrap p-value, ``p_adjusted`` Holm's (None when no test).
    """

    a: str
    b: str
    estimate_a: float | None
    estimate_b: float | None
    difference: float | None
    low: float | None
    high: float | None
    confidence: float
    p_value: float | None
    p_adjusted: float | None
    decision: Literal["higher", "no_difference", "cannot_decide"]
    verdict: str
    design: Literal["paired", "partly paired", "unpaired"]
    design_note: str
    procedure: str
    n_clusters: int
    n_shared: int
    n_clusters_a: int
    n_clusters_b: int
    n_resamples: int
    n_undefined: int
    cannot_estimate: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """Every chatbot's score by one method and every pair compared, with Holm's decisions."""

    score: ScoreKind
    method: Method
    scores: tuple[ChatbotScore, ...]
    pairs: tuple[PairComparison, ...]
    family_size: int  # pairs tested (Holm's m); the others cannot be decided yet
    confidence: float
    alpha: float
    n_resamples: int
    seed: int
    min_clusters: int
    cluster_name: str
    lam: dict[str, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "score": self.score,
            "method": self.method,
            "scores": [s.as_dict() for s in self.scores],
            "pairs": [p.as_dict() for p in self.pairs],
            "family_size": self.family_size,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "min_clusters": self.min_clusters,
            "cluster_name": self.cluster_name,
            "lam": self.lam,
        }

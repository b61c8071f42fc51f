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
# The resamples estimate the bootstrap standard error; with 5,000 its relative Monte Carlo error
# is about 1/sqrt(2 x 4,999) = 1%. The p-value is Student's t, so it has no floor of 2/(B + 1)
# and Holm can reach its first threshold 0.05/m for any number of pairs.
DEFAULT_RESAMPLES = 5000
DEFAULT_ALPHA = 0.05
# Fewer clusters than this and no decision, "cannot decide yet" instead: Cameron, Gelbach &
# Miller (2008) found cluster bootstraps too narrow below about ten clusters. The small-sample
# t interval holds its level from ten personas up for the VERA-MH score (bench/
# leaderboard_coverage.py, vera_null_min: three identical chatbots, ten personas), so the
# VERA-MH minimum is this one too; AMHART's clusters are persona x repetition cells.
MIN_CLUSTERS = 10
# More undefined resamples than this share (a chatbot with no scored conversation among the
# drawn clusters) and the interval describes another population: no decision.
MAX_UNDEFINED_SHARE = 0.10

# Names and references, for the pages, the API, the CSV and a methods paragraph.
PROCEDURES: dict[str, dict[str, str]] = {
    "cluster_bootstrap": {
        "name": "Cluster bootstrap standard error with a small-sample t interval",
        "reference": "Davison & Hinkley, Bootstrap Methods and their Application (1997), sec. 3.8 "
        "(resampling clusters); the interval estimate ± t_{G-1} · sqrt(G/(G - 1)) · SE*, SE* the bootstrap "
        "standard error over G clusters: Hesterberg, What teachers should know about the bootstrap, The American "
        "Statistician 69 (2015), 371-386 (a bootstrap interval is too narrow by sqrt((G - 1)/G) and uses z where "
        "t_{G-1} belongs); Cameron & Miller, A practitioner's guide to cluster-robust inference, J. Human "
        "Resources 50 (2015), 317-372, sec. VI (few clusters)",
    },
    "paired_cluster_bootstrap": {
        "name": "Paired cluster bootstrap of the difference (small-sample t interval)",
        "reference": "Davison & Hinkley (1997), sec. 3.8: each resample draws clusters with replacement and a "
        "drawn cluster brings the conversations of both chatbots, so what the cluster does to both cancels in "
        "the difference; the interval is difference ± t_{G-1} · sqrt(G/(G - 1)) · SE*, SE* the standard "
        "deviation of the resampled differences over G clusters (Hesterberg 2015; Cameron & Miller 2015, sec. VI)",
    },
    "unpaired_cluster_bootstrap": {
        "name": "Unpaired cluster bootstrap of the difference (small-sample t interval, Welch's degrees of freedom)",
        "reference": "Davison & Hinkley (1997), sec. 3.8 and 4.4 (two independent samples, each resampled on "
        "its own); SE² = Σ G_j/(G_j - 1) · SE*_j² over the two chatbots, t with the Welch-Satterthwaite degrees "
        "of freedom (Welch, Biometrika 34 (1947), 28-35; Hesterberg 2015; Cameron & Miller 2015, sec. VI)",
    },
    "bootstrap_p": {
        "name": "Two-sided t p-value of the difference with the small-sample bootstrap standard error",
        "reference": "p = 2 P(T_df >= |difference| / SE), the test that inverts the interval (Davison & Hinkley "
        "1997, sec. 4.5, tests from confidence sets): below alpha exactly when the (1 - alpha) interval leaves 0 "
        "out; df = G - 1 (paired), Welch-Satterthwaite (unpaired)",
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
    """One chatbot's score by one method, with its small-sample cluster-bootstrap t interval (if asked for).

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
    words. ``p_value`` is the t test's p-value, ``p_adjusted`` Holm's (None when no test);
    ``std_error`` is the small-sample bootstrap standard error of the difference and ``df`` the
    t interval's degrees of freedom (None when no interval).
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
    std_error: float | None = None
    df: float | None = None
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

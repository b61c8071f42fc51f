"""Judge-assisted scores: prediction-powered inference (PPI and PPI++) for a chatbot's score.

PPI (Angelopoulos et al., Science 2023) and PPI++ (Angelopoulos, Duchi & Zrnic 2023) as the
authors' ppi_py computes them: the judge's (or ensemble's) mean over the unrated
conversations, corrected by the mean difference between human consensus and judge on the
rated ones, with an interval that accounts for both; shown beside the judge-only and the
human-only estimates. The two-phase difference estimator (judge term over every judged
conversation) keeps its own name. Estimators, variances and references: :mod:`.engine`.
"""

from .engine import SMALL_N
from .results import ESTIMATORS, INTERVALS, JUDGE_TERMS, JudgeTerm, PPIEstimate, ScoreEstimate
from .scores import (
    ppi_amhart_score,
    ppi_item_rate,
    ppi_mean,
    ppi_ratio,
    ppi_vera_mh_score,
)

__all__ = [
    "ESTIMATORS",
    "INTERVALS",
    "JUDGE_TERMS",
    "SMALL_N",
    "JudgeTerm",
    "PPIEstimate",
    "ScoreEstimate",
    "ppi_amhart_score",
    "ppi_item_rate",
    "ppi_mean",
    "ppi_ratio",
    "ppi_vera_mh_score",
]

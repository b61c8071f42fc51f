"""Judge-assisted scores: prediction-powered inference (PPI and PPI++) for a chatbot's score.

The estimate from judge (or ensemble) scores on all of a chatbot's judged conversations,
corrected by the mean difference between human consensus and judge on the conversations
humans rated, with an interval that accounts for both; shown beside the judge-only and the
human-only estimates. Estimators, variances and references: :mod:`.engine`.
"""

from .engine import SMALL_N
from .results import JUDGE_TERMS, JudgeTerm, PPIEstimate, ScoreEstimate
from .scores import (
    ppi_amhart_score,
    ppi_item_rate,
    ppi_mean,
    ppi_ratio,
    ppi_vera_mh_score,
)

__all__ = [
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

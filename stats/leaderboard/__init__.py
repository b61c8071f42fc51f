"""A benchmark leaderboard: every chatbot's score, and every pair compared with a paired interval.

Each chatbot's AMHART or VERA-MH score by one method (judges only, humans only, PPI, PPI++),
and every pair of chatbots compared by a paired cluster bootstrap of the difference (clusters:
personas, or persona and repetition) with a small-sample t interval and the t test that inverts
it (:mod:`.interval`), and Holm's adjustment over the pairs deciding "a scores higher than b"
or "no difference shown" (:mod:`.compare`). Pure: no Django.
"""

from .compare import compare_chatbots
from .features import Unit
from .interval import SmallSampleInterval, small_sample_t_interval, t_p_value
from .multiplicity import holm
from .results import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_UNDEFINED_SHARE,
    METHODS,
    MIN_CLUSTERS,
    PROCEDURES,
    ChatbotScore,
    Comparison,
    PairComparison,
)

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
    "PairComparison",
    "SmallSampleInterval",
    "Unit",
    "compare_chatbots",
    "holm",
    "small_sample_t_interval",
    "t_p_value",
]

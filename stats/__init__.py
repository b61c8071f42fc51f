"""Pure statistics for evalsite reports: inter-rater agreement, consensus, scores.

No Django here (a test enforces it): functions take plain sequences, arrays or long-form
ratings and return frozen dataclasses. Runnable as ``python -m stats agreement FILE``.
"""

from .agreement import (
    CohenKappa,
    CohenSummary,
    FleissKappa,
    GwetAC1,
    PairKappa,
    PercentAgreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    pairwise_cohen,
    percent_agreement,
)
from .alpha import KrippendorffAlpha, krippendorff_alpha
from .bootstrap import ConfidenceInterval, bootstrap_intervals, percentile_interval
from .confusion import (
    ConfusionMatrix,
    RaterComparison,
    compare,
    compare_each_pair,
    compare_to_reference,
    confusion_matrix,
)
from .consensus import Consensus, consensus, consensus_labels, ensemble_labels, majority_vote
from .data import (
    NA_CATEGORY,
    Rating,
    RatingTable,
    StatsInputError,
    coincidence_matrix,
    normalise_ratings,
)
from .labels import DEFAULT_NA_LABELS, UnknownLabelError, normalise_label
from .precision import PrecisionPlan, precision_plan
from .reference import ReferenceAgreement, rater_pair_agreement, reference_agreement
from .report import AgreementReport, ItemAgreement, agreement_report, item_agreement
from .scores import AmhartScore, VeraMhScore, amhart_score, vera_mh_score

__all__ = [
    "DEFAULT_NA_LABELS",
    "NA_CATEGORY",
    "AgreementReport",
    "AmhartScore",
    "CohenKappa",
    "CohenSummary",
    "ConfidenceInterval",
    "ConfusionMatrix",
    "Consensus",
    "FleissKappa",
    "GwetAC1",
    "ItemAgreement",
    "KrippendorffAlpha",
    "PairKappa",
    "PercentAgreement",
    "PrecisionPlan",
    "RaterComparison",
    "Rating",
    "RatingTable",
    "ReferenceAgreement",
    "StatsInputError",
    "UnknownLabelError",
    "VeraMhScore",
    "agreement_report",
    "amhart_score",
    "bootstrap_intervals",
    "cohen_kappa",
    "coincidence_matrix",
    "compare",
    "compare_each_pair",
    "compare_to_reference",
    "confusion_matrix",
    "consensus",
    "consensus_labels",
    "ensemble_labels",
    "fleiss_kappa",
    "gwet_ac1",
    "item_agreement",
    "krippendorff_alpha",
    "majority_vote",
    "normalise_label",
    "normalise_ratings",
    "pairwise_cohen",
    "percent_agreement",
    "percentile_interval",
    "precision_plan",
    "rater_pair_agreement",
    "reference_agreement",
    "vera_mh_score",
]

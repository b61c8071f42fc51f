"""Writes of the annotation app: instruments, studies and assignment, ratings, consensus."""

from .consensus import consensus_adjudicate, study_compute_consensus
from .errors import AnnotationError, RatingConflict
from .instruments import builtin_instruments_load, instrument_create_from_spec, instrument_import
from .ratings import (
    calibration_feedback,
    missing_items,
    normalise_value,
    rating_open,
    rating_revise,
    rating_save_answer,
    rating_submit,
)
from .studies import (
    assignment_reassign,
    assignment_touch,
    study_add_member,
    study_add_rater,
    study_assign,
    study_create,
    study_event,
    study_remove_rater,
)

__all__ = [
    "AnnotationError",
    "RatingConflict",
    "assignment_reassign",
    "assignment_touch",
    "builtin_instruments_load",
    "calibration_feedback",
    "consensus_adjudicate",
    "instrument_create_from_spec",
    "instrument_import",
    "missing_items",
    "normalise_value",
    "rating_open",
    "rating_revise",
    "rating_save_answer",
    "rating_submit",
    "study_add_member",
    "study_add_rater",
    "study_assign",
    "study_compute_consensus",
    "study_create",
    "study_event",
    "study_remove_rater",
]

"""Reads for the rater drift and load report: each rater's queue with their answers and times.

The study is access-checked by ``reports.selectors.study_get_for_reports``. Raters are named as
the other reports name them (the account's username); an assignment without a user account
(an external rater whose ratings were imported) is named by its label, so the report never
assumes every rater has an account. Two queries whatever the study size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Max, Q, Sum

from annotation.consensus.services import rating_labels
from annotation.models import Assignment, AssignmentStatus, RatingStatus, Study
from reports.selectors import study_data_version


@dataclass
class QueueEntry:
    """One of a rater's (non-calibration, not withdrawn) assignments with its rating if submitted."""

    assignment_id: int
    conversation_id: int
    code: str
    position: int
    status: str
    submitted_at: datetime | None
    seconds: int
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def submitted(self) -> bool:
        return self.status == AssignmentStatus.SUBMITTED and self.submitted_at is not None

    @property
    def timed(self) -> bool:
        """Return whether the rating page recorded active time on it.

        Ratings imported from a file record none (their ``submitted_at`` is the moment of the
        import and their position the file's order), so they say nothing about when or in
        which order the rater worked, or for how long.
        """
        return self.seconds > 0


def study_rater_queues(study: Study) -> dict[str, list[QueueEntry]]:
    """Return every rater's queue in queue order (position, then id), with submitted answers."""
    qs = (
        Assignment.objects.filter(study=study, is_calibration=False, is_gold=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .select_related("rater", "external_rater", "conversation", "rating")
        .order_by("position", "id")
    )
    queues: dict[str, list[QueueEntry]] = {}
    for assignment in qs:
        rating = getattr(assignment, "rating", None)  # a missing rating raises an AttributeError subclass
        labels: dict[str, str] = {}
        if rating is not None and rating.status == RatingStatus.SUBMITTED:
            labels = {k: v for k, v in rating_labels(study, rating).items() if not k.startswith("section:")}
        queues.setdefault(assignment.rater_name, []).append(
            QueueEntry(
                assignment.pk, assignment.conversation_id, assignment.conversation.code, assignment.position,
                assignment.status, assignment.submitted_at, assignment.time_spent_seconds, labels,
            )
        )
    return queues


def data_version(study: Study) -> str:
    # Reading time counts once submitted: a draft's clock ticks while its rater works, and must
    # not make every visit recompute the report (issue 19).
    submitted = Q(status=AssignmentStatus.SUBMITTED)
    stamp = Assignment.objects.filter(study=study).aggregate(
        n=Count("id"), last=Max("submitted_at"), seconds=Sum("time_spent_seconds", filter=submitted), pos=Sum("position")
    )
    blob = f"{study_data_version(study)}|{stamp}|{study.sitting_limit}|{study.sitting_gap_minutes}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]

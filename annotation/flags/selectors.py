"""Read flags: the coordinator's queue of a study, a rater's own flag on an assignment."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Assignment, ConversationFlag, FlagStatus, Study


def study_flags(study: Study, *, show: str = "open") -> QuerySet[ConversationFlag]:
    """Return the study's flags (open ones by default, or all), oldest open first (one query)."""
    qs = ConversationFlag.objects.filter(study=study).select_related("conversation", "rater", "resolved_by", "assignment")
    if show == "open":
        return qs.filter(status=FlagStatus.OPEN).order_by("created_at", "id")
    return qs.order_by("status", "-created_at", "-id")


def open_flag_count(study: Study) -> int:
    return ConversationFlag.objects.filter(study=study, status=FlagStatus.OPEN).count()


def rater_flag(assignment: Assignment) -> ConversationFlag | None:
    """Return the rater's latest flag on this assignment (open first), or None."""
    return ConversationFlag.objects.filter(assignment=assignment).order_by("status", "-created_at").first()

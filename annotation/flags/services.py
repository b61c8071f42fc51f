"""Write flags: a rater flags a conversation of their own; a coordinator resolves it.

A flag changes nothing about the assignment or its rating: the rater's answers stay exactly as
they were, saved or not yet submitted, and the rater may go on rating or leave it for the
coordinator. Both steps are recorded in the study's audit trail. Nothing in a flag or in what
the rater is shown afterwards names a chatbot, a model or a persona design.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.models import Assignment, ConversationFlag, FlagReason, FlagStatus, Study
from annotation.studies.services import study_event

MAX_NOTE = 2000


@transaction.atomic
def conversation_flag(*, assignment: Assignment, user: AbstractBaseUser, reason: str, note: str = "") -> ConversationFlag:
    """Flag the conversation of one of ``user``'s own assignments; one open flag per assignment (updated)."""
    if assignment.rater_id != user.pk:
        raise AnnotationError("not your assignment", status=404)
    if reason not in FlagReason.values:
        raise AnnotationError("choose why you flag this conversation")
    note = (note or "").strip()[:MAX_NOTE]
    if reason == FlagReason.OTHER and not note:
        raise AnnotationError("say what is wrong (a few words are enough)")
    flag = ConversationFlag.objects.select_for_update().filter(assignment=assignment, status=FlagStatus.OPEN).first()
    if flag is None:
        flag = ConversationFlag.objects.create(
            study_id=assignment.study_id, assignment=assignment, conversation_id=assignment.conversation_id,
            rater=user, reason=reason, note=note,
        )
    else:
        flag.reason, flag.note = reason, note
        flag.save(update_fields=["reason", "note"])
    study_event(study=assignment.study, actor=user, action="conversation_flagged", reason=note,
                conversation_id=assignment.conversation_id, summary=FlagReason(reason).label)
    return flag


@transaction.atomic
def flag_resolve(*, study: Study, flag_id: int, actor: AbstractBaseUser, resolution: str) -> ConversationFlag:
    """Resolve an open flag of the study with what was done about it (recorded in the audit trail)."""
    flag = ConversationFlag.objects.select_for_update().filter(pk=flag_id, study=study).first()
    if flag is None:
        raise AnnotationError("no such flag in this study", status=404)
    resolution = (resolution or "").strip()[:MAX_NOTE]
    if not resolution:
        raise AnnotationError("say what was done about it: the note is kept with the flag")
    if flag.status == FlagStatus.RESOLVED:
        return flag
    flag.status, flag.resolution, flag.resolved_by, flag.resolved_at = FlagStatus.RESOLVED, resolution, actor, timezone.now()
    flag.save(update_fields=["status", "resolution", "resolved_by", "resolved_at"])
    study_event(study=study, actor=actor, action="flag_resolved", reason=resolution,
                conversation_id=flag.conversation_id, rater=flag.rater_id)
    return flag

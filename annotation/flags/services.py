"""Write flags: a rater flags a conversation of their own; a coordinator resolves it.

A flag changes nothing about the assignment or its rating: the rater's answers stay exactly as
they were, saved or not yet submitted, and the rater may go on rating or leave it for the
coordinator. Both steps are recorded in the study's audit trail. Nothing in a flag or in what
the rater is shown afterwards names a chatbot, a model or a persona design.

A new flag emails each active coordinator of the study who has an address and has not turned
these notices off (``StudyMembership.flag_notices_off``), once the flag is committed, through
``core.emails`` (recorded, purpose ``flag_notice``). The email names the conversation and the
reason, not the rater's note: the note is read on the Flags tab.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    ConversationFlag,
    FlagReason,
    FlagStatus,
    MemberRole,
    Study,
    StudyMembership,
)
from annotation.reminders.services import base_url
from annotation.studies.services import study_event
from core.emails import email_send
from core.models import EmailPurpose, EmailRecord

MAX_NOTE = 2000


@transaction.atomic
def conversation_flag(*, assignment: Assignment, user: AbstractBaseUser, reason: str, note: str = "",
                      link_base: str | None = None) -> ConversationFlag:
    """Flag the conversation of one of ``user``'s own assignments; one open flag per assignment (updated).

    A new flag emails the study's coordinators once committed (``flag_notify_coordinators``);
    changing the reason or note of a flag still open does not email again.
    """
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
        flag_id = flag.pk
        transaction.on_commit(lambda: flag_notify_coordinators(flag_id=flag_id, link_base=link_base))
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


def flag_notice_message(flag: ConversationFlag, link_base: str) -> tuple[str, str]:
    """Return the subject and text of the email that tells a coordinator about a new flag."""
    study = flag.study
    reason = FlagReason(flag.reason).label
    flags_page = link_base + reverse("annotation:study-flags", args=[study.pk])
    study_page = link_base + reverse("annotation:study-detail", args=[study.pk]) + "#flag-notices"
    subject = f"Conversation flagged in {study.name}: {reason}"
    body = (
        f"Hello,\n\nA rater flagged conversation {flag.conversation.code} in the study “{study.name}”.\n"
        f"Reason: {reason}.\n\n"
        f"Read the rater's note and resolve the flag on the study's Flags tab:\n{flags_page}\n\n"
        f"To stop these emails for this study: {study_page}\n"
    )
    return subject, body


def flag_notify_coordinators(*, flag_id: int, link_base: str | None = None) -> list[EmailRecord]:
    """Email the flag to each active coordinator of its study with an address and notices on; return the records."""
    flag = ConversationFlag.objects.select_related("study", "conversation").filter(pk=flag_id).first()
    if flag is None:
        return []
    subject, body = flag_notice_message(flag, (link_base or base_url()).rstrip("/"))
    coordinators = (StudyMembership.objects.filter(study_id=flag.study_id, role=MemberRole.COORDINATOR, active=True,
                                                   flag_notices_off=False, user__is_active=True)
                    .exclude(user__email="").exclude(user_id=flag.rater_id).select_related("user")
                    .order_by("user__username"))
    return [email_send(purpose=EmailPurpose.FLAG_NOTICE, address=m.user.email, subject=subject, body=body,
                       recipient=m.user, study_id=flag.study_id) for m in coordinators]


@transaction.atomic
def flag_notices_set(*, study: Study, user: AbstractBaseUser, receive: bool) -> StudyMembership:
    """Turn the email about new flags on or off for one coordinator of the study (recorded in the audit trail)."""
    membership = StudyMembership.objects.select_for_update().filter(
        study=study, user_id=user.pk, role=MemberRole.COORDINATOR, active=True
    ).first()
    if membership is None:
        raise AnnotationError("only the study's coordinators get flag emails", status=404)
    if membership.flag_notices_off == (not receive):
        return membership
    membership.flag_notices_off = not receive
    membership.save(update_fields=["flag_notices_off"])
    study_event(study=study, actor=user, action="flag_notices_on" if receive else "flag_notices_off",
                summary="flag emails " + ("on" if receive else "off"))
    return membership

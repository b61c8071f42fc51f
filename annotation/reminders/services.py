"""Send reminder emails to a study's raters, by the coordinator's button or on the study's schedule.

Mail goes through ``core.emails.email_send`` (Django's email framework, ``EMAIL_BACKEND``: the
console by default, SMTP when configured; see ``.env.example``), which records each message
with what the backend did with it: sent, failed with the reason, printed to the console or
written to a file. The result says which, so the button never claims "sent" for a message that
did not leave the machine. A reminder names the study by its rater-facing title only and says
how many conversations are left: nothing that unblinds.
Who gets one: active raters with unsubmitted work who have an email address and have not
turned reminders off for the study. On the schedule, also only those neither active nor
reminded for the study's number of days. A scheduled send first claims the rater (one UPDATE
moving ``last_reminded_at`` forward), so two workers checking at once send one email. A send by
hand within ``EVALSITE_REMINDER_COOLDOWN_MINUTES`` of the last reminders that went is refused
(``ReminderCooldown``) unless confirmed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max, Q
from django.urls import reverse
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.models import Assignment, AssignmentStatus, MemberRole, Study, StudyMembership
from annotation.rating.selectors import study_title_for_raters
from annotation.studies.services import study_event
from core.emails import NO_MAIL_SERVER, backend_info, email_send
from core.models import EmailOutcome, EmailPurpose, EmailRecord

OPEN = (AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS)
SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
MAX_EVERY_DAYS = 60


# What the button says for the messages the backend accepted, by what it did with them.
ACCEPTED_WORDS = {
    EmailOutcome.SENT: "sent by SMTP",
    EmailOutcome.PRINTED: f"printed to the server's console: {NO_MAIL_SERVER}",
    EmailOutcome.WRITTEN: f"written to files on the server: {NO_MAIL_SERVER}",
    EmailOutcome.KEPT: "kept in memory by the test email backend: none left the machine",
    EmailOutcome.DISCARDED: "discarded by the dummy email backend: none left the machine",
}


class ReminderCooldown(AnnotationError):
    """Reminders went a short while ago: a second send by hand must be confirmed."""

    def __init__(self, last_at: datetime, now: datetime) -> None:
        self.last_at = last_at
        minutes = max(0, int((now - last_at).total_seconds() // 60))
        self.ago = "less than a minute ago" if minutes < 1 else f"{minutes} minute{'s' if minutes != 1 else ''} ago"
        super().__init__(f"reminders already went {self.ago}: confirm to send them again", status=409)


@dataclass
class ReminderResult:
    """Who got a reminder (the backend accepted it), who did not and why, and what the backend did."""

    sent: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    outcome: str = ""  # what the accepted messages became (an EmailOutcome)
    backend: str = ""  # a delivering backend other than SMTP, in words ("handed to the ... backend")

    @property
    def delivered(self) -> bool:
        """Whether the accepted messages left the machine (SMTP or another delivering backend)."""
        return self.outcome == EmailOutcome.SENT

    def summary(self) -> str:
        parts = []
        if self.sent:
            n = len(self.sent)
            words = f"sent ({self.backend})" if self.backend else ACCEPTED_WORDS.get(self.outcome, "sent")
            parts.append(f"{n} reminder{'s' if n != 1 else ''} {words}")
        if self.failed:
            reasons = list(dict.fromkeys(self.errors)) or ["see the reminder log"]
            more = f" (and {len(reasons) - 1} other reason{'s' if len(reasons) > 2 else ''}: see the reminder log)" \
                if len(reasons) > 1 else ""
            parts.append(f"{len(self.failed)} failed: {reasons[0]}{more}")
        if not parts:
            parts.append("no reminder sent")
        parts += [f"{n} {reason}" for reason, n in sorted(self.skipped.items())]
        return "; ".join(parts)


def base_url() -> str:
    """Return the address links in emails start with (``EVALSITE_BASE_URL``)."""
    return str(getattr(settings, "EVALSITE_BASE_URL", "") or "http://127.0.0.1:8000").rstrip("/")


def _left_by_rater(study: Study) -> dict[int, dict[str, Any]]:
    """Return, per in-app rater, how many conversations are left and their last activity (one query)."""
    rows = (
        Assignment.objects.filter(study=study, rater__isnull=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values("rater_id")
        .annotate(
            left=Count("id", filter=Q(status__in=OPEN)),
            last=Max("last_activity_at"),
            last_submitted=Max("submitted_at"),
        )
    )
    return {r["rater_id"]: r for r in rows}


def reminder_message(study: Study, left: int, link_base: str) -> tuple[str, str]:
    """Return the subject and text of a reminder (the study's rater-facing title only)."""
    title = study_title_for_raters(study)
    queue = link_base + reverse("annotation:my-studies")
    settings_page = link_base + reverse("annotation:my-reminders")
    due = f", due {study.due_date:%-d %B}" if study.due_date else ""
    subject = f"{left} conversation{'s' if left != 1 else ''} left to rate in {title}{due}"
    body = (
        f"Hello,\n\nYou have {left} conversation{'s' if left != 1 else ''} left to rate in “{title}”.\n"
        + (f"They are due on {study.due_date:%A %-d %B %Y}.\n" if study.due_date else "")
        + f"Your answers are saved as you go, so you can pick up where you left off:\n{queue}\n\n"
        "Some conversations touch on suicide and self-harm: take breaks, and tell your coordinator "
        "if a conversation should not be rated alone (the “Flag this conversation” button).\n\n"
        f"To stop these reminders for this study: {settings_page}\n"
    )
    return subject, body


def _send(study: Study, membership: StudyMembership, left: int, link_base: str) -> EmailRecord:
    subject, body = reminder_message(study, left, link_base)
    return email_send(purpose=EmailPurpose.REMINDER, address=membership.user.email, subject=subject, body=body,
                      recipient=membership.user, study_id=study.pk)


def reminder_cooldown() -> timedelta:
    """Return how long after reminders went a send by hand must be confirmed (0: never)."""
    return timedelta(minutes=float(getattr(settings, "EVALSITE_REMINDER_COOLDOWN_MINUTES", 60) or 0))


def last_reminders_at(study: Study) -> datetime | None:
    """Return when the study's last reminder went (accepted by the backend; failures do not count)."""
    return (EmailRecord.objects.filter(study_id=study.pk, purpose=EmailPurpose.REMINDER)
            .exclude(outcome=EmailOutcome.FAILED).order_by("-created_at").values_list("created_at", flat=True).first())


def reminders_recent(study: Study, *, now: datetime | None = None) -> datetime | None:
    """Return when the last reminders went if that is within the cooldown (sending again asks to confirm)."""
    cooldown = reminder_cooldown()
    last = last_reminders_at(study) if cooldown else None
    return last if last is not None and (now or timezone.now()) - last < cooldown else None


def reminders_send(*, study: Study, actor: AbstractBaseUser | None, link_base: str | None = None,
                   scheduled: bool = False, confirm: bool = False, now: datetime | None = None) -> ReminderResult:
    """Email the study's raters who have work left; return who got one, why the others did not, and how.

    A send by hand (not ``scheduled``) within the cooldown of the last reminders that went raises
    ``ReminderCooldown`` and sends nothing, unless ``confirm``.
    """
    now = now or timezone.now()
    if not scheduled and not confirm:
        recent = reminders_recent(study, now=now)
        if recent is not None:
            raise ReminderCooldown(recent, now)
    link_base = (link_base or base_url()).rstrip("/")
    left = _left_by_rater(study)
    info = backend_info()
    other = info.delivers and info.path != SMTP_BACKEND
    result = ReminderResult(outcome=info.outcome, backend=info.words if other else "")
    since = now - timedelta(days=study.reminder_every_days or 0)
    members = StudyMembership.objects.filter(study=study, role=MemberRole.RATER, active=True).select_related("user")
    for membership in members.order_by("user__username"):
        state = left.get(membership.user_id) or {"left": 0}
        if not state["left"]:
            result.skipped["with nothing left"] += 1
            continue
        if membership.reminders_opted_out_at is not None:
            result.skipped["turned reminders off"] += 1
            continue
        if not membership.user.email:
            result.skipped["without an email address"] += 1
            continue
        if scheduled:
            last = max((t for t in (state.get("last"), state.get("last_submitted")) if t), default=None)
            if last is not None and last >= since:
                result.skipped["active recently"] += 1
                continue
            claimed = StudyMembership.objects.filter(pk=membership.pk).filter(
                Q(last_reminded_at__isnull=True) | Q(last_reminded_at__lt=since)
            ).update(last_reminded_at=now)
            if not claimed:
                result.skipped["reminded recently"] += 1
                continue
        else:
            StudyMembership.objects.filter(pk=membership.pk).update(last_reminded_at=now)
        name = membership.user.get_username()
        record = _send(study, membership, state["left"], link_base)
        if record.outcome == EmailOutcome.FAILED:
            result.failed.append(name)
            result.errors.append(record.error)
        else:
            result.sent.append(name)
            result.outcome = record.outcome
    if result.sent or result.failed:
        study_event(study=study, actor=actor, action="reminders_sent",
                    summary=("on the study's schedule: " if scheduled else "") + result.summary(),
                    sent=result.sent, failed=result.failed, outcome=result.outcome)
    return result


def study_set_reminder_schedule(*, study: Study, every_days: int, actor: AbstractBaseUser) -> Study:
    """Set how often raters with work left are reminded (0: only by the button); recorded in the audit trail."""
    if not 0 <= every_days <= MAX_EVERY_DAYS:
        raise AnnotationError(f"remind every 0 to {MAX_EVERY_DAYS} days (0: only when you press the button)")
    with transaction.atomic():
        Study.objects.filter(pk=study.pk).update(reminder_every_days=every_days)
        study_event(study=study, actor=actor, action="reminder_schedule_set",
                    summary=f"every {every_days} day{'s' if every_days != 1 else ''}" if every_days else "off")
    study.reminder_every_days = every_days
    return study


def reminders_send_due(*, now: datetime | None = None) -> int:
    """Send the scheduled reminders of every study that has a schedule; return how many were sent.

    Called periodically by every worker (``annotation.tasks``) and by ``manage.py send_reminders``.
    """
    now = now or timezone.now()
    sent = 0
    for study in Study.objects.filter(reminder_every_days__gt=0, assignment_seed__isnull=False):
        sent += len(reminders_send(study=study, actor=None, scheduled=True, now=now).sent)
    return sent


@transaction.atomic
def reminders_opt(*, user: AbstractBaseUser, study_id: int, receive: bool) -> StudyMembership:
    """Turn a rater's reminder emails for one study on or off (the coordinator sees it on the progress page)."""
    membership = StudyMembership.objects.select_for_update().filter(
        user_id=user.pk, study_id=study_id, role=MemberRole.RATER
    ).first()
    if membership is None:
        raise AnnotationError("you are not a rater of this study", status=404)
    if receive == (membership.reminders_opted_out_at is None):
        return membership
    membership.reminders_opted_out_at = None if receive else timezone.now()
    membership.save(update_fields=["reminders_opted_out_at"])
    study_event(study=membership.study, actor=user, action="reminders_opted_in" if receive else "reminders_opted_out",
                rater=user.pk)
    return membership

"""Reminder pages: the coordinator's button and schedule (progress page), the rater's opt-out page.

Coordinators are authorized by ``study_get_for_coordinator`` (404 for anyone who does not manage
the study); the rater's page lists only the rater's own studies, by their rater-facing title.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.errors import AnnotationError
from annotation.models import MemberRole, StudyMembership
from annotation.rating.selectors import rater_title
from annotation.reminders.services import (
    ReminderCooldown,
    ReminderResult,
    reminders_opt,
    reminders_send,
    study_set_reminder_schedule,
)
from annotation.studies import selectors as reads
from core.permissions import roles_required
from core.roles import Role


def _progress(pk: int) -> HttpResponse:
    return redirect(reverse("annotation:study-progress", args=[pk]) + "#reminders")


@require_POST
def reminders_send_now(request: HttpRequest, pk: int) -> HttpResponse:
    """Email every rater of the study who has work left (and has not turned reminders off).

    Within the cooldown of the last reminders that went, nothing is sent unless the form's
    "send again" box is ticked (the progress page shows it with when the last ones went).
    """
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    try:
        result = reminders_send(study=study, actor=request.user, link_base=request.build_absolute_uri("/"),
                                confirm=request.POST.get("confirm") == "1")
    except ReminderCooldown as exc:
        messages.warning(request, f"Nothing was sent: reminders already went {exc.ago}. To send them again, "
                                  "tick “Send again” and press the button.")
        return _progress(pk)
    _say(request, result)
    return _progress(pk)


def _say(request: HttpRequest, result: ReminderResult) -> None:
    """Say what happened: sent by SMTP (success), printed or written (warning), failed (error)."""
    text = result.summary()
    text = text[:1].upper() + text[1:] + "."
    if result.failed and not result.sent:
        messages.error(request, text)
    elif result.sent and result.delivered and not result.failed:
        messages.success(request, text)
    else:
        messages.warning(request, text)


@require_POST
def reminders_schedule(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    raw = request.POST.get("reminder_every_days", "").strip()
    try:
        study_set_reminder_schedule(study=study, every_days=int(raw), actor=request.user)
    except (ValueError, AnnotationError) as exc:
        messages.error(request, f"Nothing was changed: {exc if isinstance(exc, AnnotationError) else 'give a whole number of days'}.")
    else:
        messages.success(request, f"Reminders every {study.reminder_every_days} day(s)." if study.reminder_every_days
                         else "Scheduled reminders are off; the button still sends them.")
    return _progress(pk)


@roles_required(Role.CLINICIAN)
@require_http_methods(["GET", "POST"])
def my_reminders(request: HttpRequest) -> HttpResponse:
    """Let a rater turn reminder emails on or off, study by study."""
    if request.method == "POST":
        study_id = request.POST.get("study", "")
        try:
            reminders_opt(user=request.user, study_id=int(study_id) if study_id.isdigit() else 0,
                          receive=request.POST.get("receive") == "1")
        except AnnotationError as exc:
            messages.error(request, str(exc)[:1].upper() + str(exc)[1:] + ".")
        else:
            messages.success(request, "Saved: " + ("you will get reminders for this study." if request.POST.get("receive") == "1"
                                                   else "no more reminders for this study."))
        return redirect("annotation:my-reminders")
    memberships = (
        StudyMembership.objects.filter(user=request.user, role=MemberRole.RATER, active=True)
        .values("study_id", "study__rater_title", "reminders_opted_out_at", "last_reminded_at")
        .order_by("study_id")
    )
    rows = [{"study_id": m["study_id"], "title": rater_title(m["study_id"], m["study__rater_title"]),
             "receive": m["reminders_opted_out_at"] is None, "last": m["last_reminded_at"]} for m in memberships]
    return render(request, "annotation/reminders/my_reminders.html", {"rows": rows, "has_email": bool(request.user.email)})

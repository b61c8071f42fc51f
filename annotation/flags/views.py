"""Flag pages: the rater's "flag this conversation" (from the rating page) and the coordinator's queue.

The rater's flag is posted by ``static/annotation/flag.js`` without leaving the page (nothing
typed is lost), or, without JavaScript, as a plain form that comes back to the rating page.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import AnnotationError
from annotation.flags import selectors as flag_reads
from annotation.flags.services import conversation_flag, flag_notices_set, flag_resolve
from annotation.models import FlagReason
from annotation.rating import selectors as rater_selectors
from annotation.studies import selectors as reads
from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@roles_required(Role.CLINICIAN)
@require_POST
def flag_conversation(request: HttpRequest, pk: int) -> HttpResponse:
    """Flag the conversation of one of the rater's own assignments (the rating stays as it is)."""
    assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
    try:
        flag = conversation_flag(assignment=assignment, user=request.user, reason=request.POST.get("reason", ""),
                                 note=request.POST.get("note", ""), link_base=request.build_absolute_uri("/"))
    except AnnotationError as exc:
        if _wants_json(request):
            return JsonResponse({"detail": str(exc)}, status=exc.status)
        messages.error(request, f"The conversation was not flagged: {exc}.")
        return redirect(reverse("annotation:rate", args=[assignment.pk]) + "#flag")
    text = "Flagged: your coordinator will look at it. Your answers are kept; you may go on rating or leave this one for now."
    if _wants_json(request):
        return JsonResponse({"flagged": True, "reason": flag.get_reason_display(), "message": text})
    messages.success(request, text)
    return redirect(reverse("annotation:rate", args=[assignment.pk]))


@require_GET
def study_flags(request: HttpRequest, pk: int) -> HttpResponse:
    """The coordinator's queue: open flags first, each with its reason, note and a resolve form."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    show = "all" if request.GET.get("show") == "all" else "open"
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "flags": list(flag_reads.study_flags(study, show=show)[:500]),
        "show": show,
        "n_open": study.n_open_flags,
        "reasons": FlagReason.choices,
    }
    return render(request, "annotation/flags/study_flags.html", context)


@require_POST
def flag_resolve_view(request: HttpRequest, pk: int, flag_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    try:
        flag = flag_resolve(study=study, flag_id=flag_id, actor=request.user, resolution=request.POST.get("resolution", ""))
    except AnnotationError as exc:
        messages.error(request, f"Not resolved: {exc}.")
    else:
        messages.success(request, f"Flag on {flag.conversation.code} resolved (kept in the audit trail).")
    return redirect("annotation:study-flags", pk=pk)


@require_GET
def study_flags_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    rows = ([f.conversation.code, f.rater.get_username(), f.reason, f.note, f.status, f.created_at.isoformat(),
             f.resolved_at.isoformat() if f.resolved_at else "", f.resolved_by.get_username() if f.resolved_by else "",
             f.resolution] for f in flag_reads.study_flags(study, show="all"))
    header = ["conversation", "rater", "reason", "note", "status", "flagged_at", "resolved_at", "resolved_by", "resolution"]
    return csv_response(f"study-{study.pk}-flags.csv", header, rows)


@require_POST
def flag_notices_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Turn the coordinator's own email about new flags in this study on or off (the study page's form)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    receive = request.POST.get("receive") == "1"
    try:
        flag_notices_set(study=study, user=request.user, receive=receive)
    except AnnotationError as exc:
        messages.error(request, f"Nothing was changed: {exc}.")
    else:
        messages.success(request, "Saved: " + ("you get an email when a rater flags a conversation of this study."
                                               if receive else "no more emails about flags in this study."))
    return redirect(reverse("annotation:study-detail", args=[pk]) + "#flag-notices")

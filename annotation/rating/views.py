"""Raters' pages: the dashboard, the content warning, the rating page, submit and revise.

Views stay thin: authorize (the clinician role, then the assignment among the user's own in
the selector: anything else is a 404), parse, call one service or selector, render. Answers
are autosaved through the rater API (``annotation.rating.api``) by ``static/annotation/rating.js``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.errors import AnnotationError
from annotation.flags.selectors import rater_flag
from annotation.models import Assignment, AssignmentStatus, FlagReason
from annotation.rating import selectors as rater_selectors
from annotation.rating import services
from annotation.rating.sittings import sitting_of
from core.permissions import roles_required
from core.roles import Role

rater_required = roles_required(Role.CLINICIAN)
WARNING_SESSION_KEY = "rater_content_warning_seen"

SHORTCUTS: list[tuple[str, str]] = [
    ("j / k", "next / previous question"),
    ("u", "first unanswered question"),
    ("y / n / a", "answer Yes / No / N/A, then move to the next unanswered question (a setting below)"),
    ("1 – 9", "choose the n-th option (1–5 on rating scales), then move on the same way"),
    ("?", "show or hide the guidance of the question"),
    ("t", "go to the transcript (then arrow keys scroll it)"),
    ("Esc", "leave a text box"),
    ("Ctrl + Enter", "submit the rating"),
]
# Studies that ask raters to cite the turns behind their answers (evidence) add these, by mode.
EVIDENCE_SHORTCUTS: dict[str, list[tuple[str, str]]] = {
    mode: [
        ("[ / ]", "previous / next turn of the transcript"),
        ("c", f"cite the turn you are on for {what} (press again to remove it)"),
    ]
    for mode, what in (("per_item", "the current question"), ("whole_form", "the whole rating"))
}


def _warning_seen(request: HttpRequest, assignment_id: int) -> bool:
    return assignment_id in request.session.get(WARNING_SESSION_KEY, [])


def _render_rating(
    request: HttpRequest, assignment: Assignment, *, status: int = 200, **errors: AnnotationError | None
) -> HttpResponse:
    page = rater_selectors.rating_page(assignment)
    context: dict[str, Any] = {
        "page": page,
        "shortcuts": SHORTCUTS + (EVIDENCE_SHORTCUTS.get(page.evidence_mode, []) if page.cites else []),
        "sitting": sitting_of(
            page.queue.submitted_times, limit=assignment.study.sitting_limit, gap_minutes=assignment.study.sitting_gap_minutes
        ),
        "config": {
            "assignment": assignment.pk,
            "answersUrl": reverse("v1:my-assignment-answers", args=[assignment.pk]),
            "openUrl": reverse("v1:my-assignment-open", args=[assignment.pk]),
            "dashboardUrl": reverse("annotation:my-studies"),
            "revision": page.revision,
            "submitted": page.is_submitted,
            "flow": page.is_flow,
            "evidenceMode": page.evidence_mode if page.cites else "off",
            # Resume where the rater left off (only when they had started).
            "resumeAt": page.first_unanswered.dom_id if page.first_unanswered and page.n_answered else "",
        },
        **{name: exc for name, exc in errors.items() if exc is not None},
        # "Flag this conversation" (annotation/flags): the rater's own flag only.
        "rater_flag": rater_flag(assignment),
        "flag_reasons": FlagReason.choices,
    }
    submit_error = errors.get("submit_error")
    if submit_error is not None:
        # The service names items as "key: text"; the page names them by their number.
        by_name = {f"{item.key}: {item.text}".strip(): item for item in page.items}
        missing = [by_name[m] for m in submit_error.details.get("missing", []) if m in by_name]
        context["missing"] = [{"dom_id": i.dom_id, "number": i.number, "text": i.text} for i in missing]
        lacking = [by_name[m] for m in submit_error.details.get("missing_evidence", []) if m in by_name]
        context["missing_evidence"] = [{"dom_id": i.dom_id, "number": i.number, "text": i.text} for i in lacking]
        context["missing_keys"] = {i.dom_id for i in missing}
    return render(request, "annotation/rater/rating.html", context, status=status)


@rater_required
def my_studies(request: HttpRequest) -> HttpResponse:
    """Show the rater's studies, progress and queue, and where to continue."""
    queues = rater_selectors.rater_queues(request.user)
    # One reverse() for hundreds of rows; the rating page is ratings/<id>/ (tested).
    rate_prefix = reverse("annotation:rate", args=[0])[: -len("0/")]
    return render(
        request,
        "annotation/rater/dashboard.html",
        {"queues": queues, "took_break": "break" in request.GET, "rate_prefix": rate_prefix},
    )


@rater_required
def rate(request: HttpRequest, pk: int) -> HttpResponse:
    """Show the rating page, after the content warning for sensitive conversations."""
    withdrawn = rater_selectors.assignment_withdrawn_for_rater(request.user, pk)
    if withdrawn is not None:
        # Not a bare 404: say the conversation was taken back and where the answers are.
        return render(request, "annotation/rater/withdrawn.html", {"withdrawn": withdrawn}, status=410)
    assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
    if assignment.conversation.sensitive and not _warning_seen(request, assignment.pk):
        return render(request, "annotation/rater/content_warning.html", {"assignment": assignment})
    if assignment.status != AssignmentStatus.SUBMITTED:
        try:
            # Reads only: a GET (a link, a cross-site image) never changes state. The page
            # itself posts the opening (rating-open.js), as does the first autosave.
            services.rating_gate_check(assignment=assignment)
        except AnnotationError as exc:
            return render(
                request, "annotation/rater/unavailable.html",
                {"assignment": assignment, "error": exc, "calibration": exc.status == 423},
                status=exc.status,
            )
    return _render_rating(request, assignment)


@rater_required
@require_POST
def continue_past_warning(request: HttpRequest, pk: int) -> HttpResponse:
    """Remember, for this session, that the rater chose to read this conversation."""
    assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
    seen = set(request.session.get(WARNING_SESSION_KEY, []))
    request.session[WARNING_SESSION_KEY] = sorted(seen | {assignment.pk})
    return redirect("annotation:rate", pk=assignment.pk)


def _int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw not in (None, "") else None
    except ValueError:
        return None


@rater_required
@require_POST
def submit(request: HttpRequest, pk: int) -> HttpResponse:
    """Submit the rating (idempotent); name the unanswered items when it is refused."""
    assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
    try:
        services.rating_submit(
            assignment_id=assignment.pk,
            user=request.user,
            expected_revision=_int_or_none(request.POST.get("expected_revision")),
        )
    except AnnotationError as exc:
        if exc.status == 423:  # a main conversation while calibration is pending
            return render(
                request, "annotation/rater/unavailable.html",
                {"assignment": assignment, "error": exc, "calibration": True}, status=423,
            )
        return _render_rating(request, assignment, submit_error=exc, status=exc.status)
    if assignment.is_calibration and services.calibration_feedback(assignment):
        # The reference answers are shown on the submitted calibration page: stay to read them.
        messages.success(request, f"Rating of {assignment.conversation.code} submitted. Compare your answers below.")
        return redirect("annotation:rate", pk=assignment.pk)
    next_id = rater_selectors.next_assignment_after(assignment)
    if next_id is None:
        messages.success(request, f"Rating of {assignment.conversation.code} submitted. Thank you: nothing is left to rate here.")
        return redirect("annotation:my-studies")
    messages.success(request, f"Rating of {assignment.conversation.code} submitted. Thank you. Here is the next conversation.")
    # The rate page shows the content warning first when the next conversation is sensitive.
    return redirect("annotation:rate", pk=next_id)


@rater_required
@require_POST
def revise(request: HttpRequest, pk: int) -> HttpResponse:
    """Change one answer of a submitted rating, with the reason kept in its history."""
    assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
    part = request.POST.get("part", "")
    key = request.POST.get("item_key", "")
    try:
        services.rating_revise(
            assignment_id=assignment.pk,
            user=request.user,
            changes={part: {key: request.POST.get("value", "")}},
            reason=request.POST.get("reason", ""),
        )
    except AnnotationError as exc:
        return _render_rating(request, assignment, revise_error=exc, status=exc.status)
    messages.success(request, "Your change is saved; the earlier version stays in the history below.")
    return redirect("annotation:rate", pk=assignment.pk)

"""Coordinators' pages: build a study, assign and rotate raters, watch progress, run consensus.

Every view authorizes through ``coordinator_selectors`` (404 for anyone who does not manage the
study), parses a form, calls one service or selectors, and renders or redirects.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.consensus import selectors as consensus_reads
from annotation.consensus.services import consensus_adjudicate, study_compute_consensus
from annotation.errors import AnnotationError
from annotation.models import AssignmentStatus
from annotation.studies import progress as progress_reads
from annotation.studies import selectors as reads
from annotation.studies.forms import (
    AddRaterForm,
    AdjudicateForm,
    AssignForm,
    RatingsImportForm,
    ReasonForm,
    ReassignForm,
    SelectionForm,
    StudyCreateForm,
)
from annotation.studies.ratings_import import ratings_import
from annotation.studies.services import (
    assignment_reassign,
    study_add_member,
    study_add_rater,
    study_assign,
    study_create,
    study_remove_rater,
)
from core.problems import ImportRejected
from core.uploads import read_upload
from corpus.conversations.selectors import conversation_ids_for_selection


def _detail(pk: int, anchor: str = "") -> HttpResponse:
    return redirect(reverse("annotation:study-detail", args=[pk]) + (f"#{anchor}" if anchor else ""))


def _cell(value: Any) -> Any:
    # A spreadsheet runs text starting with = + - @ as a formula; free text (notes, reasons) is quoted.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _csv(filename: str, header: list[str], rows: Iterable[list[Any]]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows([_cell(v) for v in row] for row in rows)
    return response


@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    studies = reads.coordinator_study_list(request.user)
    return render(request, "annotation/coordinator/study_list.html", {"studies": studies})


def study_new(request: HttpRequest) -> HttpResponse:
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    form = StudyCreateForm(request.POST or None, candidates=list(reads.rater_candidates()))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        ids, record = conversation_ids_for_selection(**form.selection_kwargs())
        try:
            study = study_create(
                name=data["name"], description=data["description"], instrument=data["instrument"],
                section=data["section"], conversation_ids=ids, created_by=request.user,
                coordinators=[request.user], raters=data["raters"],
                raters_per_conversation=data["raters_per_conversation"], composition=data["composition"] or None,
                tie_policy=data["tie_policy"], senior_rater=data["senior"], selection=record,
                calibration=data["calibration_map"] or None,
                min_ratings_for_consensus=data.get("min_ratings_for_consensus") or 2,
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Study created with {study.study_conversations.count()} conversations. Assign the raters next.")
            return _detail(study.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/coordinator/study_form.html", {"form": form}, status=status)


@require_GET
def selection_preview(request: HttpRequest) -> HttpResponse:
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    form = SelectionForm(request.GET)
    context: dict[str, Any] = {"form": form}
    if form.is_valid():
        ids, record = conversation_ids_for_selection(**form.selection_kwargs())
        context.update(n=len(ids), record=record)
    return render(request, "annotation/coordinator/_selection_preview.html", context)


@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    manages = reads.user_manages_study(request.user, study)
    members = reads.rater_memberships(study)
    active = {m.user_id for m in members if m.active}
    context = {
        "study": study,
        "manages": manages,
        "design": reads.study_design(study),
        "selection": reads.selection_summary(study.selection),
        "audit": reads.study_audit_trail(study),
        "assign_form": AssignForm(),
        "remove_form": ReasonForm(),
        "add_form": AddRaterForm(candidates=[u for u in reads.rater_candidates() if u.pk not in active]),
        "member_candidates": reads.member_candidates(study) if manages else [],
        "members": study.memberships.exclude(role="rater").select_related("user").order_by("role", "user__username"),
    }
    return render(request, "annotation/coordinator/study_detail.html", context)


@require_POST
def study_assign_view(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = AssignForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The seed must be a whole number of 0 or more.")
        return _detail(pk)
    try:
        result = study_assign(study=study, actor=request.user, seed=form.cleaned_data["seed"])
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Assigned {result['n_assignments']} conversation ratings with seed {result['seed']} (recorded).")
    return _detail(pk, "design")


@require_POST
def study_rater_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = AddRaterForm(request.POST, candidates=list(reads.rater_candidates()))
    if not form.is_valid():
        messages.error(request, "Pick a rater and give a label.")
        return _detail(pk, "raters")
    user = reads.rater_candidate_get(user_id=int(form.cleaned_data["user"]))
    try:
        moved = study_add_rater(
            study=study, user=user, label=form.cleaned_data["label"].strip(), actor=request.user,
            reason=form.cleaned_data["reason"], rebalance=form.cleaned_data["rebalance"],
        )
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Added {user.get_username()}; {len(moved)} unstarted assignment(s) moved to them.")
    return _detail(pk, "raters")


@require_POST
def study_member_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    user = reads.member_candidates(study).filter(pk=_int_or_zero(request.POST.get("user"))).first()
    if user is None:
        messages.error(request, "Pick a researcher or coordinator who is not yet a member.")
        return _detail(pk, "raters")
    try:
        study_add_member(study=study, user=user, role=request.POST.get("role", ""), actor=request.user)
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{user.get_username()} can now open this study as {request.POST.get('role')}.")
    return _detail(pk, "raters")


def _int_or_zero(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


@require_POST
def study_rater_remove(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    rater = reads.study_rater_get(study, user_id=user_id)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the rater is removed: the reason goes into the audit trail.")
        return _detail(pk, "raters")
    try:
        moved = study_remove_rater(study=study, rater=rater, actor=request.user, reason=form.cleaned_data["reason"])
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Removed {rater.get_username()}; {len(moved)} unstarted assignment(s) redistributed.")
    return _detail(pk, "raters")


def assignment_reassign_view(request: HttpRequest, pk: int, assignment_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    assignment = reads.assignment_get_for_coordinator(study, pk=assignment_id)
    raters = [m.user for m in reads.rater_memberships(study) if m.active and m.user_id != assignment.rater_id]
    form = ReassignForm(request.POST or None, raters=raters)
    movable = assignment.status in (AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS)
    if request.method == "POST" and movable and form.is_valid():
        new_rater = reads.study_rater_get(study, user_id=int(form.cleaned_data["new_rater"]))
        try:
            assignment_reassign(assignment=assignment, new_rater=new_rater, actor=request.user, reason=form.cleaned_data["reason"])
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Conversation {assignment.conversation.code} moved to {new_rater.get_username()}.")
            return redirect("annotation:study-progress", pk=pk)
    context = {"study": study, "assignment": assignment, "form": form, "movable": movable}
    return render(request, "annotation/coordinator/assignment_reassign.html", context, status=400 if form.errors else 200)


@require_GET
def study_progress(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "progress": progress_reads.study_progress(study),
    }
    return render(request, "annotation/coordinator/study_progress.html", context)


@require_GET
def study_progress_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    if table not in ("raters", "conversations"):
        raise Http404("not found")
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    progress = progress_reads.study_progress(study)
    rows = progress_reads.progress_rater_rows if table == "raters" else progress_reads.progress_assignment_rows
    return _csv(f"study-{study.pk}-progress-{table}.csv", *rows(progress))


@require_GET
def study_consensus(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    context = {
        "study": study,
        "manages": reads.user_manages_study(request.user, study),
        "table": consensus_reads.consensus_table(study),
        "summary": consensus_reads.consensus_summary(study),
    }
    return render(request, "annotation/coordinator/study_consensus.html", context)


@require_POST
def study_consensus_compute(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    counts = study_compute_consensus(study=study, actor=request.user)
    summary = ", ".join(f"{n} {name.replace('_', '-')}" for name, n in sorted(counts.items())) or "no submitted ratings yet"
    messages.success(request, f"Consensus computed: {summary}.")
    return redirect("annotation:study-consensus", pk=pk)


@require_GET
def study_consensus_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    return _csv(f"study-{study.pk}-consensus.csv", *consensus_reads.consensus_csv_rows(study))


def _queue_context(study: Any, selected: int | None, form: AdjudicateForm | None = None) -> dict[str, Any]:
    queue = list(consensus_reads.adjudication_queue(study))
    chosen = selected or (queue[0].pk if queue else None)
    case = consensus_reads.adjudication_case(study, consensus_id=chosen) if chosen else None
    if case is not None and form is None:
        form = AdjudicateForm(labels=consensus_reads.adjudication_labels(case), initial={"label": case.entry.label or None})
    return {
        "study": study,
        "queue": queue,
        "case": case,
        "form": form,
        "done": consensus_reads.adjudicated_entries(study)[:50],
        "summary": consensus_reads.consensus_summary(study),
    }


@require_GET
def study_adjudication(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    selected = request.GET.get("entry", "")
    context = _queue_context(study, int(selected) if selected.isdigit() else None)
    return render(request, "annotation/coordinator/adjudication.html", context)


@require_POST
def study_adjudicate(request: HttpRequest, pk: int, consensus_id: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    case = consensus_reads.adjudication_case(study, consensus_id=consensus_id)
    form = AdjudicateForm(request.POST, labels=consensus_reads.adjudication_labels(case))
    if form.is_valid():
        try:
            entry = consensus_adjudicate(
                consensus_id=consensus_id, study=study, label=form.cleaned_data["label"],
                reason=form.cleaned_data["reason"], actor=request.user,
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{entry.conversation.code} · {entry.item_key}: final label '{entry.label}' recorded.")
            return redirect("annotation:study-adjudication", pk=pk)
    context = _queue_context(study, consensus_id, form)
    return render(request, "annotation/coordinator/adjudication.html", context, status=400)


def study_import_ratings(request: HttpRequest, pk: int) -> HttpResponse:
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = RatingsImportForm(request.POST or None, request.FILES or None)
    context: dict[str, Any] = {"study": study, "form": form}
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            (name, text), *_ = read_upload(upload.name, upload)
            result = ratings_import(study=study, text=text, file=name, actor=request.user, dry_run=form.cleaned_data["dry_run"])
        except ImportRejected as exc:
            context["problems"] = exc.problems
        else:
            context["result"] = result
    return render(request, "annotation/coordinator/ratings_import.html", context, status=400 if context.get("problems") else 200)

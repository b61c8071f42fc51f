"""Coordinators' pages for sampling plans and rater load.

A new validation study drawn from a judge run with a plan (with a live preview of the strata
and the expected interval widths before anything is created), the plan's inclusion
probabilities as CSV, and the study's break prompt setting. Same access rules as the other
coordinator pages: 404 for anyone who may not manage the study.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import AnnotationError
from annotation.models import SamplingPlan
from annotation.sampling.forms import (
    METHOD_HELP,
    PlanForm,
    PlannedStudyForm,
    run_choices_queryset,
    run_source_choices,
)
from annotation.sampling.selectors import (
    MIN_PREVIOUS_LABELS,
    PlanPreview,
    plan_preview,
    previous_disagreement,
)
from annotation.sampling.services import plan_inclusion_rows, study_create_from_plan
from annotation.studies import selectors as reads
from annotation.studies.load import MAX_GAP_MINUTES, MAX_SITTING_LIMIT, study_set_sitting_limit
from core.csvstream import stream_csv
from judging.sources import run_conversations, run_label_sources


def _preview_context(user: Any, form: PlanForm) -> dict[str, Any]:
    """Return the preview of a valid plan form (or its error), and earlier human disagreement."""
    context: dict[str, Any] = {"plan_form": form}
    if not form.is_valid():
        return context
    run = form.cleaned_data["run"]
    context["sources"] = run_label_sources(run)
    try:
        preview: PlanPreview = plan_preview(run, form.cleaned_data.get("source") or None, form.plan_options())
    except AnnotationError as exc:
        context["plan_error"] = str(exc)
        return context
    context["preview"] = preview
    earlier = previous_disagreement(preview.population, reads.study_list_for_user(user))
    if earlier.n_agree + earlier.n_split >= MIN_PREVIOUS_LABELS:
        context["earlier"] = earlier
    return context


def study_new_from_run(request: HttpRequest) -> HttpResponse:
    """Build a validation study from a judge run with a sampling plan."""
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    initial: dict[str, Any] = {}
    run = run_choices_queryset(request.user).filter(pk=int(request.GET["run"])).first() if request.GET.get("run", "").isdigit() else None
    if run is not None:
        # Start from a plan that fits the run: at most 100 conversations, stratified.
        initial = {"run": run.pk, "plan_size": min(100, len(run_conversations(run)))}
    form = PlannedStudyForm(request.POST or None, candidates=list(reads.rater_candidates()), initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = study_create_from_plan(
                run=data["run"], source_key=data.get("source") or None, options=form.plan_options(),
                created_by=request.user, name=data["name"], rater_title=data["rater_title"],
                description=data["description"], section=data["section"], coordinators=[request.user],
                raters=data["raters"], raters_per_conversation=data["raters_per_conversation"],
                composition=data["composition"] or None, tie_policy=data["tie_policy"], senior_rater=data["senior"],
                calibration=data["calibration_map"] or None,
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            plan = study.sampling_plan
            messages.success(
                request,
                f"Study created with {plan.n} of the run's {plan.population} conversations "
                f"({plan.get_method_display().lower()}, seed {plan.seed}); every inclusion probability is recorded. Assign the raters next.",
            )
            return redirect("annotation:study-detail", pk=study.pk)
    context: dict[str, Any] = {"form": form, "method_help": {str(k): v for k, v in METHOD_HELP.items()},
                               "run_sources": run_source_choices(request.user)}
    if request.method == "POST":
        context.update(_preview_context(request.user, PlanForm(request.POST, user=request.user)))
    elif initial:
        defaults = {name: field.initial for name, field in PlanForm.base_fields.items() if field.initial is not None}
        context.update(_preview_context(request.user, PlanForm({**defaults, **initial}, user=request.user)))
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/coordinator/study_plan_form.html", context, status=status)


@require_GET
def plan_preview_view(request: HttpRequest) -> HttpResponse:
    """Return the plan preview partial (htmx asks for it as the coordinator changes the plan)."""
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    return render(request, "annotation/coordinator/_plan_preview.html", _preview_context(request.user, PlanForm(request.GET, user=request.user)))


@require_GET
def study_plan_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Return the study's conversations with their stratum and inclusion probability."""
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
    if not SamplingPlan.objects.filter(study=study).exists():
        raise Http404("this study has no sampling plan")
    header, rows = plan_inclusion_rows(study)
    response = HttpResponse("".join(stream_csv(header, rows)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-sampling-plan.csv"'
    return response


class SittingLimitForm(forms.Form):
    sitting_limit = forms.IntegerField(
        min_value=0, max_value=MAX_SITTING_LIMIT, label="Suggest a break after",
        help_text="conversations in one sitting (0: never). Raters may carry on; nothing is blocked.",
    )
    sitting_gap_minutes = forms.IntegerField(
        min_value=1, max_value=MAX_GAP_MINUTES, label="A new sitting starts after a pause of",
        help_text="minutes between two submissions",
    )


@require_POST
def study_sitting_limit(request: HttpRequest, pk: int) -> HttpResponse:
    """Change the study's break prompt (soft limit on conversations per sitting)."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    form = SittingLimitForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{form.fields[name].label}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.error(request, f"The break prompt was not changed. {problems}")
    else:
        try:
            study_set_sitting_limit(
                study=study, limit=form.cleaned_data["sitting_limit"],
                gap_minutes=form.cleaned_data["sitting_gap_minutes"], actor=request.user,
            )
        except AnnotationError as exc:
            messages.error(request, str(exc))
        else:
            limit = form.cleaned_data["sitting_limit"]
            messages.success(request, f"Raters are offered a break after {limit} conversations per sitting." if limit
                             else "Raters are no longer offered a break by count (they can always take one).")
    return redirect(reverse("annotation:study-detail", args=[pk]) + "#load")

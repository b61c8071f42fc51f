"""Pages of active sampling: the new study form, the study's active sampling page, its CSVs.

Coordinators and admins create active studies and draw their batches; a study's page and
CSVs are read by those who may read the study (its coordinators, researcher members and
admins); everyone else gets 404, as on the other coordinator pages.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.errors import AnnotationError
from annotation.sampling.active.forms import UNCERTAINTY_HELP, ActiveStudyForm, active_run_queryset
from annotation.sampling.active.methods import active_methods
from annotation.sampling.active.selectors import POOLED, ActiveState, active_plan_get, active_state
from annotation.sampling.active.services import active_batch_draw, active_study_create
from annotation.sampling.forms import source_choices
from annotation.studies import selectors as reads
from core.csvstream import stream_csv
from judging.models import JudgeMode
from judging.sources import run_conversations
from stats.active import ESTIMATOR

# Okabe-Ito, as the report charts: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")


def _state(request: HttpRequest, pk: int, *, write: bool = False) -> tuple[Any, ActiveState]:
    study = reads.study_get_for_coordinator(request.user, pk=pk, write=write)
    try:
        plan = active_plan_get(study)
    except AnnotationError as exc:
        raise Http404(str(exc)) from exc
    try:
        return study, active_state(plan)
    except AnnotationError as exc:  # the run lost its judges or labels since
        raise Http404(f"the active plan cannot be read: {exc}") from exc


def active_study_new(request: HttpRequest) -> HttpResponse:
    """Build a study that grows by active sampling from a judge run (draws its first batch)."""
    if not reads.can_create_studies(request.user):
        raise Http404("not found")
    initial: dict[str, Any] = {}
    raw = request.GET.get("run", "")
    runs = active_run_queryset(request.user)
    # Opened without a run: the first eligible run is chosen, so every default is valid for the data it shows (issue 28).
    run = runs.filter(pk=int(raw)).first() if raw.isdigit() else runs.first()
    if run is not None:
        size = len(run_conversations(run))
        # A width in the run's score units: ten percentage points of an AMHART score, ten points of VERA-MH's 100.
        initial = {"run": run.pk, "budget": max(1, min(200, size // 2)), "batch_size": max(1, min(40, size // 10)),
                   "target_width": 10.0 if run.mode == JudgeMode.FLOW else 0.10}
    form = ActiveStudyForm(request.POST or None, candidates=list(reads.rater_candidates()), initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = active_study_create(
                run=data["run"], source_key=data.get("source") or None, options=form.options(), created_by=request.user,
                name=data["name"], rater_title=data["rater_title"], description=data["description"],
                section=data["section"], coordinators=[request.user], raters=data["raters"],
                raters_per_conversation=data["raters_per_conversation"], composition=data["composition"] or None,
                tie_policy=data["tie_policy"], senior_rater=data["senior"],
            )
        except AnnotationError as exc:
            form.add_error(None, str(exc))
        else:
            batch = study.active_plan.batches.get(number=1)
            messages.success(
                request,
                f"Study created and batch 1 drawn: {batch.n_selected} of {batch.n_visited} visited conversations to rate "
                f"(expected {batch.expected:.0f}), assigned to the raters. Every probability is recorded.",
            )
            return redirect("annotation:study-active", pk=study.pk)
    runs = {str(r.pk): source_choices(r) for r in active_run_queryset(request.user)[:200]}
    context = {"form": form, "uncertainty_help": {str(k): v for k, v in UNCERTAINTY_HELP.items()}, "run_sources": runs,
               "no_runs": not active_run_queryset(request.user).exists()}
    return render(request, "annotation/coordinator/active_form.html", context, status=400 if request.method == "POST" else 200)


def _number(value: float | None, points: bool) -> str:
    if value is None:
        return "—"
    return f"{value:.1f}" if points else f"{value:.3f}"


def chart_data(state: ActiveState) -> dict[str, Any] | None:
    """Return the width after each complete batch per chatbot and pooled, the next batch's expected width and the target."""
    if not state.history and all(g.expected_next is None for g in [*state.groups, state.pooled]):
        return None
    groups = [g.group for g in state.groups] + [POOLED]
    traces = []
    last = state.history[-1]["batch"] if state.history else 0
    nxt = state.next_batch.number if state.next_batch else None
    for i, group in enumerate(groups):
        colour = PALETTE[i % len(PALETTE)] if group != POOLED else "#444444"
        xs = [h["batch"] for h in state.history if h["widths"].get(group) is not None]
        ys = [h["widths"][group] for h in state.history if h["widths"].get(group) is not None]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": group, "x": xs, "y": ys,
                       "line": {"color": colour, "width": 3 if group == POOLED else 2, "dash": "solid"},
                       "marker": {"color": colour, "size": 8}, "legendgroup": group})
        row = state.pooled if group == POOLED else next(g for g in state.groups if g.group == group)
        if nxt is not None and row.expected_next is not None:
            # Named in the legend by its group when no complete batch has drawn the group's line yet.
            traces.append({"type": "scatter", "mode": "markers", "name": group if not xs else f"{group}: expected after batch {nxt}",
                           "x": [nxt], "y": [row.expected_next], "showlegend": not xs, "legendgroup": group,
                           "marker": {"color": colour, "size": 11, "symbol": "circle-open", "line": {"width": 2}}})
    top = max(last, nxt or 0, 1)
    traces.append({"type": "scatter", "mode": "lines", "name": f"target {state.plan.target_width:g}",
                   "x": [0.5, top + 0.5], "y": [state.plan.target_width] * 2,
                   "line": {"color": "#b00020", "dash": "dash", "width": 2}})
    return {"traces": traces, "top": top}


@require_GET
def active_study_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Show the study's active sampling: width now, after the next batch, the batches, and the next-batch button."""
    study, state = _state(request, pk)
    points = state.population.instrument == "vera_mh"
    rows = []
    for g in [*state.groups, state.pooled]:
        est = g.estimate
        rows.append({
            "row": g, "pooled": g.group == POOLED, "estimate": _number(est.estimate, points),
            "interval": "—" if est.low is None else f"[{_number(est.low, points)}, {_number(est.high, points)}]",
            "width": _number(est.width, points), "expected": _number(g.expected_next, points),
            "judge_only": _number(est.judge_only, points),
        })
    chart = chart_data(state)
    watched = [state.pooled] if state.plan.stop_on == "pooled" else state.groups
    now = [g.estimate.width for g in watched]
    nxt = [g.expected_next for g in watched]
    probs = state.next_batch.probs if state.next_batch is not None else None
    context = {
        "study": study, "state": state, "plan": state.plan, "rows": rows, "points": points,
        "manages": reads.user_manages_study(request.user, study),
        "chart": json.dumps(chart) if chart else None, "params": state.parameters(),
        "target": _number(state.plan.target_width, points),
        "width_now": _number(None if not now or None in now else max(now), points),  # type: ignore[type-var]
        "width_next": _number(None if not nxt or None in nxt else max(nxt), points),  # type: ignore[type-var]
        "next_min": float(probs.min()) if probs is not None and probs.size else None,
        "next_max": float(probs.max()) if probs is not None and probs.size else None,
        "estimator": ESTIMATOR,
        "confidence": f"{state.plan.confidence:.0%}",
        "floor_share": f"{state.plan.floor:.0%}",
        "methods": active_methods(state),
    }
    return render(request, "annotation/coordinator/active_study.html", context)


@require_POST
def active_next_batch(request: HttpRequest, pk: int) -> HttpResponse:
    """Draw the study's next batch and assign it; say why not when the plan has stopped."""
    study = reads.study_get_for_coordinator(request.user, pk=pk)
    try:
        batch = active_batch_draw(study=study, actor=request.user)
    except AnnotationError as exc:
        if exc.status == 404:
            raise Http404(str(exc)) from exc
        messages.error(request, f"No batch drawn. {exc}")
        return redirect("annotation:study-active", pk=pk)
    messages.success(
        request,
        f"Batch {batch.number} drawn: {batch.n_selected} of {batch.n_visited} visited conversations to rate "
        f"(expected {batch.expected:.0f}), assigned to the raters.",
    )
    return redirect("annotation:study-active", pk=pk)


UNIT_HEADER = ["conversation", "chatbot", "batch", "position", "uncertainty", "inclusion_prob", "weight", "selected",
               "rated", "batch_complete", "judge_score", "judge_score_fallback"]
ESTIMATE_HEADER = ["after_batch", "group", "estimate", "ci_low", "ci_high", "width", "confidence", "n_visited", "n_rated",
                   "judge_only", "expected_width_after_next_batch", "target_width", "target_reached", "estimator",
                   "reference", "cannot_estimate"]


def _csv(name: str, header: list[str], rows: list[list[Any]]) -> HttpResponse:
    response = HttpResponse("".join(stream_csv(header, rows)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def active_units_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Return every visited conversation with its batch, uncertainty, inclusion probability and draw."""
    study, state = _state(request, pk)
    rows = [[u[k] for k in UNIT_HEADER] for u in state.units]
    return _csv(f"study-{study.pk}-active-sampling.csv", UNIT_HEADER, rows)


def estimate_rows(state: ActiveState) -> list[list[Any]]:
    """Return the estimates now (per chatbot and pooled), one CSV row each, with the estimator named."""
    done = state.history[-1]["batch"] if state.history else None
    out = []
    for g in [*state.groups, state.pooled]:
        e = g.estimate.as_dict()
        out.append([done, g.group, e["estimate"], e["low"], e["high"], e["width"], e["confidence"], e["n_visited"],
                    e["n_rated"], e["judge_only"], g.expected_next, state.plan.target_width, g.reached, e["estimator"],
                    e["reference"], e["cannot_estimate"]])
    return out


@require_GET
def active_estimates_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Return the estimate now and the width expected after the next batch, per chatbot and over all chatbots."""
    study, state = _state(request, pk)
    return _csv(f"study-{study.pk}-active-estimates.csv", ESTIMATE_HEADER, estimate_rows(state))

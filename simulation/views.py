"""Pages of simulation batches and prompt templates.

Researchers and admins create, cancel and resume; coordinators read; everyone else gets 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.permissions import corpus_required, role_required
from simulation import selectors as reads
from simulation.batches import (
    simulation_batch_cancel,
    simulation_batch_create,
    simulation_batch_resume,
)
from simulation.errors import SimulationError
from simulation.forms import PromptTemplateForm, SimulationBatchForm
from simulation.launch_counts import batch_counts
from simulation.models import SimulationRun
from simulation.outages import batch_outage
from simulation.preflight import batch_preflight, batch_resume_preflight
from simulation.preflight import enabled as preflight_enabled
from simulation.prompts import (
    TemplateError,
    prompt_template_create,
    prompt_templates_ensure_builtin,
)

run_required = role_required(reads.can_run_simulations)
RUNS_PER_PAGE = 100


@corpus_required
def batch_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(reads.batch_list_for_user(request.user), 50).get_page(request.GET.get("page"))
    for batch in page:
        batch.state = reads.batch_listed_state(batch)
        batch.state_label = reads.BATCH_STATE_LABELS[batch.state]
    return render(
        request,
        "simulation/batch_list.html",
        {"page": page, "can_run": reads.can_run_simulations(request.user)},
    )


@run_required
def batch_create(request: HttpRequest) -> HttpResponse:
    prompt_templates_ensure_builtin()
    form = SimulationBatchForm(request.POST or None, user=request.user)
    report = None
    if request.method == "POST" and form.is_valid():
        spec = form.to_spec()
        report = batch_preflight(spec).seen_by(request.user) if preflight_enabled() else None
        if report is not None and not report.ok:
            form.add_error(None, "The launch check failed, so nothing was started. Fix what is listed below and start again.")
        else:
            try:
                batch = simulation_batch_create(spec=spec, created_by=request.user)
            except SimulationError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Batch {batch.code} started: {batch.runs.count()} conversation(s) queued.")
                return redirect("simulation:batch-detail", code=batch.code)
    status = 400 if request.method == "POST" else 200
    counts = batch_counts(request.POST, request.POST.getlist) if request.method == "POST" else None
    return render(request, "simulation/batch_form.html", {"form": form, "report": report, "counts": counts}, status=status)


@run_required
@require_GET
def batch_count(request: HttpRequest) -> HttpResponse:
    """Return the conversations and LLM calls the new-batch form describes (htmx, as it changes)."""
    counts = batch_counts(request.GET, request.GET.getlist)
    return render(request, "simulation/_batch_counts.html", {"counts": counts})


def _progress_context(request: HttpRequest, code: str) -> dict:
    batch = reads.batch_get_for_user(request.user, code=code)
    status = request.GET.get("status") or None
    if status not in SimulationRun.Status.values:
        status = None
    page = Paginator(reads.batch_runs(batch, status=status), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return {
        "batch": batch,
        "progress": reads.batch_progress(batch),
        "errors": reads.batch_error_groups(batch),
        "page": page,
        "status_filter": status or "",
        "statuses": SimulationRun.Status.choices,
        "can_run": reads.batch_may_act(request.user, batch),  # its buttons: cancel, resume
        "query": request.GET.urlencode(),
        "outage": batch_outage(batch),
    }


@corpus_required
def batch_detail(request: HttpRequest, code: str) -> HttpResponse:
    return render(request, "simulation/batch_detail.html", _progress_context(request, code))


@corpus_required
def batch_progress(request: HttpRequest, code: str) -> HttpResponse:
    """Return the progress panel and run table alone (polled by htmx every few seconds)."""
    return render(request, "simulation/_batch_progress.html", _progress_context(request, code))


@require_POST
@run_required
def batch_cancel(request: HttpRequest, code: str) -> HttpResponse:
    batch = reads.batch_get_for_user(request.user, code=code, act=True)
    try:
        simulation_batch_cancel(batch_id=batch.pk)
        messages.success(request, f"Batch {batch.code} cancelled; running conversations stop before their next call.")
    except SimulationError as exc:
        messages.error(request, str(exc))
    return redirect("simulation:batch-detail", code=batch.code)


@require_POST
@run_required
def batch_resume(request: HttpRequest, code: str) -> HttpResponse:
    batch = reads.batch_get_for_user(request.user, code=code, act=True)
    include_failed = request.POST.get("include_failed") == "1"
    if preflight_enabled():
        # Resuming into the same refusal helps nobody: every model the resumed runs call answers first.
        report = batch_resume_preflight(batch, include_failed=include_failed).seen_by(request.user)
        if not report.ok:
            context = {**_progress_context(request, code), "report": report, "refused": "nothing was resumed",
                       "include_failed": include_failed}
            return render(request, "simulation/batch_detail.html", context, status=400)
    simulation_batch_resume(batch_id=batch.pk, include_failed=include_failed)
    messages.success(request, f"Batch {batch.code} resumed: conversations continue after their last saved message.")
    return redirect("simulation:batch-detail", code=batch.code)


@corpus_required
def prompt_template_list(request: HttpRequest) -> HttpResponse:
    prompt_templates_ensure_builtin()
    return render(
        request,
        "simulation/prompttemplate_list.html",
        {"templates": reads.prompt_template_list_for_user(request.user), "can_run": reads.can_run_simulations(request.user)},
    )


@corpus_required
def prompt_template_detail(request: HttpRequest, pk: int) -> HttpResponse:
    template = reads.prompt_template_get(request.user, pk=pk)
    return render(request, "simulation/prompttemplate_detail.html", {"template": template})


@run_required
def prompt_template_new(request: HttpRequest) -> HttpResponse:
    form = PromptTemplateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            template, created = prompt_template_create(
                kind=data["kind"], key=data["key"], text=data["text"], name=data["name"],
                description=data["description"], created_by=request.user,
            )
        except TemplateError as exc:
            form.add_error(None, str(exc))
        else:
            verb = "Stored" if created else "Already stored as"
            messages.success(request, f"{verb} {template.key} v{template.version}.")
            return redirect("simulation:prompt-template-detail", pk=template.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "simulation/prompttemplate_form.html", {"form": form}, status=status)

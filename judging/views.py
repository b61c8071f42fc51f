"""Judging pages: researchers and admins manage, coordinators look, raters never see them."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.locks import withheld_note
from core.permissions import role_required
from judging import selectors, services
from judging.errors import JudgingError
from judging.exports import FORMATS, export_csv, withheld_count
from judging.forms import JudgeForm, JudgeRunForm, PromptForm
from judging.guidance import guidance_rows
from judging.judges import judge_clone_initial
from judging.launch import RunCounts, judges_preflight, run_counts, run_retry_preflight
from judging.models import JudgeMode, JudgeRun
from judging.outages import run_outage
from judging.sources import judge_previous_version_runs
from simulation.preflight import PreflightReport
from simulation.preflight import enabled as preflight_enabled


class LaunchRefused(Exception):
    """The launch check failed: carries the report to show."""

    def __init__(self, report: PreflightReport):
        super().__init__(report.message())
        self.report = report

view_required = role_required(selectors.can_view_judging)
manage_required = role_required(selectors.can_manage_judging)


@view_required
def judge_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "judging/judge_list.html",
        {
            "judges": selectors.judge_list_for_user(request.user),
            "can_manage": selectors.can_manage_judging(request.user),
        },
    )


@manage_required
def judge_create(request: HttpRequest) -> HttpResponse:
    form = JudgeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            judge = services.judge_create(**form.cleaned_data, created_by=request.user)
        except JudgingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Judge {judge.name} created ({judge.get_mode_display()}).")
            return redirect("judging:judge-detail", pk=judge.pk)
    return render(request, "judging/judge_form.html", {"form": form}, status=400 if form.errors else 200)


@manage_required
def judge_clone(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a new version of a judge from its settings; the original and its runs stay as they are."""
    original = selectors.judge_get(request.user, pk=pk)
    initial = judge_clone_initial(original)
    initial["params"] = json.dumps(initial["params"] or {})
    initial["item_guidance"] = json.dumps(initial["item_guidance"] or {}, ensure_ascii=False, indent=1)
    form = JudgeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            judge = services.judge_create(**form.cleaned_data, created_by=request.user, cloned_from=original)
        except JudgingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Judge {judge.name} created as a new version of {original.name}.")
            return redirect("judging:judge-detail", pk=judge.pk)
    return render(
        request, "judging/judge_form.html", {"form": form, "original": original}, status=400 if form.errors else 200
    )


@view_required
def judge_detail(request: HttpRequest, pk: int) -> HttpResponse:
    judge = selectors.judge_get(request.user, pk=pk)
    return render(
        request, "judging/judge_detail.html",
        {"judge": judge, "can_manage": selectors.can_manage_judging(request.user),
         "versions": judge_previous_version_runs(judge, user=request.user), "guidance": guidance_rows(judge)},
    )


@view_required
def prompt_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "judging/prompt_list.html",
        {"prompts": selectors.prompt_list_for_user(request.user), "can_manage": selectors.can_manage_judging(request.user)},
    )


@view_required
def prompt_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "judging/prompt_detail.html", {"prompt": selectors.prompt_get(request.user, pk=pk)})


@manage_required
def prompt_create(request: HttpRequest) -> HttpResponse:
    mode = request.GET.get("mode", JudgeMode.CHECKLIST)
    form = PromptForm(request.POST or None, initial=PromptForm.initial_for(mode))
    if request.method == "POST" and form.is_valid():
        try:
            prompt, created = services.prompt_create(**form.cleaned_data, created_by=request.user)
        except JudgingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Stored {prompt}." if created else f"Identical to {prompt}; nothing new stored.")
            return redirect("judging:prompt-detail", pk=prompt.pk)
    return render(request, "judging/prompt_form.html", {"form": form}, status=400 if form.errors else 200)


@view_required
def run_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.run_list_for_user(request.user), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "judging/run_list.html",
        {"page": page, "can_manage": selectors.can_manage_judging(request.user)},
    )


@manage_required
def run_create(request: HttpRequest) -> HttpResponse:
    form = JudgeRunForm(request.POST or None, user=request.user)
    report = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            ids, selection = selectors.conversation_ids_for_judging(
                batch_ids=data["batch_ids"],
                persona_set_ids=[p.pk for p in data.get("persona_sets") or []],
                study_id=data["study"].pk if data.get("study") else None,
                codes=data["codes"],
                include_flagged=data["include_flagged"],
                user=request.user,
            )
            report = judges_preflight(list(data["judges"])).seen_by(request.user) if preflight_enabled() else None
            if report is not None and not report.ok:
                raise LaunchRefused(report)
            run = services.judge_run_create(
                judges=list(data["judges"]),
                conversation_ids=ids,
                selection=selection,
                instances=data["instances"],
                independent_instances=data["independent_instances"],
                use_cache=data["use_cache"],
                name=data["name"],
                created_by=request.user,
            )
        except LaunchRefused as exc:
            report = exc.report
            form.add_error(None, "The launch check failed, so nothing was started. Fix what is listed below and start again.")
        except JudgingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Run {run.pk} started: {run.n_total} judgement(s).")
            return redirect("judging:run-detail", pk=run.pk)
    counts = _counts(request.POST, request.user) if request.method == "POST" else None
    return render(request, "judging/run_form.html", {"form": form, "report": report, "counts": counts}, status=400 if form.errors else 200)


def _counts(data: Any, user: Any) -> RunCounts:
    """Count what the new-run form describes so far (leniently: a half-filled form says what is missing)."""
    form = JudgeRunForm(data, user=user)
    form.is_valid()
    cleaned = form.cleaned_data
    judges = list(cleaned.get("judges") or [])
    if not judges:
        return RunCounts(missing="Choose one or more judges")
    if not (cleaned.get("batch_ids") or cleaned.get("persona_sets") or cleaned.get("study") or cleaned.get("codes")):
        return RunCounts(missing="Choose conversations")
    try:
        ids, selection = selectors.conversation_ids_for_judging(
            batch_ids=cleaned.get("batch_ids"), persona_set_ids=[p.pk for p in cleaned.get("persona_sets") or []],
            study_id=cleaned["study"].pk if cleaned.get("study") else None, codes=cleaned.get("codes"),
            include_flagged=bool(cleaned.get("include_flagged")), user=user,
        )
    except JudgingError as exc:
        return RunCounts(missing=str(exc)[:1].upper() + str(exc)[1:])
    return run_counts(
        judges=judges, conversation_ids=ids, selection=selection, instances=cleaned.get("instances") or 1,
        independent_instances=bool(cleaned.get("independent_instances")), use_cache=bool(cleaned.get("use_cache")),
        launch_check=preflight_enabled(),
    )


@manage_required
@require_GET
def run_count(request: HttpRequest) -> HttpResponse:
    """Return the judgements and LLM calls the new-run form describes (htmx, as it changes)."""
    return render(request, "judging/_run_counts.html", {"counts": _counts(request.GET, request.user)})


def _run_context(request: HttpRequest, run: JudgeRun) -> dict:
    overview = selectors.run_overview(run)
    page = Paginator(selectors.run_conversations(run), 50).get_page(request.GET.get("page"))
    open_votes = selectors.no_majority_counts(run, [c.pk for c in page.object_list])
    rows = [(c, open_votes.get(c.pk, 0)) for c in page.object_list]
    return {
        "run": run,
        "overview": overview,
        "page": page,
        "rows": rows,
        "formats": FORMATS,
        "errors": selectors.run_error_groups(run),
        "can_manage": selectors.run_may_act(request.user, run),  # its buttons: cancel, retry
        "stalled": selectors.run_stalled_count(run),
        "seconds_left": selectors.run_seconds_left(run),
        "outage": run_outage(run),
    }


@view_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get_for_user(request.user, pk=pk)
    return render(request, "judging/run_detail.html", _run_context(request, run))


@view_required
def run_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Return the progress panel; htmx polls it while the run is going."""
    run = selectors.run_get_for_user(request.user, pk=pk)
    context = {
        "run": run,
        "errors": selectors.run_error_groups(run),
        "stalled": selectors.run_stalled_count(run),
        "can_manage": selectors.can_manage_judging(request.user),
        "seconds_left": selectors.run_seconds_left(run),
        "outage": run_outage(run),
    }
    response = render(request, "judging/_run_progress.html", context)
    if getattr(request, "htmx", False) and run.is_finished and request.GET.get("polling"):
        response["HX-Refresh"] = "true"  # the run just ended: reload to show results and failures
    return response


@view_required
def run_conversation(request: HttpRequest, pk: int, code: str) -> HttpResponse:
    run = selectors.run_get_for_user(request.user, pk=pk)
    data = selectors.conversation_judgements(request.user, run=run, code=code)
    return render(request, "judging/run_conversation.html", {"data": data, "run": run})


@view_required
def run_export(request: HttpRequest, pk: int, fmt: str) -> StreamingHttpResponse:
    run = selectors.run_get_for_user(request.user, pk=pk)
    response = StreamingHttpResponse(export_csv(JudgeRun.objects.filter(pk=run.pk), fmt), content_type="text/csv")
    # An export taken while results are still open says so in its name, not only on the page.
    suffix = "" if run.is_finished else "-INCOMPLETE"
    response["Content-Disposition"] = f'attachment; filename="judge-run-{run.pk}-{fmt}{suffix}.csv"'
    response["X-Evalsite-Complete"] = "true" if run.is_finished else "false"
    withheld = withheld_count(JudgeRun.objects.filter(pk=run.pk))
    if withheld:
        response["X-Evalsite-Withheld"] = withheld_note(withheld)
    return response


@manage_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get_for_user(request.user, pk=pk, act=True)
    try:
        services.judge_run_cancel(run=run)
        messages.success(request, "Run cancelled; judgements under way stop at their next step and store nothing.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return redirect("judging:run-detail", pk=run.pk)


@manage_required
@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get_for_user(request.user, pk=pk, act=True)
    if preflight_enabled():
        # Retrying into the same refusal helps nobody: check the judges as they are now first.
        report = run_retry_preflight(run).seen_by(request.user)
        if not report.ok:
            for check in report.failed:
                messages.error(request, f"Not retried: {check.used_by} ({check.model}) fails the launch check: {check.problem}. {check.hint}")
            return redirect("judging:run-detail", pk=run.pk)
    try:
        n = services.judge_run_retry_failed(run=run)
        messages.success(request, f"{n} stalled or failed judgement(s) scheduled again.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return redirect("judging:run-detail", pk=run.pk)

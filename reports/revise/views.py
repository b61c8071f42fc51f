"""The revise page: from an item a judge got wrong, a new version with that item's instruction edited, run on the development set."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from core.permissions import role_required
from judging.launch import judges_preflight
from judging.selectors import can_manage_judging
from reports.errors import ReportsError
from reports.revise import selectors, services
from simulation.preflight import enabled as preflight_enabled

manage_required = role_required(can_manage_judging)


@manage_required
def devset_revise(request: HttpRequest, pk: int) -> HttpResponse:
    """Show an item's instruction for a judge version; on POST create the next version and run it on the development set."""
    study = selectors.study_for_revision(request.user, pk)
    # The form posts back to this URL, query string included: the version and item come from it.
    plan = selectors.revise_plan(study, request.GET.get("run"), request.GET.get("judge"), request.GET.get("item"))
    instruction = plan.current
    name = plan.default_name
    error, status = "", 200
    if request.method == "POST":
        instruction = request.POST.get("instruction", "")
        name = request.POST.get("name", "").strip() or plan.default_name
        try:
            if preflight_enabled() and plan.split is not None:
                # The new version calls the same model the same way: check it before anything is created.
                report = judges_preflight([plan.judge])
                if not report.ok:
                    raise ReportsError(f"The launch check failed, so nothing was created: {report.message()}")
            run = services.judge_revise(study=study, run=plan.run, judge=plan.judge, item_key=plan.target.key,
                                        instruction=instruction, name=name, actor=request.user)
        except ReportsError as exc:
            error, status = str(exc), exc.status
        else:
            messages.success(request, f"{run.judges.get().name} created; its run on {run.n_total} development-set "
                                      "conversation(s) has started. This page links to the flips.")
            return redirect("judging:run-detail", pk=run.pk)
    context = {
        "study": study, "plan": plan, "instruction": instruction, "name": name, "error": error,
        "revisions": [(r, selectors.flips_url(r)) for r in plan.revisions],
    }
    return render(request, "reports/devset_revise.html", context, status=status)

"""The judge development page: the split, the development-set comparisons, final versions and test-set looks.

Readers of a study's reports (its researchers and coordinators, admins) see everything here;
only the study's coordinators (and admins) split it; only researchers (and admins) declare a
version final and evaluate the test set. Others get 404, as on every report page.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.studies.selectors import user_manages_study
from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role
from reports import selectors as report_reads
from reports.devset import selectors, services
from reports.devset import summary as reads
from reports.errors import ReportsError
from reports.models import ReportStatus

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)


def _back(pk: int, anchor: str = "") -> HttpResponse:
    return redirect(reverse("reports:development", args=[pk]) + (f"#{anchor}" if anchor else ""))


def _na(request: HttpRequest) -> str:
    return "exclude" if request.GET.get("na") == "exclude" else "category"


def _int(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _plot(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """Return the development-set kappa of each version with its interval, and what is not drawn and why.

    An undefined or collapsed interval is said in words, never drawn (as on every report page).
    """
    points, not_drawn = [], []
    for r in rows:
        ci = r.get("kappa_ci") or {}
        name = f"{r['short']} · run {r['run']}" + (f" [{r['label_set']}]" if r.get("label_set") else "")
        if r.get("kappa") is None:
            not_drawn.append(f"{r['label']}: no kappa (nothing compared, or one label only)")
        elif ci.get("low") is None or ci.get("low") == ci.get("high"):
            not_drawn.append(f"{r['label']}: κ {r['kappa']:.2f}, its interval collapsed to a point")
        else:
            points.append({"label": name, "x": r["kappa"], "low": ci["low"], "high": ci["high"], "final": r["declared_final"]})
    return json.dumps(points), not_drawn


@roles_required(*REPORT_ROLES)
def development(request: HttpRequest, pk: int) -> HttpResponse:
    """Show the split, every version on the development set, the final versions and the looks at the test set."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    na = _na(request)
    summary = reads.development_summary(study)
    versions = reads.development_versions(study, na=na, wait=False)
    pending = next((r for r in versions if r.get("pending")), None)
    plot, not_drawn = _plot([r for r in versions if not r.get("pending") and not r.get("empty")])
    may_look = selectors.user_may_look(request.user)
    context = {
        "study": study,
        "data": summary,
        "versions": versions,
        "pending": {"job": pending["job"], "progress": pending.get("progress") or 0, "stage": "comparing versions on the development set"}
        if pending and pending.get("job") else None,
        "plot": plot,
        "not_drawn": not_drawn,
        "na": na,
        "may_split": user_manages_study(request.user, study),
        "may_look": may_look,
        "choices": selectors.version_choices(study) if may_look and summary["split"] else [],
        "next_look": summary["test_set_looks"]["count"] + 1,
    }
    return render(request, "reports/devset.html", context)


@require_POST
@roles_required(*REPORT_ROLES)
def development_split(request: HttpRequest, pk: int) -> HttpResponse:
    """Split the study (coordinators of the study and admins): test size, optional seed, reason when split again."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    if not user_manages_study(request.user, study):
        raise Http404("not found")
    n_test, seed_text = _int(request.POST.get("n_test")), (request.POST.get("seed") or "").strip()
    if n_test is None:
        messages.error(request, "The test set size must be a whole number of conversations.")
        return _back(pk, "split")
    if seed_text and not seed_text.isdigit():
        messages.error(request, "The seed must be a whole number of 0 or more, or left blank for a random one.")
        return _back(pk, "split")
    try:
        split = services.split_make(study=study, actor=request.user, n_test=n_test, seed=int(seed_text) if seed_text else None,
                                    reason=request.POST.get("reason", ""))
    except ReportsError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Split {split.number} made: {split.n_dev} development and {split.n_test} test conversations, "
                                  f"seed {split.seed} (recorded in the study's audit trail).")
    return _back(pk, "split")


@require_POST
@roles_required(Role.RESEARCHER, Role.ADMIN)
def development_declare(request: HttpRequest, pk: int) -> HttpResponse:
    """Declare a version (a run's ensemble or one judge) final: researchers of the study and admins."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    run_text, _, source = (request.POST.get("version") or "").partition("|")
    run = selectors.study_run(study, int(run_text)) if run_text.isdigit() else None
    if run is None:
        messages.error(request, "Choose a judge version of this study.")
        return _back(pk, "test-set")
    try:
        declaration, created = services.final_declare(study=study, run=run, source=source, actor=request.user,
                                                      note=request.POST.get("note", ""))
    except ReportsError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{declaration.label} declared final." if created else f"{declaration.label} was already declared final.")
    return _back(pk, "test-set")


@require_POST
@roles_required(Role.RESEARCHER, Role.ADMIN)
def development_evaluate(request: HttpRequest, pk: int) -> HttpResponse:
    """Evaluate a declared-final version on the test set: one recorded look (researchers and admins)."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    split = selectors.split_current(study)
    number = _int(request.POST.get("declaration"))
    declaration = selectors.declaration_get(split, number) if split is not None and number else None
    if declaration is None:
        messages.error(request, "Only a version declared final can be evaluated on the test set: declare it first.")
        return _back(pk, "test-set")
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: every look at the test set is recorded and counted.")
        return _back(pk, "test-set")
    na = "exclude" if request.POST.get("na") == "exclude" else "category"
    try:
        look, created = services.test_set_evaluate(study=study, declaration=declaration, actor=request.user, na=na)
    except ReportsError as exc:
        messages.error(request, str(exc))
        return _back(pk, "test-set")
    if created:
        messages.success(request, f"Look {look.number} at the test set recorded ({declaration.label}).")
    else:
        messages.info(request, f"This version was already evaluated on the same test data (look {look.number}): its stored "
                               "result is shown, and no new look was counted.")
    return redirect("reports:development-look", pk=study.pk, look_id=look.pk)


@roles_required(*REPORT_ROLES)
def development_look(request: HttpRequest, pk: int, look_id: int) -> HttpResponse:
    """Show a look's stored test-set result (reading it again is not a new look)."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    look = selectors.look_get(study, look_id)
    if look is None:
        raise Http404("no such look")
    data = look.payload if look.status == ReportStatus.READY else None
    return render(request, "reports/devset_look.html", {
        "study": study, "look": look, "data": data, "split": selectors.split_current(study),
        "may_look": selectors.user_may_look(request.user),
        "summary": reads.looks_summary(study),
    }, status=200 if look.status == ReportStatus.READY else 202)


@roles_required(*REPORT_ROLES)
def development_look_state(request: HttpRequest, pk: int, look_id: int) -> JsonResponse:
    """Return a look's progress for the page's poll."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    look = selectors.look_get(study, look_id)
    if look is None:
        raise Http404("no such look")
    return JsonResponse({"pending": look.status != ReportStatus.READY, "status": look.status, "progress": look.progress,
                         "stage": look.stage, "error": look.error})


def _ci(ci: dict[str, Any] | None) -> list[Any]:
    return [None, None] if not ci else [ci.get("low"), ci.get("high")]


@roles_required(*REPORT_ROLES)
def development_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    """Download the split's conversations, the development-set figures or the register of looks as CSV."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    if table == "split":
        split = selectors.split_current(study)
        if split is None:
            raise Http404("the study is not split")
        rows = selectors.split_rows(split)
        header = ["conversation", "set", "chatbot", "persona", "stratum"]
        return csv_response(f"study-{study.pk}-split-{split.number}.csv", [*header, "split", "seed"],
                            [[r[k] for k in header] + [split.number, split.seed] for r in rows])  # type: ignore[return-value]
    if table == "versions":
        versions = reads.development_versions(study, na=_na(request), wait=True)
        header = ["run", "source", "version", "label_set", "n", "n_conversations", "percent_agreement", "agreement_ci_low",
                  "agreement_ci_high", "cohen_kappa", "kappa_ci_low", "kappa_ci_high", "alt_test_verdict", "alt_test_passed",
                  "winning_rate", "advantage_probability", "declared_final", "note"]
        rows = [[r["run"], r.get("source"), r.get("label"), r.get("label_set"), r.get("n"), r.get("n_conversations"),
                 r.get("agreement"), *_ci(r.get("agreement_ci")), r.get("kappa"), *_ci(r.get("kappa_ci")),
                 r.get("alt_test_verdict"), r.get("alt_test_passed"), r.get("winning_rate"), r.get("advantage_probability"),
                 r.get("declared_final"), r.get("empty", "")] for r in versions]
        return csv_response(f"study-{study.pk}-development-set.csv", header, rows)  # type: ignore[return-value]
    if table == "looks":
        summary = reads.looks_summary(study)
        header = ["split", "look", "version", "run", "source", "looked_by", "looked_at", "na_policy", "status"]
        rows = [[lk["split"], lk["number"], lk["version"], lk["run"], lk["source"], lk["looked_by"], lk["looked_at"],
                 lk["na_policy"], lk["status"]] for lk in summary["looks"]]
        return csv_response(f"study-{study.pk}-test-set-looks.csv", header, rows)  # type: ignore[return-value]
    raise Http404("no such table")


@roles_required(*REPORT_ROLES)
def development_look_csv(request: HttpRequest, pk: int, look_id: int) -> HttpResponse:
    """Download a look's test-set verdict: agreement and kappa with intervals, the alt-test pooled and per item."""
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    look = selectors.look_get(study, look_id)
    if look is None or look.status != ReportStatus.READY:
        raise Http404("no stored result for this look")
    header = ["split", "look", "version", "label_set", "scope", "n", "n_conversations", "percent_agreement", "agreement_ci_low",
              "agreement_ci_high", "cohen_kappa", "kappa_ci_low", "kappa_ci_high", "alt_test_verdict", "alt_test_passed",
              "epsilon", "winning_rate", "advantage_probability", "n_instances"]
    rows = []
    for group in look.payload.get("groups", []):
        labels = " / ".join(group["labels"])
        tests = group.get("alt_test") or {}
        scopes = [("pooled", group.get("vs_consensus") or [])] + list((group.get("per_item") or {}).items())
        for scope, comps in scopes:
            for c in comps:
                test = tests.get(str(c["rater"])) or {}
                t = test if scope == "pooled" else (test.get("items") or {}).get(scope) or {}
                rows.append([look.split.number, look.number, look.declaration.label, labels, scope, c["n"], c.get("n_conversations"),
                             c["percent_agreement"], *_ci(c.get("agreement_ci")), c["cohen_kappa"], *_ci(c.get("kappa_ci")),
                             t.get("verdict"), t.get("passed"), t.get("epsilon"), t.get("winning_rate"),
                             t.get("advantage_probability"), t.get("n_instances")])
    return csv_response(f"study-{study.pk}-test-set-look-{look.split.number}-{look.number}.csv", header, rows)  # type: ignore[return-value]

"""The evidence agreement page and its CSV."""

from __future__ import annotations

import json

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from core.csvstream import csv_response
from core.permissions import roles_required
from reports import selectors as report_reads
from reports.evidence import services
from reports.views import REPORT_ROLES


def _run_id(request: HttpRequest) -> int | None:
    value = request.GET.get("run")
    return int(value) if value and value.isdigit() else None


@roles_required(*REPORT_ROLES)
def evidence_agreement(request: HttpRequest, pk: int) -> HttpResponse:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    runs = list(report_reads.judge_runs_for_study(study)[:50])
    run_id = _run_id(request) or (runs[0].pk if runs else None)
    if run_id and run_id not in {r.pk for r in runs} and not report_reads.judge_runs_for_study(study).filter(pk=run_id).exists():
        raise Http404("no such judge run for this study")
    data = services.study_evidence_agreement(study=study, run_id=run_id, wait=False) if run_id else None
    context = {"study": study, "runs": runs, "run_id": run_id, "data": data}
    if data and data.get("pending"):
        return render(request, "reports/evidence_agreement.html", {**context, "pending": data}, status=202)
    context["chart"] = json.dumps(services.chart_points(data or {}))
    return render(request, "reports/evidence_agreement.html", context)


@roles_required(*REPORT_ROLES)
def evidence_agreement_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    run_id = _run_id(request)
    if not run_id or not report_reads.judge_runs_for_study(study).filter(pk=run_id).exists():
        raise Http404("choose a judge run of this study")
    data = services.study_evidence_agreement(study=study, run_id=run_id)
    return csv_response(f"study-{study.pk}-run-{run_id}-evidence-agreement.csv", services.CSV_HEADER,  # type: ignore[return-value]
                        services.csv_rows(data))

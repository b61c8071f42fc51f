"""The rater drift and load page and its CSV."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.csvstream import stream_csv
from core.permissions import roles_required
from core.roles import Role
from reports import selectors as report_reads
from reports.raters import services

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)


def _order(request: HttpRequest) -> str:
    return "submitted" if request.GET.get("order") == "submitted" else "queue"


@roles_required(*REPORT_ROLES)
def raters(request: HttpRequest, pk: int) -> HttpResponse:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    data = services.rater_drift(study=study, order=_order(request))
    return render(request, "reports/raters.html", {"study": study, "data": data, "order": _order(request)})


@roles_required(*REPORT_ROLES)
def raters_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    data = services.rater_drift(study=study, order=_order(request))
    response = HttpResponse("".join(stream_csv(services.CSV_HEADER, services.csv_rows(data))), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-raters-by-{_order(request)}-position.csv"'
    return response

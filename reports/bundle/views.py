"""The publication bundle download (a study's reports index links to it)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import roles_required
from reports import selectors
from reports.bundle.export import study_bundle_zip
from reports.bundle.lock import bundle_refusal
from reports.views import REPORT_ROLES


@roles_required(*REPORT_ROLES)
def study_bundle(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    refusal = bundle_refusal(study)
    if refusal:
        return render(request, "reports/bundle_locked.html", {"study": study, "refusal": refusal}, status=409)
    response = HttpResponse(study_bundle_zip(study=study), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-bundle.zip"'
    return response

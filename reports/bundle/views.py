"""The publication bundle's page and download (a study's reports index links to the page).

The page asks for the bundle: while a worker builds it, the reports' progress bar (polled, the
page reloads once it is built); once built, its facts and the download. The download streams the
stored file; asked for before the file exists, it leads to the page. Both refuse while the
study's test set is locked (``reports.bundle.lock``).
"""

from __future__ import annotations

from typing import BinaryIO

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_safe

from annotation.models import Study
from core.permissions import roles_required
from reports import selectors
from reports.bundle.build import study_bundle_get, study_bundle_open
from reports.bundle.lock import bundle_refusal
from reports.views import REPORT_ROLES


def _readable(request: HttpRequest, pk: int) -> tuple[Study, HttpResponse | None]:
    """Return the study (404 unless the user reads its reports) and, while its test set is locked, the refusal page."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    refusal = bundle_refusal(study)
    if not refusal:
        return study, None
    return study, render(request, "reports/bundle_locked.html", {"study": study, "refusal": refusal}, status=409)


@require_safe
@roles_required(*REPORT_ROLES)
def study_bundle(request: HttpRequest, pk: int) -> HttpResponse:
    study, refused = _readable(request, pk)
    if refused is not None:
        return refused
    state = study_bundle_get(study=study)
    if state.get("pending"):
        return render(request, "reports/bundle.html", {"study": study, "pending": state}, status=202)
    built_at = parse_datetime(str(state.get("built_at") or ""))
    return render(request, "reports/bundle.html", {"study": study, "bundle": state, "built_at": built_at})


@require_safe
@roles_required(*REPORT_ROLES)
def study_bundle_download(request: HttpRequest, pk: int) -> HttpResponse:
    study, refused = _readable(request, pk)
    if refused is not None:
        return refused
    _, stream = study_bundle_open(study=study)
    if stream is None:  # being built: the page shows its progress, then offers the download
        return redirect("reports:study-bundle", pk=study.pk)
    return bundle_download(study, stream)


def bundle_download(study: Study, stream: BinaryIO) -> FileResponse:
    """Return the stored bundle as the download both the page and the API give (streamed, named by study)."""
    return FileResponse(stream, as_attachment=True, filename=f"study-{study.pk}-bundle.zip", content_type="application/zip")

"""The publication bundle's page while a worker builds it and after (issue 32), in Chromium at 390 and 1366 px:
the reports' progress box with the build's stage, the page reloading itself once the file is stored, then the
download of that file, with axe and the layout check."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.utils import timezone

import reports.bundle.build as build
from annotation.management.commands.seed_demo import DEMO_USERS
from annotation.models import Study
from reports import jobs
from reports.models import ReportCache, ReportStatus
from reports.tasks import report_compute_task
from tests.browser.conftest import fits, log_in, screenshot

WIDTHS = {"390": (390, 844), "1366": (1366, 900)}
PASSWORDS = {name: password for name, _, password in DEMO_USERS}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_bundle_page_shows_the_build_then_offers_the_stored_file(page, width, monkeypatch):
    monkeypatch.setattr(jobs, "runs_inline", lambda: False)  # as in production: the live server's requests queue, never build
    call_command("seed_demo", "--quiet-logins")
    study = Study.objects.order_by("pk").first()
    params = {"study": study.pk}
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "coordinator", PASSWORDS["coordinator"])
    # The job as the page queues it, taken by a worker that is drawing the charts (no worker in this test).
    now = timezone.now()
    job = ReportCache.objects.create(
        key=jobs.report_key(build.KIND, params), kind=build.KIND, params=params, data_version=jobs.data_version(build.KIND, params),
        status=ReportStatus.COMPUTING, progress=0.5, stage="charts: drawing 18 charts as PNG and SVG", started_at=now, queued_at=now)
    page.goto(f"/reports/studies/{study.pk}/bundle/")
    box = page.wait_for_selector("#report-pending")
    assert "Building the publication bundle" in box.inner_text() and "charts: drawing 18 charts" in box.inner_text()
    assert page.locator("#bundle-download").count() == 0
    fits(page)
    screenshot(page, f"bundle-building-{width}")
    # The worker builds and stores it; the page's poll sees it done and reloads by itself.
    assert report_compute_task(job.pk) == ReportStatus.READY
    page.wait_for_selector("#bundle-ready", timeout=20000)
    assert page.locator("#report-pending").count() == 0
    link = page.locator("#bundle-download")
    assert link.is_visible() and "Download the bundle" in link.inner_text()
    fits(page)
    screenshot(page, f"bundle-ready-{width}")
    with page.expect_download() as download:
        link.click()
    stored = build.bundle_dir() / ReportCache.objects.get(pk=job.pk).payload["file"]
    assert download.value.suggested_filename == f"study-{study.pk}-bundle.zip"
    assert open(download.value.path(), "rb").read() == stored.read_bytes()

"""The consensus page while a worker computes it and after (issue 28, defect 5), in Chromium at
390 and 1366 px: the progress box, the page reloading itself when the job is done, the "last
computed" line saying up to date, with axe and the layout check."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from annotation.consensus.jobs import consensus_job_run
from annotation.management.commands.seed_demo import DEMO_USERS
from annotation.models import ConsensusJob, Study
from tests.browser.conftest import fits, log_in, screenshot

WIDTHS = {"390": (390, 844), "1366": (1366, 900)}
PASSWORDS = {name: password for name, _, password in DEMO_USERS}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_consensus_page_shows_the_workers_progress_then_reloads_up_to_date(page, width):
    call_command("seed_demo", "--quiet-logins")
    study = Study.objects.filter(consensus__isnull=False).distinct().order_by("pk").first()
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "coordinator", PASSWORDS["coordinator"])
    # A job as the page's button queues it, waiting for a worker (no worker in this test).
    # queued_at set as consensus_request sets it: a job without one reads as a lost message,
    # which any sweep sends again at once.
    job = ConsensusJob.objects.create(study=study, stage="queued: waiting for a worker", queued_at=timezone.now(),
                                      requested_by=User.objects.get(username="coordinator"))
    page.goto(f"/studies/{study.pk}/consensus/")
    page.wait_for_selector("#report-pending")
    assert "Computing the consensus" in page.locator("#report-pending").inner_text()
    assert page.locator("#compute-consensus").count() == 0
    fits(page)
    screenshot(page, f"consensus-computing-{width}")
    page.locator("#report-pending").scroll_into_view_if_needed()
    screenshot(page, f"consensus-computing-{width}-box", a11y=False, full_page=False)
    # The worker does it; the page's poll sees it done and reloads by itself.
    assert consensus_job_run(job_id=job.pk) == "ready"
    page.wait_for_selector("#report-pending", state="detached", timeout=15000)
    marker = page.locator("#consensus-marker").inner_text()
    assert "Last computed" in marker and "Up to date" in marker and "0 labels changed" in marker
    assert page.locator("#report-pending").count() == 0 and page.locator("#compute-consensus").is_visible()
    fits(page)
    screenshot(page, f"consensus-computed-{width}")

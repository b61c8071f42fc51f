"""A cold report is computed by a real worker while the page shows its progress."""

from __future__ import annotations

import time

import pytest

from tests.conftest import client_for
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.integration


def test_a_cold_reliability_report_is_computed_by_the_worker_and_then_served(celery_worker_process):
    audit = build_report_study(n_conversations=30, prefix="w")
    client = client_for(audit.coordinator)
    url = f"/reports/studies/{audit.study.pk}/reliability/"
    first = client.get(url)
    assert first.status_code == 202 and "Computing this report" in first.content.decode()
    job = first.context["pending"]["job"]
    states = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = client.get(f"/reports/jobs/{job}/").json()
        states.append(state)
        if not state["pending"] or state["status"] == "failed":
            break
        time.sleep(0.3)
    assert states[-1]["status"] == "ready", states[-1]
    done = client.get(url)
    assert done.status_code == 200 and 'id="reliability-table"' in done.content.decode()
    # The worker wrote the methods paragraph from the payload it computed (reports.methods via reports.jobs).
    methods = done.context["data"]["methods"]
    assert methods["text"].startswith("Inter-rater reliability was computed from") and 'class="methods-block"' in done.content.decode()
    again = client.get(url)
    assert again.context["data"]["_cache"]["hit"] is True


def test_a_look_at_the_test_set_is_counted_at_once_and_computed_by_the_worker(celery_worker_process):
    """The researcher's "Evaluate on the test set" records look 1 in the request; a real worker
    computes and stores its result while the look page shows its progress."""
    from reports.devset.services import final_declare, split_make
    from reports.models import HoldoutLook
    from tests.support.devset_study import build_devset_study

    dev = build_devset_study(prefix="wl")
    split_make(study=dev.study, actor=dev.coordinator, n_test=12, seed=3)
    declaration, _ = final_declare(study=dev.study, run=dev.run_v2, source=f"judge:{dev.judge_v2.pk}", actor=dev.researcher)
    client = client_for(dev.researcher)
    response = client.post(f"/reports/studies/{dev.study.pk}/development/evaluate/",
                           {"declaration": declaration.pk, "confirm": "yes"})
    assert response.status_code == 302
    look = HoldoutLook.objects.get()
    assert look.number == 1  # counted when asked for, before any result exists
    states = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = client.get(f"/reports/studies/{dev.study.pk}/development/looks/{look.pk}/state/").json()
        states.append(state)
        if not state["pending"] or state["status"] == "failed":
            break
        time.sleep(0.3)
    assert states[-1]["status"] == "ready", states[-1]
    page = client.get(f"/reports/studies/{dev.study.pk}/development/looks/{look.pk}/")
    assert page.status_code == 200 and "The verdict on the test set" in page.content.decode()
    assert HoldoutLook.objects.count() == 1


def test_the_consensus_is_computed_by_the_worker_while_the_page_shows_its_progress(celery_worker_process):
    """Issue 28, defect 5: the request only queues; a real worker computes; the page then says it is up to date."""
    from annotation.models import ConsensusJob, ConsensusLabel

    audit = build_report_study(n_conversations=30, prefix="cw")
    ConsensusLabel.objects.filter(study=audit.study).delete()  # the builder computed it in place
    client = client_for(audit.coordinator)
    queued = client.post(f"/studies/{audit.study.pk}/consensus/compute/", follow=True)
    body = queued.content.decode()
    job = ConsensusJob.objects.get(study=audit.study)
    states = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = client.get(f"/studies/{audit.study.pk}/consensus/job/").json()
        states.append(state)
        if not state["pending"] or state.get("status") == "failed":
            break
        time.sleep(0.2)
    job.refresh_from_db()
    assert job.status == "ready", (states[-1], job.error)
    assert job.lease_owner == "" and job.attempts == 1 and job.written == ConsensusLabel.objects.filter(study=audit.study).count() > 0
    # The page either showed the progress (the worker had not finished) or the computed labels already.
    assert 'id="report-pending"' in body or "Consensus computed" in body or "Last computed" in body
    page = client.get(f"/studies/{audit.study.pk}/consensus/").content.decode()
    assert "Last computed" in page and "Up to date" in page and 'id="report-pending"' not in page


def test_the_publication_bundle_is_built_by_the_worker_while_the_page_and_api_answer_at_once(celery_worker_process):
    """Issue 32: the request queues the bundle and answers 202; a real worker builds it (charts drawn in its
    Chromium when there is one) and stores the file the page then offers and the API streams."""
    import io
    import json
    import zipfile

    audit = build_report_study(n_conversations=12, prefix="wb")
    client = client_for(audit.coordinator)
    page = client.get(f"/reports/studies/{audit.study.pk}/bundle/")
    assert page.status_code == 202 and "Building the publication bundle" in page.content.decode()
    job = page.context["pending"]["job"]
    stages, deadline = [], time.monotonic() + 180
    while time.monotonic() < deadline:
        api = client.get(f"/api/v1/reports/studies/{audit.study.pk}/bundle/")
        if api.status_code != 202:
            break
        assert int(api["Retry-After"]) > 0 and api.json()["job"] == job
        stages.append(api.json()["stage"])
        time.sleep(0.3)
    assert api.status_code == 200, (api.status_code, stages[-3:])
    body = api.getvalue()
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(body)).read("manifest.json"))
    assert manifest["app"] == "evalsite" and manifest["files"]
    done = client.get(f"/reports/studies/{audit.study.pk}/bundle/")
    assert done.status_code == 200 and "Ready to download" in done.content.decode()
    assert client.get(f"/reports/studies/{audit.study.pk}/bundle.zip").getvalue() == body

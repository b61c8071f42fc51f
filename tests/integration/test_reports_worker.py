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

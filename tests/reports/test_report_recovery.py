"""Report jobs under the sweeper: a lost message or a dead worker never leaves a page spinning."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from core import recovery
from reports import jobs
from reports.models import ReportCache, ReportStatus
from simulation.run_state import new_owner, owner_finished, owner_started
from tests.conftest import client_for
from tests.support.report_study import build_report_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def cold_report(db, monkeypatch, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Return a claimed reliability report whose message was never delivered (lost)."""
    audit = build_report_study(n_conversations=12, prefix="rr")
    monkeypatch.setattr(jobs, "runs_inline", lambda: False)
    monkeypatch.setattr(recovery, "queue_depth", lambda: 0)  # the broker holds no message for it
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client_for(audit.coordinator).get(f"/reports/studies/{audit.study.pk}/reliability/")
    assert response.status_code == 202 and len(queued) == 1  # its message is dropped: lost
    return ReportCache.objects.get(kind="reliability")


def _queued_long_ago(row: ReportCache) -> None:
    ReportCache.objects.filter(pk=row.pk).update(queued_at=timezone.now() - timedelta(minutes=5))


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_report_job_whose_message_was_lost_is_sent_again_and_computed(cold_report, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched.get("report jobs", 0) == 0  # queued just now: may be in the queue
    _queued_long_ago(cold_report)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched["report jobs"] == 1
    cold_report.refresh_from_db()
    assert cold_report.status == ReportStatus.READY and cold_report.lease_owner == ""


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_report_job_whose_worker_died_is_sent_again(cold_report, django_capture_on_commit_callbacks):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    owner = new_owner("report").replace(f":{os.getpid()}", f":{dead.pid}", 1)
    _queued_long_ago(cold_report)  # sent a while ago, taken by a worker that then died
    ReportCache.objects.filter(pk=cold_report.pk).update(lease_owner=owner, stage="starting")
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().lost["report jobs"] == 1
    cold_report.refresh_from_db()
    assert cold_report.status == ReportStatus.READY


def test_a_report_computed_by_a_living_worker_is_not_computed_twice(cold_report):
    from reports.tasks import report_compute_task

    living = new_owner("report")  # this very process, still computing (its job is alive)
    owner_started(living)
    ReportCache.objects.filter(pk=cold_report.pk).update(lease_owner=living)
    assert report_compute_task(cold_report.pk) == "busy"  # a second delivery does nothing
    assert recovery.sweep().lost.get("report jobs", 0) == 0
    cold_report.refresh_from_db()
    assert cold_report.status == ReportStatus.COMPUTING
    owner_finished(living)

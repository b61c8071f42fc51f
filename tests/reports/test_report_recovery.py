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


def _dead_owner() -> str:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return new_owner("report").replace(f":{os.getpid()}", f":{dead.pid}", 1)


@override_settings(EVALSITE_RECOVERY_SECONDS=60)
def test_a_report_job_whose_worker_died_seconds_after_taking_it_is_sent_again_at_the_next_sweep(
    cold_report, django_capture_on_commit_callbacks
):
    # Queued a moment ago and taken by a worker that died: known dead on this host, so the next
    # sweep (a third of the threshold) sends it again, not a whole threshold after its sending.
    ReportCache.objects.filter(pk=cold_report.pk).update(
        lease_owner=_dead_owner(), taken_at=timezone.now(), attempts=1, stage="starting"
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().lost["report jobs"] == 1
    cold_report.refresh_from_db()
    assert cold_report.status == ReportStatus.READY and cold_report.attempts == 2


@override_settings(EVALSITE_RECOVERY_SECONDS=60)
def test_a_job_sent_again_is_not_sent_a_second_time_before_a_worker_takes_it(cold_report, django_capture_on_commit_callbacks):
    owner = _dead_owner()
    queued, taken = timezone.now() - timedelta(seconds=10), timezone.now() - timedelta(seconds=5)
    ReportCache.objects.filter(pk=cold_report.pk).update(lease_owner=owner, queued_at=queued, taken_at=taken, attempts=1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert recovery.sweep().lost["report jobs"] == 1
    assert len(sent) == 1  # its message is lost again; the row waits for a worker, unclaimed
    # A second sweep finds no holder to recover (the row is unclaimed, queued just now).
    with django_capture_on_commit_callbacks(execute=False) as sent_again:
        report = recovery.sweep()
    assert report.lost.get("report jobs", 0) == 0 and report.redispatched.get("report jobs", 0) == 0
    assert sent_again == []


def test_a_job_every_worker_died_on_fails_with_the_reason_instead_of_being_sent_forever(cold_report, client):
    ReportCache.objects.filter(pk=cold_report.pk).update(
        lease_owner=_dead_owner(), taken_at=timezone.now(), attempts=jobs.MAX_ATTEMPTS
    )
    assert recovery.sweep().lost.get("report jobs", 0) == 0
    cold_report.refresh_from_db()
    assert cold_report.status == ReportStatus.FAILED and cold_report.lease_owner == ""
    assert f"its worker stopped {jobs.MAX_ATTEMPTS} times" in cold_report.error


def test_a_worker_taking_a_job_counts_the_attempt(cold_report):
    from reports.tasks import report_compute_task

    assert report_compute_task(cold_report.pk) == ReportStatus.READY
    cold_report.refresh_from_db()
    assert cold_report.attempts == 1 and cold_report.taken_at is not None

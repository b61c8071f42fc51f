"""The consensus is computed by a worker with progress, never in the request (issue 28, defect 5).

The page and the API queue a ``ConsensusJob``; the request returns at once with the job's
state; the worker writes progress while it reads the ratings and writes only the labels that
changed; the page says when the labels were last computed and whether they are still up to
date; a job whose worker died is sent again by the sweeper.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from celery import current_app
from django.urls import reverse
from django.utils import timezone

from annotation.consensus import jobs
from annotation.consensus.services import consensus_compute_counted
from annotation.models import (
    AssignmentStatus,
    ConsensusJob,
    ConsensusJobStatus,
    ConsensusLabel,
    Rating,
    StudyEvent,
    TiePolicy,
)
from annotation.studies.services import study_assign
from tests.annotation.coordinator_setup import clinicians, make_study, submit
from tests.conftest import client_for, make_user

API = "/api/v1"


@pytest.fixture
def rated(coordinator):  # type: ignore[no-untyped-def]
    """Three conversations, two raters each, who agree on amhart_01 and split on amhart_02."""
    raters = clinicians(2)
    study = make_study(coordinator, raters, n=3, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        submit(a, {"amhart_01": "yes", "amhart_02": "yes" if a.rater == raters[0] else "no"})
    return study


@pytest.fixture
def worker_mode():  # type: ignore[no-untyped-def]
    """Celery as in production (not in place): tasks are queued on commit, not run."""
    saved = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    yield
    current_app.conf.task_always_eager = saved


def sent(capture, action):  # type: ignore[no-untyped-def]
    """Run ``action`` and return how many task messages its transaction would send on commit."""
    with capture(execute=False) as callbacks:
        action()
    return len(callbacks)


def test_the_page_queues_the_consensus_and_shows_its_progress_until_a_worker_computed_it(
    coordinator, rated, worker_mode, django_capture_on_commit_callbacks
):
    client = client_for(coordinator)
    url = reverse("annotation:study-consensus-compute", args=[rated.pk])
    assert sent(django_capture_on_commit_callbacks, lambda: client.post(url)) == 1
    body = client.get(reverse("annotation:study-consensus", args=[rated.pk])).content.decode()
    # Nothing computed in the request: one job queued, its message sent on commit.
    assert not ConsensusLabel.objects.filter(study=rated).exists()
    job = ConsensusJob.objects.get(study=rated)
    assert job.status == ConsensusJobStatus.QUEUED
    assert "A background worker is computing the consensus" in body
    assert 'id="report-pending"' in body and reverse("annotation:study-consensus-job", args=[rated.pk]) in body
    assert "reports/reports.js" in body and 'id="compute-consensus"' not in body
    state = client.get(reverse("annotation:study-consensus-job", args=[rated.pk])).json()
    assert state["pending"] is True and state["status"] == "queued" and state["job"] == job.pk
    # Asking again while it waits returns the same job: no second computation queued.
    assert sent(django_capture_on_commit_callbacks, lambda: client.post(url)) == 0
    assert ConsensusJob.objects.filter(study=rated).count() == 1

    assert jobs.consensus_job_run(job_id=job.pk) == ConsensusJobStatus.READY
    job.refresh_from_db()
    assert job.counts == {"unanimous": 3, "unresolved": 3} and job.written == 6 and job.progress == 1.0
    assert job.lease_owner == "" and job.attempts == 1 and job.finished_at is not None
    assert ConsensusLabel.objects.filter(study=rated).count() == 6
    state = client.get(reverse("annotation:study-consensus-job", args=[rated.pk])).json()
    assert state == {"pending": False}
    page = client.get(reverse("annotation:study-consensus", args=[rated.pk])).content.decode()
    assert 'id="report-pending"' not in page and "Last computed" in page and "by cora" in page
    assert "(6 labels changed)" in page and "Up to date" in page and "Recompute consensus" in page
    # Delivered twice (acks_late after a restart): the finished job is left alone.
    assert jobs.consensus_job_run(job_id=job.pk) == ConsensusJobStatus.READY
    assert StudyEvent.objects.filter(study=rated, action="consensus_computed").count() == 1


def test_the_api_answers_202_with_the_job_and_reports_its_state(coordinator, rated, worker_mode):
    client = client_for(coordinator)
    queued = client.post(f"{API}/studies/{rated.pk}/consensus/compute/", content_type="application/json")
    assert queued.status_code == 202
    assert queued.json()["counts"] == {} and queued.json()["job"]["status"] == "queued"
    state = client.get(f"{API}/studies/{rated.pk}/consensus/job/").json()
    assert state["job"]["pending"] is True and state["computed_at"] is None and state["up_to_date"] is None
    jobs.consensus_job_run(job_id=queued.json()["job"]["job"])
    state = client.get(f"{API}/studies/{rated.pk}/consensus/job/").json()
    assert state["job"] is None and state["up_to_date"] is True and state["computed_by"] == "cora"


def test_outsiders_and_raters_get_nothing_of_the_job(coordinator, rated):
    client_for(coordinator).post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    other = make_user("otto", "coordinator")
    rater = rated.assignments.first().rater
    for user in (other, rater):
        client = client_for(user)
        assert client.get(reverse("annotation:study-consensus-job", args=[rated.pk])).status_code == 404
        assert client.get(f"{API}/studies/{rated.pk}/consensus/job/").status_code in (403, 404)
        assert client.post(reverse("annotation:study-consensus-compute", args=[rated.pk])).status_code == 404
    assert ConsensusJob.objects.filter(study=rated).count() == 1


def test_with_celery_in_place_the_request_returns_the_counts(coordinator, rated):
    response = client_for(coordinator).post(f"{API}/studies/{rated.pk}/consensus/compute/", content_type="application/json")
    assert response.status_code == 200
    assert response.json()["counts"] == {"unanimous": 3, "unresolved": 3} and response.json()["job"]["written"] == 6


def _compute(study, coordinator):  # type: ignore[no-untyped-def]
    return consensus_compute_counted(study=study, actor=coordinator)


def test_a_recompute_writes_only_the_labels_whose_votes_changed(coordinator, rated):
    assert _compute(rated, coordinator).written == 6
    assert _compute(rated, coordinator).written == 0  # nothing changed: nothing written
    before = {(c.conversation_id, c.item_key): c.updated_at for c in ConsensusLabel.objects.filter(study=rated)}
    rating = Rating.objects.filter(assignment__study=rated).order_by("pk").first()
    rating.answers["main"]["amhart_01"] = {"value": "no"}
    rating.save()
    result = _compute(rated, coordinator)
    assert result.written == 1  # that conversation's amhart_01 only
    after = {(c.conversation_id, c.item_key): c.updated_at for c in ConsensusLabel.objects.filter(study=rated)}
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {(rating.assignment.conversation_id, "amhart_01")}
    assert result.counts == {"unanimous": 2, "unresolved": 4}


def test_the_page_says_out_of_date_when_ratings_assignments_or_rules_changed(coordinator, rated):
    client = client_for(coordinator)
    url = reverse("annotation:study-consensus", args=[rated.pk])
    client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    assert "Up to date" in client.get(url).content.decode()

    def out_of_date() -> bool:
        return "Out of date" in client.get(url).content.decode()

    rating = Rating.objects.filter(assignment__study=rated).order_by("pk").first()
    rating.answers["main"]["amhart_02"] = {"value": "no"}
    rating.save()
    assert out_of_date()
    client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    assert not out_of_date()
    rated.assignments.filter(pk=rating.assignment_id).update(status=AssignmentStatus.WITHDRAWN)
    assert out_of_date()
    client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    assert not out_of_date()
    rated.tie_policy = TiePolicy.SENIOR if rated.tie_policy != TiePolicy.SENIOR else TiePolicy.ADJUDICATE
    rated.save()
    assert out_of_date()
    rated.min_ratings_for_consensus = 3
    rated.save()
    client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    assert not out_of_date()


def test_the_worker_reports_progress_as_it_reads_the_ratings(coordinator, monkeypatch):
    from annotation.consensus import services

    raters = clinicians(3)
    study = make_study(coordinator, raters, n=4, k=3)
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        submit(a, {"amhart_01": "yes"})
    monkeypatch.setattr(services, "PROGRESS_EVERY", 5)  # 12 ratings: two reports while reading
    seen: list[tuple[float, str]] = []
    consensus_compute_counted(study=study, actor=coordinator, progress=lambda f, s: seen.append((f, s)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and 0 < fractions[0] and fractions[-1] < 1
    stages = [s for _, s in seen]
    assert stages[0] == "reading 12 submitted ratings"
    assert "read 5 of 12 submitted ratings" in stages and "read 10 of 12 submitted ratings" in stages
    assert stages[-1] == "saving 4 changed labels"


def test_a_failed_computation_is_shown_with_its_cause_and_can_be_asked_again(coordinator, rated, monkeypatch):
    from annotation.consensus import services

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ValueError("an instrument without items")

    monkeypatch.setattr(services, "_votes", broken)
    client = client_for(coordinator)
    response = client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]), follow=True)
    assert "The consensus could not be computed: ValueError: an instrument without items" in response.content.decode()
    page = client.get(reverse("annotation:study-consensus", args=[rated.pk])).content.decode()
    assert 'id="consensus-failed"' in page and 'id="compute-consensus"' in page
    monkeypatch.undo()
    client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))
    assert ConsensusJob.objects.filter(study=rated, status=ConsensusJobStatus.READY).count() == 1
    assert 'id="consensus-failed"' not in client.get(reverse("annotation:study-consensus", args=[rated.pk])).content.decode()


def _dead_owner() -> str:
    """A lease owner id (as ``new_owner`` writes it) of a process of this host that has exited."""
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                             text=True, check=True).stdout)
    return f"{socket.gethostname()}:{pid}@1:consensus:0123456789ab"


def test_the_sweeper_sends_again_a_job_whose_worker_died_and_fails_it_after_three(
    coordinator, rated, worker_mode, django_capture_on_commit_callbacks
):
    job = ConsensusJob.objects.create(study=rated, requested_by=coordinator, status=ConsensusJobStatus.COMPUTING,
                                      lease_owner=_dead_owner(), taken_at=timezone.now(), attempts=1)
    recovered = []
    assert sent(django_capture_on_commit_callbacks, lambda: recovered.append(jobs.consensus_jobs_recover_lost(timezone.now()))) == 1
    assert recovered == [1]
    job.refresh_from_db()
    assert job.status == ConsensusJobStatus.QUEUED and job.lease_owner == "" and "worker stopped" in job.stage
    assert jobs.consensus_jobs_unclaimed() == 1
    # A living holder (this process, job running) is never taken over.
    from simulation.run_state import new_owner, owner_finished, owner_started

    mine = new_owner("consensus")
    owner_started(mine)
    try:
        ConsensusJob.objects.filter(pk=job.pk).update(status=ConsensusJobStatus.COMPUTING, lease_owner=mine)
        assert jobs.consensus_jobs_recover_lost(timezone.now()) == 0
    finally:
        owner_finished(mine)
    ConsensusJob.objects.filter(pk=job.pk).update(lease_owner=_dead_owner(), attempts=jobs.MAX_ATTEMPTS)
    assert jobs.consensus_jobs_recover_lost(timezone.now()) == 0
    job.refresh_from_db()
    assert job.status == ConsensusJobStatus.FAILED and "stopped 3 times" in job.error


def test_a_job_whose_message_was_lost_is_queued_again_after_the_threshold(
    coordinator, rated, worker_mode, django_capture_on_commit_callbacks
):
    client = client_for(coordinator)
    assert sent(django_capture_on_commit_callbacks, lambda: client.post(reverse("annotation:study-consensus-compute", args=[rated.pk]))) == 1
    job = ConsensusJob.objects.get(study=rated)
    assert jobs.consensus_jobs_redispatch(job.queued_at, None) == 0  # not older than the cutoff
    assert sent(django_capture_on_commit_callbacks, lambda: jobs.consensus_jobs_redispatch(timezone.now(), None)) == 1
    job.refresh_from_db()
    assert job.status == ConsensusJobStatus.QUEUED


def test_a_refused_broker_fails_the_job_with_the_cause(coordinator, rated, broker_down, django_capture_on_commit_callbacks):
    from core.enqueue import BrokerUnavailable

    with pytest.raises(BrokerUnavailable), django_capture_on_commit_callbacks(execute=True):
        jobs.consensus_request(study=rated, actor=coordinator)
    job = ConsensusJob.objects.get(study=rated)
    assert job.status == ConsensusJobStatus.FAILED and job.error.startswith("not queued: the task queue did not answer")
    # The next request may queue a new one (the failed job holds no slot).
    assert not ConsensusJob.objects.filter(study=rated, status__in=jobs.ACTIVE).exists()

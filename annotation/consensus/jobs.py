"""The consensus computed by a worker, with progress, never inside a request.

``consensus_request`` records a job (one waiting or running per study: asking again while it
runs returns it) and queues ``annotation.tasks.consensus_compute_task`` after the commit; with
Celery in place (tests, scripts) the job is done when the request's transaction commits.
``consensus_job_run`` is what the worker does: it takes the job (one worker at a time, a dead
holder's job is taken over), writes its progress as the ratings are read, and stores the
counts. The sweeper (core.recovery) sends again a job whose message or worker was lost.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from celery import current_app
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.consensus.services import consensus_compute_counted, consensus_inputs_version
from annotation.models import ConsensusJob, Study, StudyEvent
from annotation.models import ConsensusJobStatus as Status
from core.enqueue import enqueue_on_commit
from simulation.run_state import holder_gone, new_owner, owner_finished, owner_started

CONSENSUS_TASK = "annotation.tasks.consensus_compute_task"
logger = logging.getLogger("annotation.consensus")
ACTIVE = (Status.QUEUED, Status.COMPUTING)
# A job taken longer ago than this by a worker on another host is taken for lost (nothing
# renews a lease while it computes; on this host a dead worker is known at once).
STALE_AFTER = timedelta(minutes=15)
# Workers that may die on one job before it fails with the reason.
MAX_ATTEMPTS = 3


def _active(study: Study) -> ConsensusJob | None:
    return ConsensusJob.objects.filter(study=study, status__in=ACTIVE).first()


def consensus_request(*, study: Study, actor: AbstractBaseUser | None) -> ConsensusJob:
    """Queue the study's consensus (or return the job already waiting or running for it).

    Returns the job as it stands once the transaction committed: done when Celery runs tasks
    in place, queued otherwise. Raises ``core.enqueue.BrokerUnavailable`` (a 503 page) when the
    task queue does not answer; the job is then marked failed with that cause.
    """
    with transaction.atomic():
        job = _active(study)
        if job is None:
            try:
                with transaction.atomic():
                    job = ConsensusJob.objects.create(
                        study=study, requested_by=actor, queued_at=timezone.now(),
                        stage="queued: waiting for a worker",
                    )
            except IntegrityError:  # another request queued one at the same moment
                job = _active(study)
                if job is None:
                    raise
            else:
                if not current_app.conf.task_always_eager:
                    enqueue_on_commit(CONSENSUS_TASK, [job.pk], on_failure=_not_queued)
    if job.status == Status.QUEUED and current_app.conf.task_always_eager:
        # Celery runs tasks in place (tests, scripts): compute now, as the worker would.
        try:
            consensus_job_run(job_id=job.pk)
        except Exception:  # recorded on the job; the page shows it
            logger.exception("consensus job %s failed", job.pk)
    job.refresh_from_db()
    return job


def _not_queued(job_ids: list[int], cause: str) -> None:
    ConsensusJob.objects.filter(pk__in=job_ids, status__in=ACTIVE).update(
        status=Status.FAILED, stage="not queued", finished_at=timezone.now(),
        error=f"not queued: the task queue did not answer ({cause})"[:2000],
    )


def consensus_job_run(*, job_id: int) -> str:
    """Compute one queued consensus job, writing its progress; return its final status.

    Safe to deliver twice: a finished job is left alone, and a job a living worker holds is
    not taken (the sweeper sends it again should that worker die).
    """
    job = ConsensusJob.objects.filter(pk=job_id).select_related("study", "requested_by").first()
    if job is None:
        return "gone"
    if job.status not in ACTIVE:
        return job.status
    now = timezone.now()
    expires = job.taken_at + STALE_AFTER if job.taken_at else None
    if job.lease_owner and not holder_gone(job.lease_owner, expires, now):
        return "busy"
    owner = new_owner("consensus")
    taken = ConsensusJob.objects.filter(pk=job_id, lease_owner=job.lease_owner, status__in=ACTIVE).update(
        lease_owner=owner, taken_at=now, attempts=F("attempts") + 1, status=Status.COMPUTING, stage="starting",
    )
    if not taken:
        return "busy"
    owner_started(owner)
    mine = ConsensusJob.objects.filter(pk=job_id, lease_owner=owner)

    def progress(fraction: float, stage: str) -> None:
        mine.update(progress=max(0.0, min(1.0, fraction)), stage=stage[:200])

    started = time.perf_counter()
    try:
        result = consensus_compute_counted(study=job.study, actor=job.requested_by, progress=progress)
    except Exception as exc:  # the page shows the error instead of spinning forever
        mine.update(status=Status.FAILED, stage="failed", error=f"{type(exc).__name__}: {exc}"[:2000],
                    finished_at=timezone.now(), lease_owner="")
        raise
    finally:
        owner_finished(owner)
    mine.update(
        status=Status.READY, progress=1.0, stage="", error="", counts=result.counts, written=result.written,
        input_version=result.input_version, finished_at=timezone.now(), seconds=time.perf_counter() - started,
        lease_owner="",
    )
    return Status.READY


def job_state(job: ConsensusJob) -> dict[str, Any]:
    """What the page's progress poll and the API show of a job."""
    return {
        "job": job.pk,
        "pending": job.status in ACTIVE,
        "status": job.status,
        "progress": job.progress,
        "stage": job.stage,
        "error": job.error,
        "counts": job.counts,
        "written": job.written,
        "queued_at": job.queued_at.isoformat() if job.queued_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "seconds": job.seconds,
    }


def consensus_marker(study: Study) -> dict[str, Any]:
    """The consensus page's "last computed" line: when, by whom, and whether still up to date.

    Read from the study's last "consensus_computed" audit event (every path records one, the
    worker's, a script's, the demo's), compared with the inputs' version now. ``active`` is the
    job waiting or running, ``failed`` the latest job when it failed after the last success.
    """
    event = StudyEvent.objects.filter(study=study, action="consensus_computed").select_related("actor").first()
    latest = ConsensusJob.objects.filter(study=study).first()
    marker: dict[str, Any] = {
        "active": latest if latest is not None and latest.status in ACTIVE else None,
        "failed": None, "computed_at": None, "by": "", "written": None, "up_to_date": None,
    }
    if latest is not None and latest.status == Status.FAILED and (event is None or latest.created_at > event.created_at):
        marker["failed"] = latest
    if event is not None:
        version = event.details.get("input_version")
        marker.update(
            computed_at=event.created_at,
            by=event.actor.get_username() if event.actor else "",
            written=event.details.get("written"),
            # Computed before versions were recorded: cannot tell (None), the page says so.
            up_to_date=None if not version else version == consensus_inputs_version(study),
        )
    return marker


def shown_job(marker: dict[str, Any]) -> ConsensusJob | None:
    """The job the page's poll and the API report: the one waiting or running, else a failure since the last success."""
    return marker["active"] or marker["failed"]


def _active_jobs() -> Any:
    return ConsensusJob.objects.filter(status__in=ACTIVE)


def consensus_jobs_recover_lost(now: Any) -> int:
    """Queue again the consensus jobs whose worker is gone; return how many.

    A job that ``MAX_ATTEMPTS`` workers died on fails with the reason (asked for again, it
    starts anew).
    """
    ids = []
    rows = _active_jobs().exclude(lease_owner="").values_list("pk", "lease_owner", "taken_at", "attempts")
    with transaction.atomic():
        for pk, owner, taken, attempts in rows:
            if not holder_gone(owner, taken + STALE_AFTER if taken else None, now):
                continue
            if attempts >= MAX_ATTEMPTS:
                _active_jobs().filter(pk=pk, lease_owner=owner).update(
                    status=Status.FAILED, lease_owner="", stage="failed", finished_at=now,
                    error=(f"its worker stopped {attempts} times before finishing it (killed, out of memory "
                           "or timed out); press Compute consensus to try again"),
                )
                continue
            if _active_jobs().filter(pk=pk, lease_owner=owner).update(
                status=Status.QUEUED, lease_owner="", queued_at=timezone.now(),
                stage="queued again: its worker stopped",
            ):
                ids.append(pk)
        enqueue_on_commit(CONSENSUS_TASK, ids, on_failure=_not_queued_again)
    return len(ids)


def _not_queued_again(job_ids: list[int], cause: str) -> None:
    """A sweep could not send a job again (the broker is away): the next sweep will."""
    ConsensusJob.objects.filter(pk__in=job_ids, status=Status.QUEUED).update(queued_at=None)


def consensus_jobs_unclaimed() -> int:
    """Count the consensus jobs waiting for a worker (each should have a message queued)."""
    return ConsensusJob.objects.filter(status=Status.QUEUED, lease_owner="").count()


def consensus_jobs_redispatch(cutoff: Any, limit: int | None) -> int:
    """Queue again up to ``limit`` jobs queued before ``cutoff`` and never taken, oldest first."""
    waiting = ConsensusJob.objects.filter(status=Status.QUEUED, lease_owner="").filter(
        Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True)
    )
    pairs = list(waiting.order_by("queued_at", "pk").values_list("pk", "queued_at")[: limit if limit is not None else None])
    now = timezone.now()
    ids = []
    with transaction.atomic():
        for pk, queued in pairs:
            if ConsensusJob.objects.filter(pk=pk, status=Status.QUEUED, lease_owner="", queued_at=queued).update(queued_at=now):
                ids.append(pk)
        enqueue_on_commit(CONSENSUS_TASK, ids, on_failure=_not_queued_again)
    return len(ids)


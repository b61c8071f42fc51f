"""Celery adapters and periodic work of the annotation app: consensus jobs and the studies' scheduled reminders.

Celery beat is not assumed to run (``make run`` starts one worker on a filesystem broker), so
periodic work is done the way the judging app recovers stalled results: every worker, once it
is ready, starts a thread that calls the service every ``EVALSITE_REMINDER_CHECK_MINUTES``.
Several workers checking at once send each reminder once (the service claims a rater before
sending). ``manage.py send_reminders`` does the same from cron, for deployments that prefer it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from annotation.consensus.jobs import (
    consensus_job_run,
    consensus_jobs_recover_lost,
    consensus_jobs_redispatch,
    consensus_jobs_unclaimed,
)
from annotation.reminders.services import reminders_send_due
from core import recovery

logger = logging.getLogger("annotation.tasks")


@shared_task(name="annotation.tasks.reminders_send_due_task", acks_late=True, soft_time_limit=600, time_limit=660)
def reminders_send_due_task() -> int:
    """Send the reminders every study's schedule makes due; return how many were sent."""
    return reminders_send_due()


@shared_task(
    name="annotation.tasks.consensus_compute_task",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=20 * 60,
    time_limit=21 * 60,
)
def consensus_compute_task(job_id: int) -> str:
    """Compute one study's consensus (a ``ConsensusJob`` row); return its status."""
    return consensus_job_run(job_id=job_id)


# The sweeper (core.recovery) sends again the consensus jobs whose message or worker was lost.
recovery.register(
    recovery.Recoverer(
        name="consensus jobs",
        lost=consensus_jobs_recover_lost,
        unclaimed=consensus_jobs_unclaimed,
        redispatch=consensus_jobs_redispatch,
    )
)


def send_due_reminders() -> int:
    """Send due reminders; never fail the caller (a worker's thread)."""
    try:
        count = reminders_send_due()
    except Exception:  # the database may not be ready yet; try again next time
        logger.exception("could not send the scheduled reminders")
        return 0
    if count:
        logger.info("sent %d scheduled reminder(s)", count)
    return count


_watch_stop = threading.Event()


def check_interval() -> float:
    return max(60.0, 60.0 * float(getattr(settings, "EVALSITE_REMINDER_CHECK_MINUTES", 60) or 60))


def _watch_reminders() -> None:
    # First soon after the worker starts (a restart must not postpone what is due by an hour).
    delay = 30.0
    while not _watch_stop.wait(delay):
        send_due_reminders()
        delay = check_interval()


@worker_ready.connect
def _start_reminder_watch(**_: Any) -> None:
    threading.Thread(target=_watch_reminders, name="evalsite-reminders", daemon=True).start()


@worker_shutdown.connect
def _stop_reminder_watch(**_: Any) -> None:
    _watch_stop.set()

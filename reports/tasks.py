"""Celery adapters of the reports: take the cache row's id, call one service."""

from __future__ import annotations

from celery import shared_task

from core import recovery
from reports.devset.services import look_compute
from reports.jobs import (
    report_compute,
    report_jobs_recover_lost,
    report_jobs_redispatch,
    report_jobs_unclaimed,
)

SOFT_TIME_LIMIT = 20 * 60
TIME_LIMIT = SOFT_TIME_LIMIT + 60


@shared_task(
    name="reports.tasks.report_compute_task",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def report_compute_task(cache_id: int) -> str:
    """Compute one claimed report (a ``ReportCache`` row); return its status."""
    return report_compute(cache_id=cache_id)


@shared_task(
    name="reports.tasks.holdout_look_task",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def holdout_look_task(look_id: int) -> str:
    """Compute one look at a study's test set (a ``HoldoutLook`` row); return its status."""
    return look_compute(look_id=look_id)


# The sweeper (core.recovery) sends again the report jobs whose message or worker was lost.
recovery.register(
    recovery.Recoverer(
        name="report jobs",
        lost=report_jobs_recover_lost,
        unclaimed=report_jobs_unclaimed,
        redispatch=report_jobs_redispatch,
    )
)

"""Celery adapters: take ids, call one service. Safe to run twice (finished rows are skipped)."""

from __future__ import annotations

from celery import shared_task

from . import runs

# A question flow makes one call per question, each with its own retries: give it room.
SOFT_TIME_LIMIT = 30 * 60
TIME_LIMIT = SOFT_TIME_LIMIT + 60


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def judge_result_task(result_id: int) -> str:
    """Judge one (run, judge, conversation, instance); return the result's status."""
    return runs.judge_result_execute(result_id=result_id)

"""Celery adapters: take ids, call one service. Safe to run twice (finished rows are skipped)."""

from __future__ import annotations

from celery import shared_task

from judging.runs import judge_result_execute

# A question flow makes one call per question, each with its own retries: give it room.
SOFT_TIME_LIMIT = 30 * 60
TIME_LIMIT = SOFT_TIME_LIMIT + 60


@shared_task(
    name="judging.tasks.judge_result_task",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def judge_result_task(result_id: int) -> str:
    """Judge one (run, judge, conversation, instance); return the result's status."""
    return judge_result_execute(result_id=result_id)

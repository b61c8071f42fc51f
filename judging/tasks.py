"""Celery adapters: take ids, call one service. Safe to run twice (finished rows are skipped).

In a worker a judge result runs on the process's engine thread (``simulation.llm.engine``)
with every other result and conversation in flight; the task's thread only waits for it, so
its broker message stays unacknowledged until the result is stored.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from core import recovery
from judging import outage_retry  # noqa: F401  (registers the judges' outage family)
from judging.execute import judge_result_job
from judging.runs import (
    judge_results_recover,
    judge_results_recover_lost,
    judge_results_redispatch,
    judge_results_unclaimed,
)
from simulation.llm.engine import run_group
from simulation.run_state import new_owner

logger = logging.getLogger("judging.tasks")

# A question flow makes one call per question, each with its own retries: give it room.
SOFT_TIME_LIMIT = 30 * 60
TIME_LIMIT = SOFT_TIME_LIMIT + 60


def _judge(task_id: str, result_ids: list[int], inline: bool) -> list[str]:
    """Judge ``result_ids`` together on one engine; raise the first error once all ended."""
    jobs = [
        # One owner per result: a job that ends must not make its neighbours' claims look orphaned.
        (lambda pk=pk, owner=owner: judge_result_job(result_id=pk, owner=owner))
        for pk, owner in ((pk, new_owner(task_id)) for pk in result_ids)
    ]
    return run_group(jobs, inline=inline)


@shared_task(
    name="judging.tasks.judge_results_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def judge_results_task(self: Any, result_ids: list[int]) -> list[str]:
    """Judge a group of results (one message, see core.enqueue); return their statuses.

    The group's results are in flight together on the worker's engine; its message is
    acknowledged once all are stored. A group cut short by a crash loses nothing: each result
    has its own claim and lease, and the sweeper sends the lost ones again.
    """
    inline = self.request.is_eager or self.request.called_directly
    return _judge(str(self.request.id or "")[:12], [int(pk) for pk in result_ids], inline)


# Messages queued by a version that sent one result per message are still taken.
@shared_task(
    name="judging.tasks.judge_result_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def judge_result_task(self: Any, result_id: int) -> str:
    """Judge one (run, judge, conversation, instance); return the result's status."""
    inline = self.request.is_eager or self.request.called_directly
    return _judge(str(self.request.id or "")[:12], [int(result_id)], inline)[0]


def recover_stalled() -> int:
    """Queue again the results a lost worker or a lost message left waiting; never fail the caller."""
    try:
        count = judge_results_recover()
    except Exception:  # a worker must start even when the database is not ready yet
        logger.exception("could not recover stalled judge results")
        return 0
    if count:
        logger.info("queued %d stalled or unclaimed judge result(s) again", count)
    return count


# The sweeper (core.recovery) runs this when a worker starts and then periodically in every
# living worker, so a lost worker among living ones, or a lost message, is covered too.
recovery.register(
    recovery.Recoverer(
        name="judge results",
        lost=judge_results_recover_lost,
        unclaimed=judge_results_unclaimed,
        redispatch=judge_results_redispatch,
    )
)

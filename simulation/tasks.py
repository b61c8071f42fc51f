"""Celery adapters: take ids, load, call one service. Safe to run twice."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from simulation.batches import simulation_runs_recover
from simulation.llm.engine import run_job, shared_engine
from simulation.run_checks import conversation_check_integrity
from simulation.simulate import new_owner, simulation_run_job

logger = logging.getLogger("simulation.tasks")


@shared_task(name="simulation.tasks.conversation_check_integrity_task", acks_late=True, time_limit=120, soft_time_limit=100)
def conversation_check_integrity_task(conversation_id: int) -> bool:
    """Run the structural integrity checks on one conversation; return whether it passed."""
    conversation = conversation_check_integrity(conversation_id=conversation_id)
    return bool(conversation.integrity_ok)


# One task per planned conversation. acks_late + reject_on_worker_lost: a worker killed
# mid-conversation leaves the message to be delivered again; the run's lease (see
# simulation.simulate) makes a second delivery resume after the last saved message, never
# write twice. "busy" (another live executor holds the lease) retries once the lease may expire.
# In a worker the conversation runs on the process's engine thread with every other one in
# flight; the task's own thread only waits for it (so its broker message stays unacknowledged).
@shared_task(
    name="simulation.tasks.simulation_run_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,
    time_limit=6 * 3600,
    soft_time_limit=6 * 3600 - 60,
)
def simulation_run_task(self: Any, run_id: int) -> str:
    """Simulate one conversation of a batch (or resume it); return the outcome."""
    owner = new_owner(str(self.request.id or "")[:12])

    def job():  # type: ignore[no-untyped-def]
        return simulation_run_job(run_id=run_id, owner=owner)

    inline = self.request.is_eager or self.request.called_directly
    outcome = run_job(job) if inline else shared_engine().call(job)
    if outcome.status == "busy" and not self.request.is_eager:
        raise self.retry(countdown=min((outcome.retry_in or 1.0) + 0.5, 600.0))
    return outcome.status


@worker_ready.connect
def _recover_runs_on_worker_start(**_: Any) -> None:
    """Queue again the runs a dead worker left running (their broker message may sit unacked)."""
    try:
        count = simulation_runs_recover()
    except Exception:  # a worker must start even when the database is not ready yet
        logger.exception("could not recover running simulation runs")
        return
    if count:
        logger.info("queued %d running simulation run(s) again for recovery", count)

"""Celery adapters: take ids, load, call one service. Safe to run twice."""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task

from core import recovery
from simulation.batches import (
    simulation_runs_recover_lost,
    simulation_runs_redispatch,
    simulation_runs_unclaimed,
)
from simulation.llm.engine import run_job, shared_engine
from simulation.llm.ratelimit import release_dead_holders
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
# simulation.run_state) makes a second delivery resume after the last saved message, never
# write twice. "busy" (another live executor holds the lease) ends the task: the sweeper
# (core.recovery) queues the run again should that executor die.
# In a worker the conversation runs on the process's engine thread with every other one in
# flight; the task's own thread only waits for it (so its broker message stays unacknowledged).
@shared_task(
    name="simulation.tasks.simulation_run_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
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
    return outcome.status


def _warm_engine() -> threading.Event:
    """Start the engine thread now: it imports litellm (seconds of CPU) before any job runs.

    Imported on a job's first call instead, litellm would hold the event loop for that long
    (a minute on a loaded machine), and every lease in flight would look stalled. The
    periodic sweep waits for it: tasks this worker received meanwhile are not lost.
    """
    return shared_engine().warm


recovery.on_worker_start(_warm_engine)
# Rate-limit slots of a worker that died on this host are free again at the next sweep (and
# when a worker starts); elsewhere they run out within EVALSITE_RATE_LEASE_SECONDS.
recovery.on_sweep(release_dead_holders)
recovery.register(
    recovery.Recoverer(
        name="simulation runs",
        lost=simulation_runs_recover_lost,
        unclaimed=simulation_runs_unclaimed,
        redispatch=simulation_runs_redispatch,
    )
)

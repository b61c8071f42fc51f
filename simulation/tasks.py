"""Celery adapters: take ids, load, call one service. Safe to run twice."""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task

from core import outages, recovery
from simulation import outages as simulation_outages  # noqa: F401  (registers the chatbots' outage family)
from simulation.batches import (
    simulation_runs_recover_lost,
    simulation_runs_redispatch,
    simulation_runs_unclaimed,
)
from simulation.llm.engine import run_group, shared_engine
from simulation.llm.ratelimit import release_dead_holders
from simulation.run_checks import conversation_check_integrity
from simulation.simulate import new_owner, simulation_run_job

logger = logging.getLogger("simulation.tasks")


@shared_task(name="simulation.tasks.conversation_check_integrity_task", acks_late=True, time_limit=120, soft_time_limit=100)
def conversation_check_integrity_task(conversation_id: int) -> bool:
    """Run the structural integrity checks on one conversation; return whether it passed."""
    conversation = conversation_check_integrity(conversation_id=conversation_id)
    return bool(conversation.integrity_ok)


# One message per group of planned conversations (core.enqueue). acks_late +
# reject_on_worker_lost: a worker killed mid-conversation leaves the message to be delivered
# again; each run's lease (see simulation.run_state) makes a second delivery resume after the
# last saved message, never write twice, and leaves finished runs alone. "busy" (another live
# executor holds the lease) ends that run's job: the sweeper (core.recovery) queues the run
# again should that executor die. In a worker the group's conversations run on the process's
# engine thread with every other one in flight; the task's own thread only waits for them (so
# its broker message stays unacknowledged until all have ended).
def _simulate(task_id: str, run_ids: list[int], inline: bool) -> list[str]:
    """Simulate ``run_ids`` together on one engine; raise the first error once all ended."""
    jobs = [
        # One owner per run: a job that ends must not make its neighbours' claims look orphaned.
        (lambda pk=pk, owner=owner: simulation_run_job(run_id=pk, owner=owner))
        for pk, owner in ((pk, new_owner(task_id)) for pk in run_ids)
    ]
    return [outcome.status for outcome in run_group(jobs, inline=inline)]


@shared_task(
    name="simulation.tasks.simulation_runs_task",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=6 * 3600,
    soft_time_limit=6 * 3600 - 60,
)
def simulation_runs_task(self: Any, run_ids: list[int]) -> list[str]:
    """Simulate a group of a batch's conversations (or resume them); return their outcomes."""
    inline = self.request.is_eager or self.request.called_directly
    return _simulate(str(self.request.id or "")[:12], [int(pk) for pk in run_ids], inline)


# Messages queued by a version that sent one conversation per message are still taken.
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
    inline = self.request.is_eager or self.request.called_directly
    return _simulate(str(self.request.id or "")[:12], [int(run_id)], inline)[0]


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
# Open breakers (core.outages): a conversation or judgement waiting for its provider is sent
# again as a probe when its time comes.
recovery.on_sweep(outages.outages_probe)
recovery.register(
    recovery.Recoverer(
        name="simulation runs",
        lost=simulation_runs_recover_lost,
        unclaimed=simulation_runs_unclaimed,
        redispatch=simulation_runs_redispatch,
    )
)

"""Simulation batches: create (store the planned runs and queue them, a group per task), cancel, resume, recover.

What a batch is asked for and its checks are in ``simulation.batch_spec``.

Every planned conversation is a ``SimulationRun`` row created with the batch; the Celery task
``simulation_runs_task`` executes a group of runs together (``simulate.simulation_run_job``
each). Queueing the same run twice is harmless: the claim lets one executor write at a time.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.codes import new_code
from core.enqueue import enqueue_groups_on_commit
from core.recovery import recovery_seconds
from core.secrets_policy import api_host_approve
from simulation.batch_spec import BatchSpec, batch_plan
from simulation.errors import SimulationError
from simulation.models import SimulationBatch, SimulationRun
from simulation.run_state import batch_maybe_finish, holder_gone

logger = logging.getLogger("simulation.batches")
# The Celery task that executes one run (simulation.tasks); queued by name, see core.enqueue.
SIMULATION_RUNS_TASK = "simulation.tasks.simulation_runs_task"


@transaction.atomic
def simulation_batch_create(
    *, spec: BatchSpec, created_by: AbstractBaseUser | None = None, dispatch: bool = True
) -> SimulationBatch:
    """Validate ``spec``, store the batch and one run per cell x repetition, queue the runs.

    Raises ``SimulationError`` listing every problem; nothing is stored then.
    """
    batch, personas, targets = batch_plan(spec, created_by)
    batch.code = _batch_code()
    api_host_approve(url=spec.user_agent.api_base, actor=created_by, note="set on a simulation batch's user-agent")
    batch.save()
    batch.personas.set(personas)
    batch.targets.set(targets)
    SimulationRun.objects.bulk_create(
        SimulationRun(batch=batch, persona=p, target=t, repetition=r, queued_at=batch.started_at)
        for p in personas
        for t in targets
        for r in range(1, spec.repetitions + 1)
    )
    if dispatch:
        _enqueue(list(batch.runs.values_list("pk", flat=True)))
    return batch


def _batch_code() -> str:
    while True:
        code = new_code("B-", 5)
        if not SimulationBatch.objects.filter(code=code).exists():
            return code


def _enqueue(run_ids: list[int], *, again: bool = False) -> None:
    """Queue the runs, a group per message, after the surrounding transaction commits."""
    on_failure = _not_queued_again if again else _not_queued
    enqueue_groups_on_commit(SIMULATION_RUNS_TASK, run_ids, on_failure=on_failure)


def _not_queued_again(run_ids: list[int], cause: str) -> None:
    """A sweep could not send runs again (the broker is away): they keep their state for the next sweep."""
    logger.warning("could not queue %d simulation run(s) again (%s); the next sweep will", len(run_ids), cause)
    SimulationRun.objects.filter(pk__in=run_ids).update(queued_at=None)


def _not_queued(run_ids: list[int], cause: str) -> None:
    """Fail the runs whose task the broker refused (resuming with the failed ones queues them again)."""
    error = f"not queued: the task queue did not answer ({cause})"
    with transaction.atomic():
        SimulationRun.objects.filter(pk__in=run_ids, status=SimulationRun.Status.QUEUED).update(
            status=SimulationRun.Status.FAILED, error=error[:2000], error_kind="queue",
            finished_at=timezone.now(), lease_owner="", lease_expires_at=None,
        )
    for batch_id in set(SimulationRun.objects.filter(pk__in=run_ids).values_list("batch_id", flat=True)):
        batch_maybe_finish(batch_id=batch_id)


def _locked_batch(batch_id: int) -> SimulationBatch:
    try:
        return SimulationBatch.objects.select_for_update().get(pk=batch_id)
    except SimulationBatch.DoesNotExist as exc:
        raise SimulationError(f"no simulation batch {batch_id}") from exc


@transaction.atomic
def simulation_batch_cancel(*, batch_id: int) -> SimulationBatch:
    """Stop a batch: queued runs will not start, running ones stop before their next call."""
    batch = _locked_batch(batch_id)
    if batch.status == SimulationBatch.Status.FINISHED:
        raise SimulationError("the batch has already finished", ) from None
    now = timezone.now()
    batch.status = SimulationBatch.Status.CANCELLED
    batch.cancelled_at = now
    batch.save(update_fields=["status", "cancelled_at"])
    batch.runs.filter(status__in=SimulationRun.ACTIVE).update(
        status=SimulationRun.Status.CANCELLED, lease_owner="", lease_expires_at=None, finished_at=now
    )
    return batch


@transaction.atomic
def simulation_batch_resume(
    *, batch_id: int, include_failed: bool = False, dispatch: bool = True
) -> SimulationBatch:
    """Restart a batch: cancelled (and optionally failed) runs continue after their last message.

    Stalled runs (running, but their executor's lease has expired) are queued again too.
    ``dispatch=False`` leaves the queueing to the caller (``simulate --inline``).
    """
    batch = _locked_batch(batch_id)
    now = timezone.now()
    statuses = [SimulationRun.Status.CANCELLED] + ([SimulationRun.Status.FAILED] if include_failed else [])
    batch.runs.filter(status__in=statuses).update(
        status=SimulationRun.Status.QUEUED, lease_owner="", lease_expires_at=None,
        error="", error_kind="", finished_at=None, queued_at=now,
    )
    batch.status = SimulationBatch.Status.RUNNING
    batch.cancelled_at = None
    batch.finished_at = None
    batch.save(update_fields=["status", "cancelled_at", "finished_at"])
    queued = list(batch.runs.filter(status=SimulationRun.Status.QUEUED).values_list("pk", flat=True))
    stalled = _stalled(batch.runs.filter(status=SimulationRun.Status.RUNNING))
    if dispatch:
        batch.runs.filter(pk__in=queued + stalled).update(queued_at=now)
        _enqueue(queued + stalled)
    if not queued and not batch.runs.filter(status=SimulationRun.Status.RUNNING).exists():
        transaction.on_commit(lambda: _finish_if_idle(batch.pk))
    return batch


def _finish_if_idle(batch_id: int) -> None:
    from simulation.run_state import batch_maybe_finish

    batch_maybe_finish(batch_id=batch_id)


def _stalled(runs: Any) -> list[int]:
    """Return the ids of running runs whose executor is gone (``holder_gone``)."""
    now = timezone.now()
    return [
        pk
        for pk, owner, expires in runs.values_list("pk", "lease_owner", "lease_expires_at")
        if holder_gone(owner or "", expires, now)
    ]


def simulation_runs_recover_lost(now: Any = None) -> int:
    """Queue again the running runs of running batches whose executor is gone (once per threshold).

    The new executor resumes after the last saved message (the claim takes the run over).
    """
    runs = SimulationRun.objects.filter(status=SimulationRun.Status.RUNNING, batch__status=SimulationBatch.Status.RUNNING)
    again = timezone.now() - timedelta(seconds=recovery_seconds())
    ids = []
    with transaction.atomic():
        for pk in _stalled(runs):
            # Fenced: a run queued again since it was claimed waits a threshold before the next
            # time, and of two workers sweeping at once only one queues it.
            fresh = Q(queued_at__isnull=True) | Q(queued_at__lt=F("started_at")) | Q(queued_at__lt=again)
            if SimulationRun.objects.filter(fresh, pk=pk, status=SimulationRun.Status.RUNNING).update(queued_at=timezone.now()):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def _unclaimed() -> Any:
    return SimulationRun.objects.filter(status=SimulationRun.Status.QUEUED, batch__status=SimulationBatch.Status.RUNNING)


def simulation_runs_unclaimed() -> int:
    """Count the queued runs of running batches (each should have a message queued)."""
    return _unclaimed().count()


def simulation_runs_redispatch(cutoff: Any, limit: int | None) -> int:
    """Queue again up to ``limit`` queued runs last queued before ``cutoff``, oldest first."""
    candidates = _unclaimed().filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True)).order_by("queued_at", "pk")
    pairs = list(candidates.values_list("pk", "queued_at")[: limit if limit is not None else None])
    now = timezone.now()
    ids = []
    with transaction.atomic():
        for pk, queued in pairs:
            if SimulationRun.objects.filter(pk=pk, status=SimulationRun.Status.QUEUED, queued_at=queued).update(queued_at=now):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def simulation_runs_recover(*, batch_id: int | None = None) -> int:
    """Queue again at once every lost run: executor gone, or queued past the threshold unclaimed."""
    now = timezone.now()
    if batch_id is None:
        return simulation_runs_recover_lost(now) + simulation_runs_redispatch(
            now - timedelta(seconds=recovery_seconds()), None
        )
    with transaction.atomic():
        ids = _stalled(SimulationRun.objects.filter(batch_id=batch_id, status=SimulationRun.Status.RUNNING))
        _enqueue(ids)
    return len(ids)

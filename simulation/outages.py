"""Simulated conversations behind a chatbot's breaker (core.outages): found and sent again.

The breaker of a conversation is its chatbot's (``target:<id>``): a conversation fails on an
outage of either side (the simulated user's model or the chatbot), and the chatbot is what
differs between the conversations of a batch. A waiting conversation failed with an outage
kind, in a batch nobody cancelled, and has automatic retries left; sent again, it continues
after its last saved message, as ``--resume --include-failed`` would.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.enqueue import enqueue_groups_on_commit
from core.outages import (
    OUTAGE_KINDS,
    Family,
    outage_answered,
    outage_failed,
    outage_summary,
    register,
    waiting_q,
)
from simulation.models import SimulationBatch, SimulationRun

PREFIX = "target:"
RUNS_TASK = "simulation.tasks.simulation_runs_task"
Status = SimulationRun.Status


def _waiting():  # built when used: the retry limit is a setting
    return waiting_q(Status.FAILED)


def breaker_key(target_id: int) -> str:
    return f"{PREFIX}{target_id}"


def _waiting_runs(key: str):  # type: ignore[no-untyped-def]
    return SimulationRun.objects.filter(_waiting(), target_id=int(key[len(PREFIX):])).exclude(
        batch__status=SimulationBatch.Status.CANCELLED
    )


def waiting(key: str, limit: int | None) -> list[int]:
    ids = _waiting_runs(key).order_by("finished_at", "pk").values_list("pk", flat=True)
    return list(ids[:limit] if limit is not None else ids)


@transaction.atomic
def redispatch(run_ids: list[int]) -> int:
    """Queue the runs again (one automatic retry each); their batches run again."""
    from django.db.models import F

    runs = SimulationRun.objects.select_for_update().filter(pk__in=run_ids, status=Status.FAILED)
    ids = list(runs.values_list("pk", flat=True))
    if not ids:
        return 0
    batch_ids = set(SimulationRun.objects.filter(pk__in=ids).values_list("batch_id", flat=True))
    SimulationRun.objects.filter(pk__in=ids).update(
        status=Status.QUEUED, lease_owner="", lease_expires_at=None, error="", error_kind="", finished_at=None,
        queued_at=timezone.now(), auto_retries=F("auto_retries") + 1,
    )
    SimulationBatch.objects.filter(pk__in=batch_ids, status=SimulationBatch.Status.FINISHED).update(
        status=SimulationBatch.Status.RUNNING, finished_at=None,
    )
    enqueue_groups_on_commit(RUNS_TASK, ids)
    return len(ids)


def run_failed(run: SimulationRun, label: str, error: str, kind: str) -> None:
    """Open the chatbot's breaker when a conversation failed because a model did not answer."""
    if kind in OUTAGE_KINDS:
        outage_failed(breaker_key(run.target_id), label, error)


def run_done(target_id: int) -> int:
    """A conversation with this chatbot finished: close its breaker, send the waiting ones again."""
    return outage_answered(breaker_key(target_id))


def waiting_in_batch_id(batch_id: int) -> int:
    """Count the batch's conversations waiting for their provider to answer again."""
    return SimulationRun.objects.filter(_waiting(), batch_id=batch_id).count()


def waiting_in_batch(batch: SimulationBatch) -> int:
    return waiting_in_batch_id(batch.pk)


def batch_outage(batch: SimulationBatch) -> dict | None:
    """The batch page's notice: how many conversations wait, for which chatbots, next check."""
    rows = SimulationRun.objects.filter(_waiting(), batch=batch).exclude(batch__status=SimulationBatch.Status.CANCELLED)
    targets = set(rows.values_list("target_id", flat=True))
    return outage_summary([breaker_key(t) for t in targets], len(rows)) if targets else None


register(Family(prefix=PREFIX, waiting=waiting, redispatch=redispatch))

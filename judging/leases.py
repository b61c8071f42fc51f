"""Leases on judge results: who holds a result, taking it (once), renewing, noticing a loss.

One conditional UPDATE takes a pending result with a fresh lease (owner, expiry); the lease is
renewed while the result is worked on, and only its holder may store the result, so a task
delivered twice does no harm. A result whose holder is gone is taken over by an UPDATE fenced
on that holder, so two workers never both take it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from judging.models import (
    FINISHED_RUN_STATUSES,
    JudgeResult,
    JudgeRun,
    ResultStatus,
    RunStatus,
)
from simulation.llm.engine import db, db_batch
from simulation.run_state import holder_gone


def lease_seconds() -> float:
    """Return the stale threshold: a running result whose lease is this old lost its worker."""
    return float(getattr(settings, "EVALSITE_JUDGE_STALE_SECONDS", 90) or 90)


def max_attempts() -> int:
    """Return the retry limit: how many workers may take a result before it fails for good."""
    return int(getattr(settings, "EVALSITE_JUDGE_MAX_ATTEMPTS", 3) or 3)


def stalled_results(run_id: int | None = None, *, now: Any = None) -> list[int]:
    """Return the ids of running results whose worker is gone (see ``holder_gone``)."""
    now = now or timezone.now()
    qs = JudgeResult.objects.filter(status=ResultStatus.RUNNING).exclude(run__status__in=FINISHED_RUN_STATUSES)
    if run_id is not None:
        qs = qs.filter(run_id=run_id)
    return [
        pk
        for pk, owner, expires in qs.values_list("pk", "lease_owner", "lease_expires_at")
        if holder_gone(owner, expires, now)
    ]


_runs: dict[tuple[int, Any], JudgeRun] = {}
_started_runs: set[tuple[int, Any]] = set()


def _run_view(run_id: int, created_at: Any) -> JudgeRun:
    """Return a run's unchanging part (judge snapshots, instrument, cache options), loaded once.

    A run's configuration is fixed when it is created; its status and counters are always
    read and written in the database, never from here. The creation time is part of the key,
    so a reused id (a test database rolled back) never serves another run's configuration.
    """
    run = _runs.get((run_id, created_at))
    if run is None:
        if len(_runs) > 256:
            _runs.clear()
            _started_runs.clear()
        run = JudgeRun.objects.only("id", "config", "instrument_id", "independent_instances", "use_cache").get(pk=run_id)
        _runs[(run_id, created_at)] = run
    return run


def claim(result_id: int, owner: str) -> JudgeResult | str:
    """Take a result for ``owner`` and return it, or return the status that says why not.

    One conditional UPDATE decides: a pending row is taken with a fresh lease. A running row
    is taken over only when its holder is gone (``holder_gone``: a dead process on this host,
    elsewhere a lease that ran out), by an UPDATE fenced on that holder, so two workers never
    both take it. A row taken more than the retry limit allows fails (in the caller).
    """
    now = timezone.now()
    lease = {"lease_owner": owner, "lease_expires_at": now + timedelta(seconds=lease_seconds())}
    take = {"status": ResultStatus.RUNNING, "started_at": now, "attempts": F("attempts") + 1, **lease}
    # The usual case first, in the cheapest statement.
    if not JudgeResult.objects.filter(pk=result_id, status=ResultStatus.PENDING).update(**take):
        row = JudgeResult.objects.filter(pk=result_id).values_list("status", "lease_owner", "lease_expires_at").first()
        if row is None:
            return "gone"
        status, holder, expires = row
        if status == ResultStatus.RUNNING and holder == owner:
            pass  # ours already: a step retried after its commit went through
        elif status != ResultStatus.RUNNING or not holder_gone(holder, expires, now):
            return status
        elif not JudgeResult.objects.filter(
            pk=result_id, status=ResultStatus.RUNNING, lease_owner=holder, lease_expires_at=expires
        ).update(**take):
            return status
    # Cancelling a run skips its pending and running results in the same transaction, so a
    # result taken here belongs to a run that was not cancelled when we took it.
    fields = JudgeResult.objects.filter(pk=result_id).values_list(*_CLAIMED_FIELDS).get()
    return _claimed(result_id, *fields, owner=owner, now=now)


_CLAIMED_FIELDS = ("run_id", "judge_id", "conversation_id", "instance", "attempts", "run__created_at")


def _claimed(
    pk: int, run_id: int, judge_id: int, conversation_id: int, instance: int, attempts: int, created: Any,
    *, owner: str, now: Any,
) -> JudgeResult:
    """Return a taken result with its run's fixed part; mark the run started (once per process)."""
    result = JudgeResult(
        id=pk, run_id=run_id, judge_id=judge_id, conversation_id=conversation_id,
        instance=instance, attempts=attempts, status=ResultStatus.RUNNING, lease_owner=owner,
    )
    result.run = _run_view(run_id, created)
    if (run_id, created) not in _started_runs:
        JudgeRun.objects.filter(pk=run_id, status=RunStatus.PENDING).update(status=RunStatus.RUNNING, started_at=now)
        _started_runs.add((run_id, created))
    return result


@transaction.atomic
def claim_many(items: list[tuple[int, str]]) -> list[JudgeResult | str]:
    """Claim many results in one transaction (a batched step of the engine).

    The usual case, pending rows, is one UPDATE for all (each row gets its own owner) and one
    SELECT of what the claimed rows need; any other row (running, finished, asked for twice in
    the batch) goes through ``claim``'s fenced path on its own.
    """
    if len(items) == 1:
        return [claim(*items[0])]
    now = timezone.now()
    owners: dict[int, str] = {}
    for result_id, owner in items:
        owners.setdefault(result_id, owner)
    JudgeResult.objects.filter(pk__in=list(owners), status=ResultStatus.PENDING).update(
        status=ResultStatus.RUNNING,
        started_at=now,
        attempts=F("attempts") + 1,
        lease_owner=Case(*(When(pk=pk, then=Value(owner)) for pk, owner in owners.items()), default=Value("")),
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
    )
    rows = {
        row[0]: row
        for row in JudgeResult.objects.filter(pk__in=list(owners)).values_list(
            "pk", "status", "lease_owner", "started_at", *_CLAIMED_FIELDS
        )
    }
    claimed: list[JudgeResult | str] = []
    taken: set[int] = set()
    for result_id, owner in items:
        row = rows.get(result_id)
        if row is None:
            claimed.append("gone")
            continue
        pk, status, holder, started, *fields = row
        if status != ResultStatus.RUNNING or holder != owner or started != now or pk in taken:
            claimed.append(claim(result_id, owner))  # not taken by the UPDATE above: decide alone
            continue
        taken.add(pk)
        claimed.append(_claimed(pk, *fields, owner=owner, now=now))
    return claimed


def renew(result_id: int, owner: str) -> bool:
    """Extend the lease; False when it is no longer ours (cancelled, or taken over)."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(
        JudgeResult.objects.filter(pk=result_id, status=ResultStatus.RUNNING, lease_owner=owner).update(
            lease_expires_at=until
        )
    )


async def keep_lease(result_id: int, owner: str, job: asyncio.Task[Any]) -> None:
    """Renew the lease a few times per stale threshold; stop the job once the lease is lost."""
    every = max(lease_seconds() / 3.0, 0.05)
    while True:
        await asyncio.sleep(every)
        if not await db(renew, result_id, owner):
            job.cancel()
            return

class LeaseLost(Exception):
    """The result is no longer ours (cancelled, or taken over): stop before the next call."""


def held_many(items: list[tuple[int, str]]) -> list[bool]:
    """Return, for each (result, owner), whether it is still running on that owner's lease (one query)."""
    held = set(
        JudgeResult.objects.filter(pk__in={pk for pk, _ in items}, status=ResultStatus.RUNNING).values_list(
            "pk", "lease_owner"
        )
    )
    return [(pk, owner) in held for pk, owner in items]


def guard(result_id: int, owner: str) -> Callable[[], Any]:
    async def still_ours() -> None:
        if not await db_batch(held_many, (result_id, owner)):
            raise LeaseLost()

    return still_ours


def status_of(result_id: int) -> str:
    return JudgeResult.objects.filter(pk=result_id).values_list("status", flat=True).first() or "gone"

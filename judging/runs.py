"""Writes for judge runs: create, execute one result, refresh progress, cancel, retry.

A run's results are created up front, one row per (judge, conversation, instance), and one
Celery task fills each. ``judge_result_job`` (a coroutine for the engine) is idempotent: a
finished row is left alone, and only the holder of a row's lease may store it, so a task
delivered twice does no harm. The lease (owner, expiry) is renewed while the result is worked
on; a result whose lease ran out lost its worker ("stalled"): a worker starting, a worker's
periodic check, ``retry`` or a redelivered task takes it again, up to the retry limit.
Every stored result adds its counts, tokens and cost to the run row in the same transaction
(cheap: no scan of the run); when the counts say the run may be complete, a full recount from
the result rows (``judge_run_refresh``) settles the totals and votes the ensemble.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, transaction
from django.db.models import Case, Count, F, Q, Sum, Value, When
from django.utils import timezone

from core.bulk import insert_rows
from core.enqueue import enqueue_groups_on_commit
from core.recovery import recovery_seconds
from core.transient import is_transient
from judging.cache import DbCache
from judging.calls import Caller, JudgeCallConfig
from judging.checklist import ChecklistOutcome, judge_checklist
from judging.ensemble import ensemble_compute, ensemble_rule, provider_warnings
from judging.errors import JudgingError
from judging.flowjudge import FlowOutcome, judge_flow
from judging.judges import judge_snapshot
from judging.material import (
    checklist_labels,
    conversation_materials,
    failure_reason,
    flow_labels,
    guided_view,
    instrument_view,
    missing_labels,
    prompt_get_cached,
    vote_keys,
)
from judging.models import (
    FINISHED_RUN_STATUSES,
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    ResultStatus,
    RunStatus,
)
from simulation.llm.engine import db, db_batch, run_job, run_jobs
from simulation.run_state import holder_gone, new_owner, owner_finished, owner_started

logger = logging.getLogger("judging")

MAX_INSTANCES = 10
# The Celery task that judges a group of results (judging.tasks); queued by name, see core.enqueue.
JUDGE_RESULTS_TASK = "judging.tasks.judge_results_task"


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if getattr(user, "pk", None) else None


def _enqueue(result_ids: Sequence[int], *, again: bool = False) -> None:
    enqueue_groups_on_commit(JUDGE_RESULTS_TASK, result_ids, on_failure=_not_queued_again if again else _not_queued)


def _not_queued_again(result_ids: list[int], cause: str) -> None:
    """A sweep could not send work again (the broker is away): leave it as it is, for the next sweep.

    A broker outage is not a failure of the work: the rows keep their state, and their queue
    time is cleared so the next sweep (a third of the recovery threshold later) sends them.
    """
    logger.warning("could not queue %d judge result(s) again (%s); the next sweep will", len(result_ids), cause)
    JudgeResult.objects.filter(pk__in=result_ids).update(queued_at=None)


def _not_queued(result_ids: list[int], cause: str) -> None:
    """Fail the results whose task the broker refused (``retry`` queues them again), and settle their runs."""
    now = timezone.now()
    error = f"not queued: the task queue did not answer ({cause})"
    with transaction.atomic():
        failed = list(
            JudgeResult.objects.select_for_update()
            .filter(pk__in=result_ids, status=ResultStatus.PENDING)
            .select_related("run")
        )
        JudgeResult.objects.filter(pk__in=[r.pk for r in failed]).update(
            status=ResultStatus.FAILED, error_kind="queue", error=error[:2000], finished_at=now
        )
        # Like every failure, one MISSING label per item with the reason (none left from before).
        JudgeLabel.objects.filter(result_id__in=[r.pk for r in failed]).delete()
        insert_rows(JudgeLabel, [
            label
            for r in failed
            for label in missing_labels(
                r, instrument_view(r.run.instrument_id, r.run.config["instrument"]["content_hash"]),
                failure_reason("queue", error),
            )
        ])
        for run_id in set(JudgeResult.objects.filter(pk__in=result_ids).values_list("run_id", flat=True)):
            judge_run_refresh(run_id=run_id)


@transaction.atomic
def judge_run_create(
    *,
    judges: Sequence[Judge],
    conversation_ids: Sequence[int],
    selection: dict[str, Any] | None = None,
    instances: int = 1,
    independent_instances: bool = False,
    use_cache: bool = True,
    name: str = "",
    created_by: AbstractBaseUser | None = None,
    start: bool = True,
) -> JudgeRun:
    """Create a run of ``judges`` x conversations x ``instances``; schedule it unless ``start`` is off."""
    judges = list(dict.fromkeys(judges))
    if not judges:
        raise JudgingError("choose at least one judge")
    if not conversation_ids:
        raise JudgingError("the selection matches no conversation")
    if not 1 <= instances <= MAX_INSTANCES:
        raise JudgingError(f"instances must be between 1 and {MAX_INSTANCES}")
    instruments = {judge.instrument_id for judge in judges}
    if len(instruments) > 1:
        raise JudgingError("the judges of one run must judge the same instrument version")
    first = judges[0]
    snapshots = {str(j.pk): judge_snapshot(j, position=i) for i, j in enumerate(judges)}
    run = JudgeRun.objects.create(
        name=name.strip(),
        instrument_id=first.instrument_id,
        mode=first.mode,
        selection=dict(selection or {}),
        config={
            "judges": snapshots,
            "instrument": {"id": first.instrument_id, "content_hash": first.instrument.content_hash},
        },
        instances=instances,
        independent_instances=independent_instances,
        use_cache=use_cache,
        warnings=provider_warnings(list(snapshots.values())),
        ensemble_rule=ensemble_rule(len(judges)),
        n_total=len(judges) * len(conversation_ids) * instances,
        created_by=_user(created_by),
    )
    run.judges.set(judges)
    queued = timezone.now()
    JudgeResult.objects.bulk_create(
        (
            JudgeResult(run=run, judge=judge, conversation_id=cid, instance=k, queued_at=queued)
            for cid in sorted(set(conversation_ids))
            for judge in judges
            for k in range(instances)
        ),
        batch_size=1000,
    )
    run.n_total = run.results.count()
    run.save(update_fields=["n_total"])
    if start:
        _enqueue(list(run.results.values_list("pk", flat=True)))
    return run


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


def _claim(result_id: int, owner: str) -> JudgeResult | str:
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
def _claim_many(items: list[tuple[int, str]]) -> list[JudgeResult | str]:
    """Claim many results in one transaction (a batched step of the engine).

    The usual case, pending rows, is one UPDATE for all (each row gets its own owner) and one
    SELECT of what the claimed rows need; any other row (running, finished, asked for twice in
    the batch) goes through ``_claim``'s fenced path on its own.
    """
    if len(items) == 1:
        return [_claim(*items[0])]
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
            claimed.append(_claim(result_id, owner))  # not taken by the UPDATE above: decide alone
            continue
        taken.add(pk)
        claimed.append(_claimed(pk, *fields, owner=owner, now=now))
    return claimed


def _renew(result_id: int, owner: str) -> bool:
    """Extend the lease; False when it is no longer ours (cancelled, or taken over)."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(
        JudgeResult.objects.filter(pk=result_id, status=ResultStatus.RUNNING, lease_owner=owner).update(
            lease_expires_at=until
        )
    )


async def _keep_lease(result_id: int, owner: str, job: asyncio.Task[Any]) -> None:
    """Renew the lease a few times per stale threshold; stop the job once the lease is lost."""
    every = max(lease_seconds() / 3.0, 0.05)
    while True:
        await asyncio.sleep(every)
        if not await db(_renew, result_id, owner):
            job.cancel()
            return


def _materials(results: list[JudgeResult]) -> list[tuple[Any, Any, Any]]:
    """Return (prompt, instrument view, conversation material) of many results (2 queries)."""
    materials = conversation_materials([r.conversation_id for r in results])
    out = []
    for result in results:
        run = result.run
        snapshot = run.config["judges"][str(result.judge_id)]
        prompt = prompt_get_cached(snapshot["prompt_id"], snapshot["prompt_hash"])
        view = instrument_view(run.instrument_id, run.config["instrument"]["content_hash"])
        # The version's edited item instructions (judging.guidance): in the prompt, so in the cache key.
        view = guided_view(view, snapshot.get("item_guidance"))
        out.append((prompt, view, materials[result.conversation_id]))
    return out


async def _judge(result: JudgeResult, caller: Caller) -> tuple[list[JudgeLabel], ChecklistOutcome | FlowOutcome]:
    prompt, view, material = await db_batch(_materials, result)
    if view.flow is None:
        outcome: ChecklistOutcome | FlowOutcome = await judge_checklist(
            caller=caller,
            prompt=prompt,
            instrument=view.name,
            vignette=material.vignette,
            turns=material.turns,
            items=view.items,
        )
        return checklist_labels(result, view.items, outcome), outcome
    outcome = await judge_flow(caller=caller, prompt=prompt, flow=view.flow, turns=material.turns)
    return flow_labels(result, view.flow, outcome), outcome


class _LeaseLost(Exception):
    """The result is no longer ours (cancelled, or taken over): stop before the next call."""


def _held_many(items: list[tuple[int, str]]) -> list[bool]:
    """Return, for each (result, owner), whether it is still running on that owner's lease (one query)."""
    held = set(
        JudgeResult.objects.filter(pk__in={pk for pk, _ in items}, status=ResultStatus.RUNNING).values_list(
            "pk", "lease_owner"
        )
    )
    return [(pk, owner) in held for pk, owner in items]


def _guard(result_id: int, owner: str) -> Callable[[], Any]:
    async def still_ours() -> None:
        if not await db_batch(_held_many, (result_id, owner)):
            raise _LeaseLost()

    return still_ours


def _status_of(result_id: int) -> str:
    return JudgeResult.objects.filter(pk=result_id).values_list("status", flat=True).first() or "gone"


async def judge_result_job(*, result_id: int, owner: str | None = None) -> str:
    """Judge one conversation for one (run, judge, instance); return the row's status.

    A coroutine for the engine. Safe to run twice: a finished row is left alone, a row held by
    a live worker too; only the holder of the lease may store, and a worker that loses its
    lease (cancelled, or presumed dead and taken over) stops at its next step.
    """
    owner = owner or new_owner("judge")
    owner_started(owner)  # while this job lives, this process's claims as owner are not orphans
    try:
        return await _judge_result(result_id, owner)
    finally:
        owner_finished(owner)


async def _judge_result(result_id: int, owner: str) -> str:
    claimed = await db_batch(_claim_many, (result_id, owner))
    if isinstance(claimed, str):
        return claimed
    result = claimed
    run = result.run
    if result.attempts > max_attempts():
        error = (
            f"gave up after {result.attempts - 1} attempt(s): each time its worker stopped "
            "(killed, out of memory or timed out) before storing the result"
        )
        caller = Caller(JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)]), None)
        await db_batch(_finish_many, _Outcome(result, owner, caller, [], ResultStatus.FAILED, "worker_lost", error, [], ""))
        return ResultStatus.FAILED
    config = JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)])
    caller = Caller.for_result(
        config, instance=result.instance, independent=run.independent_instances, use_cache=run.use_cache
    )
    caller.guard = _guard(result_id, owner)
    labels: list[JudgeLabel] = []
    error_kind = error = ""
    path: list[dict[str, str]] = []
    ended_by = ""
    keeper = asyncio.get_running_loop().create_task(_keep_lease(result_id, owner, asyncio.current_task()))  # type: ignore[arg-type]
    try:
        labels, outcome = await _judge(result, caller)
        error_kind, error = outcome.error_kind, outcome.error
        if isinstance(outcome, FlowOutcome):
            path, ended_by = outcome.path, outcome.ended_by
    except asyncio.CancelledError:
        if keeper.done():  # the lease was lost: someone else owns the row now; write nothing
            logger.info("judge result %s: lease lost (cancelled or taken over); stopping", result_id)
            return await db(_status_of, result_id)
        raise
    except _LeaseLost:  # found before a call: nothing was sent, nothing is written
        logger.info("judge result %s: cancelled or taken over; stopping before its next call", result_id)
        return await db(_status_of, result_id)
    except Exception as exc:  # a bug or a time limit must not leave the row "running"
        logger.exception("judge result %s failed", result_id)
        error_kind, error = "internal", f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        keeper.cancel()
    status = ResultStatus.FAILED if error_kind else ResultStatus.DONE
    outcome = _Outcome(result, owner, caller, labels, status, error_kind, error, path, ended_by)
    if not await db_batch(_finish_many, outcome):
        return await db(_status_of, result_id)  # the lease was lost meanwhile: not ours to say
    return outcome.status  # FAILED if it could not be stored


@dataclass
class _Outcome:
    """What one judge result leaves to store."""

    result: JudgeResult
    owner: str
    caller: Caller
    labels: list[JudgeLabel]
    status: str
    error_kind: str
    error: str
    path: list[dict[str, str]]
    ended_by: str
    replace_labels: bool = False  # labels already stored for it are replaced (a failure recorded after its store failed)


def _finish(
    result: JudgeResult,
    owner: str,
    caller: Caller,
    labels: list[JudgeLabel],
    status: str,
    error_kind: str,
    error: str,
    path: list[dict[str, str]],
    ended_by: str,
) -> bool:
    """Store one outcome (see ``_finish_many``); False if the lease was lost."""
    return _finish_many([_Outcome(result, owner, caller, labels, status, error_kind, error, path, ended_by)])[0]


def _finish_many(outcomes: list[_Outcome]) -> list[bool]:
    """Store outcomes in one transaction; recount and vote each run that may be complete.

    A batched step of the engine: the results finished during one loop turn share one commit,
    one INSERT of all their labels, one INSERT of their cache entries and one counter UPDATE
    per run. Each row's UPDATE is still fenced by its own lease: one that lost it stores
    nothing (and its labels are not inserted).
    """
    # One transaction: an outage between the store and the recount rolls both back, so the
    # step run again (see Engine._again_later) stores and recounts, never one without the other.
    with transaction.atomic():
        stored = _store_isolated(outcomes)
        for run_id in {o.result.run_id for o, ok in zip(outcomes, stored, strict=True) if ok}:
            counts = JudgeRun.objects.filter(pk=run_id).values_list("n_done", "n_failed", "n_total", "status").get()
            if counts[0] + counts[1] >= counts[2] or counts[3] == RunStatus.CANCELLED:
                judge_run_refresh(run_id=run_id)
    return stored


def _store_isolated(outcomes: list[_Outcome]) -> list[bool]:
    """Store the outcomes together; if that fails, each on its own, so one cannot sink the others.

    A result whose own store fails (a database constraint, a value the database refuses) is
    recorded failed (``internal``, with the cause) instead of staying ``running`` until the
    sweeper finds it; the others of the turn are stored as if it had not been there.
    """
    try:
        return _store_many(outcomes)
    except DatabaseError as exc:
        if is_transient(exc):
            raise  # the connection is at fault, not the outcomes: the step is tried again
        if len(outcomes) == 1:
            return [_store_unstorable(outcomes[0], exc)]
        logger.warning("storing %d judge results together failed (%s); storing each alone", len(outcomes), exc)
    return [x for o in outcomes for x in _store_isolated([o])]


def _store_unstorable(o: _Outcome, exc: BaseException) -> bool:
    logger.error("judge result %s could not be stored: %s", o.result.pk, exc)
    error = f"could not store the result: {type(exc).__name__}: {exc}"[:2000]
    o.caller.accepted.clear()  # its replies did not make a result: never replayed
    o.labels, o.status, o.error_kind, o.error = [], ResultStatus.FAILED, "internal", error
    o.replace_labels = True  # its MISSING labels take the place of whatever label is in the way
    return _store_many([o])[0]


def judge_result_execute(*, result_id: int, owner: str | None = None) -> str:
    """Run ``judge_result_job`` to the end in the calling thread (its own engine)."""
    return run_job(lambda: judge_result_job(result_id=result_id, owner=owner))


_COUNTERS = ("n_done", "n_failed", "n_calls", "n_failed_calls", "n_cached", "prompt_tokens", "completion_tokens", "cost_usd", "cost_unknown_calls")


@transaction.atomic
def _store_many(outcomes: list[_Outcome]) -> list[bool]:
    """Store the outcomes and add them to their runs' counters; False where the lease was lost."""
    now = timezone.now()
    stored: list[bool] = []
    labels: list[JudgeLabel] = []
    replaced: list[int] = []
    cache_entries: list[tuple[str, Any]] = []
    deltas: dict[int, dict[str, Any]] = {}
    for o in outcomes:
        totals = o.caller.totals()
        cost = Decimal(str(round(totals["cost_usd"], 6)))
        ok = bool(
            JudgeResult.objects.filter(pk=o.result.pk, status=ResultStatus.RUNNING, lease_owner=o.owner).update(
                status=o.status,
                error_kind=o.error_kind,
                error=o.error,
                path=o.path,
                ended_by=o.ended_by,
                calls=o.caller.records,
                n_calls=totals["n_calls"],
                n_failed_calls=totals["n_failed_calls"],
                n_cached=totals["n_cached"],
                prompt_tokens=totals["prompt_tokens"],
                completion_tokens=totals["completion_tokens"],
                cost_usd=cost,
                cost_unknown_calls=totals["cost_unknown_calls"],
                finished_at=now,
                lease_owner="",
                lease_expires_at=None,
            )
        )
        stored.append(ok)
        if not ok:  # cancelled, or another worker took the row over (ours was presumed lost)
            continue
        if o.result.attempts > 1 or o.replace_labels:  # a first attempt has no labels to replace
            replaced.append(o.result.pk)
        labels += o.labels or _missing_labels(o)
        cache_entries += o.caller.accepted_entries()  # the accepted replies, in this transaction
        failed = o.status == ResultStatus.FAILED
        delta = deltas.setdefault(o.result.run_id, dict.fromkeys(_COUNTERS, 0))
        for name, value in (
            ("n_done", 0 if failed else 1),
            ("n_failed", 1 if failed else 0),
            ("n_calls", totals["n_calls"]),
            ("n_failed_calls", totals["n_failed_calls"]),
            ("n_cached", totals["n_cached"]),
            ("prompt_tokens", totals["prompt_tokens"]),
            ("completion_tokens", totals["completion_tokens"]),
            ("cost_usd", cost),
            ("cost_unknown_calls", totals["cost_unknown_calls"]),
        ):
            delta[name] += value
    if replaced:
        JudgeLabel.objects.filter(result_id__in=replaced).delete()
    if labels:
        insert_rows(JudgeLabel, labels)  # one INSERT for every label of the batch
    if cache_entries:
        DbCache().store_many(cache_entries)
    for run_id, delta in deltas.items():
        JudgeRun.objects.filter(pk=run_id).update(
            **{name: F(name) + value for name, value in delta.items()}, updated_at=now
        )
    return stored


def _missing_labels(o: _Outcome) -> list[JudgeLabel]:
    """Return MISSING labels for a failure that left none (internal, Redis, database, worker lost)."""
    if o.status != ResultStatus.FAILED:
        return []
    run = o.result.run
    view = instrument_view(run.instrument_id, run.config["instrument"]["content_hash"])
    return missing_labels(o.result, view, failure_reason(o.error_kind, o.error))


@transaction.atomic
def judge_run_refresh(*, run_id: int) -> JudgeRun:
    """Recount progress and cost from the results; vote the ensemble once all are finished."""
    run = JudgeRun.objects.select_for_update().get(pk=run_id)
    agg = run.results.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=ResultStatus.DONE)),
        failed=Count("id", filter=Q(status=ResultStatus.FAILED)),
        open=Count("id", filter=Q(status__in=[ResultStatus.PENDING, ResultStatus.RUNNING])),
        calls=Sum("n_calls"),
        failed_calls=Sum("n_failed_calls"),
        cached=Sum("n_cached"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost=Sum("cost_usd"),
        unknown=Sum("cost_unknown_calls"),
    )
    run.n_total, run.n_done, run.n_failed = agg["total"], agg["done"], agg["failed"]
    run.n_calls, run.n_cached = agg["calls"] or 0, agg["cached"] or 0
    run.n_failed_calls = agg["failed_calls"] or 0
    run.prompt_tokens, run.completion_tokens = agg["prompt_tokens"] or 0, agg["completion_tokens"] or 0
    run.cost_usd, run.cost_unknown_calls = agg["cost"] or Decimal("0"), agg["unknown"] or 0
    fields = ["n_total", "n_done", "n_failed", "n_calls", "n_failed_calls", "n_cached", "prompt_tokens",
              "completion_tokens", "cost_usd", "cost_unknown_calls", "updated_at"]
    if agg["open"] == 0 and run.status not in (RunStatus.COMPLETED, RunStatus.PARTIAL, RunStatus.FAILED):
        view = instrument_view(run.instrument_id, run.config["instrument"]["content_hash"])
        ensemble_compute(run=run, item_order=vote_keys(view))
        if run.status != RunStatus.CANCELLED:
            if run.n_failed == 0:
                run.status = RunStatus.COMPLETED
            else:
                run.status = RunStatus.FAILED if run.n_done == 0 else RunStatus.PARTIAL
            run.error = f"{run.n_failed} of {run.n_total} result(s) failed" if run.n_failed else ""
        run.finished_at = timezone.now()
        fields += ["status", "error", "finished_at"]
    run.save(update_fields=fields)
    return run


@transaction.atomic
def judge_run_cancel(*, run: JudgeRun) -> JudgeRun:
    """Stop a run: pending and running results are skipped at once.

    A worker still busy with a result loses its lease: it stops at its next step (or when it
    renews the lease) and stores nothing. ``retry`` schedules the skipped results again.
    """
    run = JudgeRun.objects.select_for_update().get(pk=run.pk)
    if run.is_finished:
        raise JudgingError(f"the run is already {run.get_status_display().lower()}", status=409)
    run.status = RunStatus.CANCELLED
    run.save(update_fields=["status", "updated_at"])
    run.results.filter(status__in=[ResultStatus.PENDING, ResultStatus.RUNNING]).update(
        status=ResultStatus.SKIPPED, finished_at=timezone.now(), lease_owner="", lease_expires_at=None
    )
    return judge_run_refresh(run_id=run.pk)


@transaction.atomic
def judge_run_retry_failed(*, run: JudgeRun, start: bool = True) -> int:
    """Schedule the stalled, failed and skipped results again; return how many.

    While the run is going only stalled results (their worker was lost) are taken back; once
    it has finished, the failed and skipped ones too. A manual retry resets the retry limit.
    """
    run = JudgeRun.objects.select_for_update().get(pk=run.pk)
    stalled = stalled_results(run.pk)
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        if not stalled:
            raise JudgingError(
                "the run is still running and no result is stalled; retry failed results once it has finished",
                status=409,
            )
        ids = stalled
    else:
        ids = stalled + list(
            run.results.filter(status__in=[ResultStatus.FAILED, ResultStatus.SKIPPED]).values_list("pk", flat=True)
        )
    if not ids:
        raise JudgingError("nothing to retry: no result failed", status=409)
    # Their labels go with them: the next attempt is a first attempt again (the retry limit
    # is reset), and a first attempt inserts its labels without looking for old ones.
    JudgeLabel.objects.filter(result_id__in=ids).delete()
    JudgeResult.objects.filter(pk__in=ids).update(
        status=ResultStatus.PENDING, error_kind="", error="", attempts=0, lease_owner="", lease_expires_at=None,
        queued_at=timezone.now(),
    )
    run.status, run.finished_at, run.error = RunStatus.RUNNING, None, ""
    run.save(update_fields=["status", "finished_at", "error", "updated_at"])
    judge_run_refresh(run_id=run.pk)  # the counters no longer include the rescheduled rows
    if start:
        _enqueue(ids)
    return len(ids)


def judge_run_execute_in_process(
    *,
    run_id: int,
    concurrency: int = 8,
    on_result: Callable[[JudgeResult], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> JudgeRun:
    """Run a run's pending (and stalled) results in this process, ``concurrency`` at once.

    The results are coroutines of this thread's engine, the same job the Celery task runs.
    ``on_result`` runs as a database step after each. ``shard=(i, n)`` takes only the results
    whose id is i modulo n, so n processes can share a run.
    """
    index, shards = shard
    ids = [
        pk
        for pk in JudgeResult.objects.filter(run_id=run_id, status=ResultStatus.PENDING).values_list("pk", flat=True)
        if pk % shards == index
    ]
    ids += [pk for pk in stalled_results(run_id) if pk % shards == index]
    owner = new_owner("inline")

    async def one(pk: int) -> str:
        status = await judge_result_job(result_id=pk, owner=owner)
        if on_result is not None:
            await db(lambda: on_result(JudgeResult.objects.get(pk=pk)))
        return status

    run_jobs([lambda pk=pk: one(pk) for pk in ids], concurrency=max(1, concurrency))
    return JudgeRun.objects.get(pk=run_id)


def judge_results_recover_lost(now: Any) -> int:
    """Queue again the running results whose worker is gone (once per threshold each)."""
    again = timezone.now() - timedelta(seconds=recovery_seconds())
    ids = []
    with transaction.atomic():
        for pk in stalled_results(now=now):
            # Fenced: a row queued again since it was claimed waits a threshold before the next
            # time, and of two workers sweeping at once only one queues it.
            fresh = Q(queued_at__isnull=True) | Q(queued_at__lt=F("started_at")) | Q(queued_at__lt=again)
            if JudgeResult.objects.filter(fresh, pk=pk, status=ResultStatus.RUNNING).update(queued_at=timezone.now()):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def _unclaimed() -> Any:
    return JudgeResult.objects.filter(
        status=ResultStatus.PENDING, run__status__in=(RunStatus.PENDING, RunStatus.RUNNING)
    )


def judge_results_unclaimed() -> int:
    """Count the pending results of runs still going (each should have a message queued)."""
    return _unclaimed().count()


def judge_results_redispatch(cutoff: Any, limit: int | None) -> int:
    """Queue again up to ``limit`` pending results queued before ``cutoff``, oldest first."""
    candidates = _unclaimed().filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True)).order_by("queued_at", "pk")
    pairs = list(candidates.values_list("pk", "queued_at")[: limit if limit is not None else None])
    ids = []
    now = timezone.now()
    with transaction.atomic():
        for pk, queued in pairs:
            if JudgeResult.objects.filter(pk=pk, status=ResultStatus.PENDING, queued_at=queued).update(queued_at=now):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def judge_results_recover() -> int:
    """Queue again every lost result now: stalled ones and every unclaimed one past the threshold."""
    now = timezone.now()
    return judge_results_recover_lost(now) + judge_results_redispatch(
        now - timedelta(seconds=recovery_seconds()), None
    )

"""Writes for judge runs: create, execute one result, refresh progress, cancel, retry.

A run's results are created up front, one row per (judge, conversation, instance), and one
Celery task fills each. ``judge_result_execute`` is idempotent: a finished row is left alone,
and only the claim that started a row may store it, so a task delivered twice does no harm.
Every stored result adds its counts, tokens and cost to the run row in the same transaction
(cheap: no scan of the run); when the counts say the run may be complete, a full recount from
the result rows (``judge_run_refresh``) settles the totals and votes the ensemble.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections, connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from core.enqueue import enqueue_on_commit
from judging.calls import Caller, JudgeCallConfig
from judging.checklist import ChecklistOutcome, judge_checklist
from judging.ensemble import ensemble_compute, ensemble_rule, provider_warnings
from judging.errors import JudgingError
from judging.flowjudge import FlowOutcome, judge_flow
from judging.judges import judge_snapshot
from judging.material import (
    checklist_labels,
    conversation_material,
    flow_labels,
    instrument_view,
    prompt_get_cached,
    vote_keys,
)
from judging.models import (
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    ResultStatus,
    RunStatus,
)

logger = logging.getLogger("judging")

MAX_INSTANCES = 10
# The Celery task that judges one result (judging.tasks); queued by name, see core.enqueue.
JUDGE_RESULT_TASK = "judging.tasks.judge_result_task"
# A result still "running" after this long lost its worker: a redelivered task may take it.
STALE_RUNNING = timedelta(minutes=40)


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if getattr(user, "pk", None) else None


def _enqueue(result_ids: Sequence[int]) -> None:
    enqueue_on_commit(JUDGE_RESULT_TASK, result_ids)


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
    JudgeResult.objects.bulk_create(
        (
            JudgeResult(run=run, judge=judge, conversation_id=cid, instance=k)
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


def _claim(result_id: int) -> JudgeResult | None:
    """Mark a result running and return it, or None when there is nothing to do.

    One conditional UPDATE decides: a pending row, or a running one whose worker was lost,
    is taken; ``started_at`` is the claim's token for storing.
    """
    now = timezone.now()
    taken = (
        JudgeResult.objects.filter(pk=result_id)
        .filter(Q(status=ResultStatus.PENDING) | Q(status=ResultStatus.RUNNING, started_at__lt=now - STALE_RUNNING))
        .update(status=ResultStatus.RUNNING, started_at=now, attempts=F("attempts") + 1)
    )
    if not taken:
        return None
    result = JudgeResult.objects.select_related("run").get(pk=result_id)
    run = result.run
    if run.status == RunStatus.CANCELLED:
        JudgeResult.objects.filter(pk=result_id, started_at=now).update(status=ResultStatus.SKIPPED, finished_at=now)
        return None
    if run.status == RunStatus.PENDING:
        JudgeRun.objects.filter(pk=run.pk, status=RunStatus.PENDING).update(status=RunStatus.RUNNING, started_at=now)
    return result


def _judge(result: JudgeResult, caller: Caller) -> tuple[list[JudgeLabel], ChecklistOutcome | FlowOutcome]:
    run = result.run
    snapshot = run.config["judges"][str(result.judge_id)]
    prompt = prompt_get_cached(snapshot["prompt_id"], snapshot["prompt_hash"])
    view = instrument_view(run.instrument_id, run.config["instrument"]["content_hash"])
    material = conversation_material(result.conversation_id)
    if view.flow is None:
        outcome: ChecklistOutcome | FlowOutcome = judge_checklist(
            caller=caller,
            prompt=prompt,
            instrument=view.name,
            vignette=material.vignette,
            turns=material.turns,
            items=view.items,
        )
        return checklist_labels(result, view.items, outcome), outcome
    outcome = judge_flow(caller=caller, prompt=prompt, flow=view.flow, turns=material.turns)
    return flow_labels(result, view.flow, outcome), outcome


def judge_result_execute(*, result_id: int) -> str:
    """Judge one conversation for one (run, judge, instance); return the row's status.

    Safe to call twice: a finished row is left alone.
    """
    result = _claim(result_id)
    if result is None:
        return JudgeResult.objects.filter(pk=result_id).values_list("status", flat=True).get()
    run = result.run
    config = JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)])
    caller = Caller.for_result(
        config, instance=result.instance, independent=run.independent_instances, use_cache=run.use_cache
    )
    labels: list[JudgeLabel] = []
    error_kind = error = ""
    path: list[dict[str, str]] = []
    ended_by = ""
    try:
        labels, outcome = _judge(result, caller)
        error_kind, error = outcome.error_kind, outcome.error
        if isinstance(outcome, FlowOutcome):
            path, ended_by = outcome.path, outcome.ended_by
    except Exception as exc:  # a bug or a time limit must not leave the row "running"
        logger.exception("judge result %s failed", result_id)
        error_kind, error = "internal", f"{type(exc).__name__}: {exc}"[:2000]
    status = ResultStatus.FAILED if error_kind else ResultStatus.DONE
    if _store(result, caller, labels, status, error_kind, error, path, ended_by):
        counts = JudgeRun.objects.filter(pk=run.pk).values_list("n_done", "n_failed", "n_total", "status").get()
        if counts[0] + counts[1] >= counts[2] or counts[3] == RunStatus.CANCELLED:
            judge_run_refresh(run_id=run.pk)
    return status


@transaction.atomic
def _store(
    result: JudgeResult,
    caller: Caller,
    labels: list[JudgeLabel],
    status: str,
    error_kind: str,
    error: str,
    path: list[dict[str, str]],
    ended_by: str,
) -> bool:
    """Store the outcome and add it to the run's counters; False if the claim was lost."""
    totals = caller.totals()
    cost = Decimal(str(round(totals["cost_usd"], 6)))
    stored = JudgeResult.objects.filter(
        pk=result.pk, status=ResultStatus.RUNNING, started_at=result.started_at
    ).update(
        status=status,
        error_kind=error_kind,
        error=error,
        path=path,
        ended_by=ended_by,
        calls=caller.records,
        n_calls=totals["n_calls"],
        n_cached=totals["n_cached"],
        prompt_tokens=totals["prompt_tokens"],
        completion_tokens=totals["completion_tokens"],
        cost_usd=cost,
        cost_unknown_calls=totals["cost_unknown_calls"],
        finished_at=timezone.now(),
    )
    if not stored:
        return False  # another worker took the row over (ours was presumed lost)
    if result.attempts > 1:  # a first attempt has no labels to replace
        JudgeLabel.objects.filter(result=result).delete()
    JudgeLabel.objects.bulk_create(labels)
    caller.commit_accepted()  # cache the accepted replies in the same transaction
    failed = status == ResultStatus.FAILED
    JudgeRun.objects.filter(pk=result.run_id).update(
        n_done=F("n_done") + (0 if failed else 1),
        n_failed=F("n_failed") + (1 if failed else 0),
        n_calls=F("n_calls") + totals["n_calls"],
        n_cached=F("n_cached") + totals["n_cached"],
        prompt_tokens=F("prompt_tokens") + totals["prompt_tokens"],
        completion_tokens=F("completion_tokens") + totals["completion_tokens"],
        cost_usd=F("cost_usd") + cost,
        cost_unknown_calls=F("cost_unknown_calls") + totals["cost_unknown_calls"],
        updated_at=timezone.now(),
    )
    return True


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
        cached=Sum("n_cached"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost=Sum("cost_usd"),
        unknown=Sum("cost_unknown_calls"),
    )
    run.n_total, run.n_done, run.n_failed = agg["total"], agg["done"], agg["failed"]
    run.n_calls, run.n_cached = agg["calls"] or 0, agg["cached"] or 0
    run.prompt_tokens, run.completion_tokens = agg["prompt_tokens"] or 0, agg["completion_tokens"] or 0
    run.cost_usd, run.cost_unknown_calls = agg["cost"] or Decimal("0"), agg["unknown"] or 0
    fields = ["n_total", "n_done", "n_failed", "n_calls", "n_cached", "prompt_tokens",
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
    """Stop a run: pending results are skipped; results already running finish."""
    run = JudgeRun.objects.select_for_update().get(pk=run.pk)
    if run.is_finished:
        raise JudgingError(f"the run is already {run.get_status_display().lower()}", status=409)
    run.status = RunStatus.CANCELLED
    run.save(update_fields=["status", "updated_at"])
    run.results.filter(status=ResultStatus.PENDING).update(
        status=ResultStatus.SKIPPED, finished_at=timezone.now()
    )
    return judge_run_refresh(run_id=run.pk)


@transaction.atomic
def judge_run_retry_failed(*, run: JudgeRun, start: bool = True) -> int:
    """Schedule the failed (and skipped) results again; return how many."""
    run = JudgeRun.objects.select_for_update().get(pk=run.pk)
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        raise JudgingError("the run is still running; retry once it has finished", status=409)
    ids = list(
        run.results.filter(status__in=[ResultStatus.FAILED, ResultStatus.SKIPPED]).values_list("pk", flat=True)
    )
    if not ids:
        raise JudgingError("nothing to retry: no result failed", status=409)
    JudgeResult.objects.filter(pk__in=ids).update(status=ResultStatus.PENDING, error_kind="", error="")
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
    """Run a run's pending results on a pool of threads in this process (no worker needed).

    Each thread calls the same function the Celery task calls, with its own database
    connection, closed when the thread ends. ``shard=(i, n)`` takes only the results whose id
    is i modulo n, so n processes can share a run.
    """
    index, shards = shard
    pending: queue.SimpleQueue[int] = queue.SimpleQueue()
    for pk in JudgeResult.objects.filter(run_id=run_id, status=ResultStatus.PENDING).values_list("pk", flat=True):
        if pk % shards == index:
            pending.put(pk)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while True:
                try:
                    pk = pending.get_nowait()
                except queue.Empty:
                    return
                judge_result_execute(result_id=pk)
                if on_result is not None:
                    on_result(JudgeResult.objects.get(pk=pk))
        except BaseException as exc:  # surfaced after join
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, concurrency))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return JudgeRun.objects.get(pk=run_id)

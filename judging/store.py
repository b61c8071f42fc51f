"""Storing judge results: one transaction per engine step, fenced by each result's lease.

Every stored result adds its counts, tokens and cost to the run row in the same transaction
(cheap: no scan of the run); when the counts say the run may be complete, a full recount from
the result rows (``judge_run_refresh``) settles the totals and votes the ensemble.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from core.bulk import insert_rows
from core.outages import waiting_q
from core.transient import is_transient
from judging import outages
from judging.cache import DbCache
from judging.calls import Caller
from judging.ensemble import ensemble_compute
from judging.material import (
    failure_reason,
    instrument_view,
    missing_labels,
    vote_keys,
)
from judging.models import (
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    ResultStatus,
    RunStatus,
)

logger = logging.getLogger("judging")

@dataclass
class Outcome:
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


def finish(
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
    """Store one outcome (see ``finish_many``); False if the lease was lost."""
    return finish_many([Outcome(result, owner, caller, labels, status, error_kind, error, path, ended_by)])[0]


def finish_many(outcomes: list[Outcome]) -> list[bool]:
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
        # A judge that did not answer waits for its provider (core.outages); one that answered
        # sends its waiting judgements again.
        outages.results_stored([
            (o.result.judge_id, o.status, o.error_kind, o.error) for o, ok in zip(outcomes, stored, strict=True) if ok
        ])
    return stored


def _store_isolated(outcomes: list[Outcome]) -> list[bool]:
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


def _store_unstorable(o: Outcome, exc: BaseException) -> bool:
    logger.error("judge result %s could not be stored: %s", o.result.pk, exc)
    error = f"could not store the result: {type(exc).__name__}: {exc}"[:2000]
    o.caller.accepted.clear()  # its replies did not make a result: never replayed
    o.labels, o.status, o.error_kind, o.error = [], ResultStatus.FAILED, "internal", error
    o.replace_labels = True  # its MISSING labels take the place of whatever label is in the way
    return _store_many([o])[0]

_COUNTERS = ("n_done", "n_failed", "n_calls", "n_failed_calls", "n_cached", "prompt_tokens", "completion_tokens", "cost_usd", "cost_unknown_calls")


@transaction.atomic
def _store_many(outcomes: list[Outcome]) -> list[bool]:
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


def _missing_labels(o: Outcome) -> list[JudgeLabel]:
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
        # Failed because the judge's provider did not answer, with automatic retries left: the
        # run is not finished while its breaker will send them again (core.outages).
        waiting=Count("id", filter=waiting_q(ResultStatus.FAILED)),
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
    waiting = agg["waiting"] if run.status != RunStatus.CANCELLED else 0
    if agg["open"] == 0 and waiting == 0 and run.status not in (RunStatus.COMPLETED, RunStatus.PARTIAL, RunStatus.FAILED):
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

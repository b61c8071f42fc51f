"""Writes for judge runs: create, cancel, retry, and send lost work again.

A run's results are created up front, one row per (judge, conversation, instance), and one
Celery task fills each (``judging.execute``: the job, its leases in ``judging.leases``, its
store in ``judging.store``, where ``judge_run_refresh`` recounts a run and votes its ensemble).
A result whose lease ran out lost its worker ("stalled"): a worker starting, a worker's
periodic check, ``retry`` or a redelivered task takes it again, up to the retry limit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.bulk import insert_rows
from core.enqueue import enqueue_groups_on_commit
from core.outages import OUTAGE_KINDS
from core.recovery import recovery_seconds
from judging.ensemble import ensemble_rule, provider_warnings
from judging.errors import JudgingError
from judging.judges import judge_snapshot
from judging.leases import stalled_results
from judging.material import (
    failure_reason,
    instrument_view,
    missing_labels,
)
from judging.models import (
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    ResultStatus,
    RunStatus,
)
from judging.store import judge_run_refresh

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
        # Judgements waiting for their provider (core.outages) may be sent again by a person now.
        waiting = list(run.results.filter(status=ResultStatus.FAILED, error_kind__in=OUTAGE_KINDS).values_list("pk", flat=True))
        if not stalled and not waiting:
            raise JudgingError(
                "the run is still running and no result is stalled; retry failed results once it has finished",
                status=409,
            )
        ids = stalled + waiting
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

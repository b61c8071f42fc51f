"""Reports cached per data version, computed by a Celery task with progress when cold.

Each kind of report registers how to fingerprint its data (``version``) and how to compute it
(``compute``, which reports its progress through a callback). :func:`report_get` answers from
the cache when the data has not changed; otherwise it either computes in place (``wait=True``,
or Celery in eager mode) or claims the row, queues ``reports.tasks.report_compute_task`` and
returns the pending state, which the page shows as a progress bar until the task is done.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.enqueue import enqueue_on_commit
from core.recovery import recovery_seconds
from reports.methods import attach as attach_methods
from reports.models import ReportCache, ReportStatus
from simulation.run_state import holder_gone, new_owner, owner_finished, owner_started

# Bump when a payload's shape or meaning changes: cached payloads of an older format are recomputed.
# 4: scorecard intervals (ci_low/ci_high), the realism page's perceived levels, and every payload's
# methods paragraph (``methods``, reports.methods). 5: the leaderboard's headline is humans only
# when no judge-assisted estimate can be made. 6: the judges report's constant-judge baseline
# (``baseline`` per group, ``constant_judge_passes`` per verdict). 7: reliability says how many gold
# ratings it left out. 8: the humans-only interval of a yes/no proportion is Wilson's score interval
# (``interval``, ``interval_name`` and ``interval_n`` on every judge-assisted estimate).
PAYLOAD_FORMAT = 8
# A claim older than this is taken over (its worker died before acks_late redelivered it).
STALE_AFTER = timedelta(minutes=15)
# A failed computation is shown with its error; asked for again after this, it is retried.
RETRY_FAILED_AFTER = timedelta(minutes=1)
# Workers that may die on one job before it fails with the reason (an out-of-memory report would
# otherwise take down a worker every time it is sent again).
MAX_ATTEMPTS = 3

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class ReportKind:
    version: Callable[[dict[str, Any]], str]
    compute: Callable[[dict[str, Any], Progress], dict[str, Any]]
    # A report has a methods paragraph (reports.methods); a job that makes a file (the publication bundle) has none.
    methods: bool = True


KINDS: dict[str, ReportKind] = {}


def register(name: str, *, version: Callable[[dict[str, Any]], str], compute: Callable[[dict[str, Any], Progress], dict[str, Any]],
             methods: bool = True) -> None:
    """Register a kind of report (done once at import by ``reports.services``); ``methods=False``: no methods paragraph."""
    KINDS[name] = ReportKind(version, compute, methods)


def report_key(kind: str, params: dict[str, Any]) -> str:
    return f"{kind}:" + ":".join(f"{k}={params[k]}" for k in sorted(params))


def data_version(kind: str, params: dict[str, Any]) -> str:
    raw = f"{PAYLOAD_FORMAT}|{KINDS[kind].version(params)}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def runs_inline() -> bool:
    """Tell whether Celery runs tasks in place (tests, scripts): then a report is computed now."""
    return bool(current_app.conf.task_always_eager)


def _cache_info(row: ReportCache, hit: bool) -> dict[str, Any]:
    return {"hit": hit, "computed_at": row.computed_at.isoformat(), "seconds": row.seconds, "job": row.pk}


def pending_state(row: ReportCache) -> dict[str, Any]:
    """Return what the page and the API show while a report is being computed."""
    return {
        "pending": True,
        "status": row.status,
        "progress": row.progress,
        "stage": row.stage,
        "error": row.error,
        "job": row.pk,
        "started_at": row.started_at.isoformat() if row.started_at else None,
    }


def report_get(kind: str, params: dict[str, Any], *, wait: bool = True, version: str | None = None) -> dict[str, Any]:
    """Return the report's payload (with ``_cache``), or its pending state (``pending: True``).

    ``wait=False`` (pages, API): a cold report is queued and the pending state returned at
    once, unless Celery runs in place. ``wait=True`` (exports, scripts): computed now if needed.
    ``version``: the report's ``data_version`` when the caller has just computed it.
    """
    key = report_key(kind, params)
    version = version or data_version(kind, params)
    row = ReportCache.objects.filter(key=key).first()
    if row is not None and row.data_version == version and row.status == ReportStatus.READY:
        return {**row.payload, "_cache": _cache_info(row, True)}
    if wait or runs_inline():
        return _compute_now(kind, params, key, version)
    fresh_claim = (
        row is not None
        and row.data_version == version
        and row.status == ReportStatus.COMPUTING
        and row.started_at is not None
        and timezone.now() - row.started_at < STALE_AFTER
    )
    failed_just_now = (
        row is not None
        and row.data_version == version
        and row.status == ReportStatus.FAILED
        and row.started_at is not None
        and timezone.now() - row.started_at < RETRY_FAILED_AFTER
    )
    if fresh_claim or failed_just_now:
        return pending_state(row)  # type: ignore[arg-type]
    return pending_state(_claim(kind, params, key, version))


def report_cached(kind: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """Return the report's payload if it is cached at the current data version, else None (never computes)."""
    row = ReportCache.objects.filter(key=report_key(kind, params)).first()
    if row is None or row.status != ReportStatus.READY or row.data_version != data_version(kind, params):
        return None
    return {**row.payload, "_cache": _cache_info(row, True)}


@transaction.atomic
def _claim(kind: str, params: dict[str, Any], key: str, version: str) -> ReportCache:
    row, _ = ReportCache.objects.select_for_update().update_or_create(
        key=key,
        defaults={
            "kind": kind, "params": params, "data_version": version, "status": ReportStatus.COMPUTING,
            "progress": 0.0, "stage": "queued: waiting for a worker", "error": "", "started_at": timezone.now(),
            "queued_at": timezone.now(), "lease_owner": "", "taken_at": None, "attempts": 0,
        },
        create_defaults={
            "kind": kind, "params": params, "data_version": version, "status": ReportStatus.COMPUTING,
            "progress": 0.0, "stage": "queued: waiting for a worker", "error": "", "started_at": timezone.now(),
            "queued_at": timezone.now(), "lease_owner": "", "payload": {}, "taken_at": None, "attempts": 0,
        },
    )
    enqueue_on_commit(REPORT_TASK, [row.pk], on_failure=_not_queued)
    return row


REPORT_TASK = "reports.tasks.report_compute_task"


def _not_queued_again(cache_ids: list[int], cause: str) -> None:
    """A sweep could not send a job again (the broker is away): the next sweep will."""
    ReportCache.objects.filter(pk__in=cache_ids, status=ReportStatus.COMPUTING).update(queued_at=None)


def _computing() -> Any:
    return ReportCache.objects.filter(status=ReportStatus.COMPUTING)


def report_jobs_recover_lost(now: Any) -> int:
    """Queue again the report jobs whose worker is gone; return how many.

    A worker on this host is known dead at once, and its job is sent again at the next sweep
    when that worker took it after its last sending (else once per threshold); elsewhere a job
    is taken for lost once it has computed for ``STALE_AFTER`` (reports have no lease renewed
    while they compute). A job that ``MAX_ATTEMPTS`` workers died on fails with the reason.
    """
    again = now - timedelta(seconds=recovery_seconds())
    ids = []
    rows = _computing().exclude(lease_owner="").values_list("pk", "lease_owner", "started_at", "attempts")
    with transaction.atomic():
        for pk, owner, started, attempts in rows:
            if not holder_gone(owner, started + STALE_AFTER if started else None, now):
                continue
            if attempts >= MAX_ATTEMPTS:
                _computing().filter(pk=pk, lease_owner=owner).update(
                    status=ReportStatus.FAILED, lease_owner="", stage="failed", started_at=now,
                    error=(f"its worker stopped {attempts} times before finishing it (killed, out of memory "
                           "or timed out); it is tried again when the page is opened after a minute"),
                )
                continue
            fresh = Q(queued_at__isnull=True) | Q(queued_at__lt=F("taken_at")) | Q(queued_at__lt=again)
            if _computing().filter(fresh, pk=pk, lease_owner=owner).update(
                queued_at=timezone.now(), lease_owner="", stage="queued again: its worker stopped"
            ):
                ids.append(pk)
        enqueue_on_commit(REPORT_TASK, ids, on_failure=_not_queued_again)
    return len(ids)


def report_jobs_unclaimed() -> int:
    """Count the report jobs waiting for a worker (each should have a message queued)."""
    return _computing().filter(lease_owner="").count()


def report_jobs_redispatch(cutoff: Any, limit: int | None) -> int:
    """Queue again up to ``limit`` report jobs queued before ``cutoff`` and never taken, oldest first."""
    candidates = _computing().filter(lease_owner="").filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True))
    pairs = list(candidates.order_by("queued_at", "pk").values_list("pk", "queued_at")[: limit if limit is not None else None])
    now = timezone.now()
    ids = []
    with transaction.atomic():
        for pk, queued in pairs:
            if _computing().filter(pk=pk, lease_owner="", queued_at=queued).update(queued_at=now):
                ids.append(pk)
        enqueue_on_commit(REPORT_TASK, ids, on_failure=_not_queued_again)
    return len(ids)


def _not_queued(cache_ids: list[int], cause: str) -> None:
    """Fail a claim whose task the broker refused; the next visit claims it again at once."""
    ReportCache.objects.filter(pk__in=cache_ids, status=ReportStatus.COMPUTING).update(
        status=ReportStatus.FAILED, stage="not queued", started_at=None,
        error=f"not queued: the task queue did not answer ({cause})"[:2000],
    )


def _computed(kind: str, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Compute a report and attach its methods paragraph, written from the payload just computed."""
    payload = KINDS[kind].compute(params, progress)
    return attach_methods(kind, params, payload) if KINDS[kind].methods else payload


def report_forget(kind: str, params: dict[str, Any], *, data_version: str) -> None:
    """Take back a ready result whose output outside the database is gone (a file): the next ask computes it again."""
    ReportCache.objects.filter(key=report_key(kind, params), data_version=data_version, status=ReportStatus.READY).update(
        data_version="", stage="its file is gone: made again")


def _compute_now(kind: str, params: dict[str, Any], key: str, version: str) -> dict[str, Any]:
    started = time.perf_counter()
    payload = _computed(kind, params, lambda fraction, stage: None)
    seconds = time.perf_counter() - started
    payload = json.loads(json.dumps(payload))  # what the cache returns later: same types now
    row, _ = ReportCache.objects.update_or_create(
        key=key,
        defaults={
            "kind": kind, "params": params, "data_version": version, "payload": payload, "seconds": seconds,
            "status": ReportStatus.READY, "progress": 1.0, "stage": "", "error": "",
        },
    )
    return {**payload, "_cache": _cache_info(row, False)}


def report_compute(*, cache_id: int) -> str:
    """Compute a claimed report, writing its progress as it goes; return the final status.

    Safe to run twice: a row already ready at its version is left alone. The result is stored
    only if the row still asks for the version computed (newer data re-claims the row).
    """
    row = ReportCache.objects.filter(pk=cache_id).first()
    if row is None or row.kind not in KINDS:
        return "gone"
    if row.status == ReportStatus.READY:
        return row.status
    version = row.data_version
    owner = new_owner("report")
    # Taken by one worker at a time: a late or second delivery while a living worker computes
    # it does nothing (the sweeper sends it again should that worker die).
    now = timezone.now()
    if row.lease_owner and not holder_gone(row.lease_owner, row.started_at + STALE_AFTER if row.started_at else None, now):
        return "busy"
    taken = ReportCache.objects.filter(pk=cache_id, lease_owner=row.lease_owner, data_version=version).update(
        lease_owner=owner, taken_at=now, attempts=F("attempts") + 1
    )
    if not taken:
        return "busy"
    owner_started(owner)
    try:
        return _report_compute(row, cache_id, version)
    finally:
        owner_finished(owner)
        ReportCache.objects.filter(pk=cache_id, lease_owner=owner).update(lease_owner="")


def _report_compute(row: ReportCache, cache_id: int, version: str) -> str:
    """Compute the taken row's report at ``version``, writing progress, and store it (or its error)."""

    def progress(fraction: float, stage: str) -> None:
        ReportCache.objects.filter(pk=cache_id, data_version=version).update(
            progress=max(0.0, min(1.0, fraction)), stage=stage[:200]
        )

    progress(0.0, "starting")
    started = time.perf_counter()
    try:
        payload = _computed(row.kind, dict(row.params), progress)
    except Exception as exc:  # the page shows the error instead of spinning forever
        ReportCache.objects.filter(pk=cache_id, data_version=version).update(
            status=ReportStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], stage="failed"
        )
        raise
    seconds = time.perf_counter() - started
    ReportCache.objects.filter(pk=cache_id, data_version=version).update(
        payload=json.loads(json.dumps(payload)), seconds=seconds, status=ReportStatus.READY,
        progress=1.0, stage="", error="", computed_at=timezone.now(),
    )
    return ReportStatus.READY


def job_state(cache_id: int) -> dict[str, Any] | None:
    """Return a job's state for the progress poll (None when there is no such job)."""
    row = ReportCache.objects.filter(pk=cache_id).first()
    if row is None:
        return None
    state = pending_state(row)
    state["pending"] = row.status != ReportStatus.READY
    return state


def job_owner(cache_id: int) -> dict[str, Any] | None:
    """Return the parameters of a job (which study or run it belongs to), for access checks."""
    row = ReportCache.objects.filter(pk=cache_id).only("params").first()
    return None if row is None else dict(row.params)

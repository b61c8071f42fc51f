"""Reads of simulation batches: lists, one batch, its progress. Access checks live here.

Researchers, coordinators and admins may read batches (coordinators only read); everyone else
gets 404, so an outsider learns nothing about what exists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from core.roles import Role, can_view_corpus, has_any_role, user_roles
from core.visibility import visible
from corpus.models import Message, Target
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.preflight import ErrorGroup, error_groups

RUN_ROLES = frozenset({Role.RESEARCHER, Role.ADMIN})


def can_run_simulations(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Return whether ``user`` may create, cancel and resume simulation batches."""
    return has_any_role(user, RUN_ROLES)


def _require_view(user: AbstractBaseUser | AnonymousUser) -> None:
    if not can_view_corpus(user):
        raise Http404("not found")


def batch_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[SimulationBatch]:
    """Return the batches with their run counts by status (one query)."""
    _require_view(user)
    S = SimulationRun.Status
    return (
        visible(SimulationBatch.objects.all(), user).select_related("persona_set", "created_by")
        .annotate(
            runs_total=Count("runs"),
            runs_done=Count("runs", filter=Q(runs__status=S.DONE)),
            runs_failed=Count("runs", filter=Q(runs__status=S.FAILED)),
            runs_active=Count("runs", filter=Q(runs__status__in=SimulationRun.ACTIVE)),
        )
        .order_by("-id")
    )


def batch_listed_state(batch: SimulationBatch) -> str:
    """Return the honest state of a batch from ``batch_list_for_user`` (its run counts)."""
    return batch_state(
        status=batch.status,
        active=batch.runs_active,  # type: ignore[attr-defined]
        done=batch.runs_done,  # type: ignore[attr-defined]
        failed=batch.runs_failed,  # type: ignore[attr-defined]
    )


def batch_get_for_user(user: AbstractBaseUser | AnonymousUser, *, code: str, act: bool = False) -> SimulationBatch:
    """Return a batch the user may read; with ``act``, one they may also cancel or resume (else 403)."""
    _require_view(user)
    try:
        batch = (
            visible(SimulationBatch.objects.all(), user).select_related(
                "persona_set", "persona_template", "reminder_template", "kickoff_template", "created_by"
            )
            .prefetch_related(Prefetch("targets", queryset=Target.objects.order_by("code")))
            .get(code=code)
        )
    except SimulationBatch.DoesNotExist as exc:
        raise Http404("not found") from exc
    if act and not batch_may_act(user, batch):
        raise PermissionDenied("only the researcher who started this batch or an administrator may cancel or resume it")
    return batch


def batch_may_act(user: AbstractBaseUser | AnonymousUser, batch: SimulationBatch) -> bool:
    """Return whether the user may cancel or resume the batch: the one who started it, or an admin."""
    if Role.ADMIN in user_roles(user):
        return True
    return can_run_simulations(user) and batch.created_by_id is not None and batch.created_by_id == user.pk


def batch_runs(batch: SimulationBatch, *, status: str | None = None) -> QuerySet[SimulationRun]:
    """Return the runs of a batch with what the run table shows, in one query."""
    qs = batch.runs.select_related("persona", "target", "conversation").order_by("id")
    if status:
        qs = qs.filter(status=status)
    return qs


# What a batch honestly is, whatever its stored status says: a batch whose every conversation
# failed is "failed", not "finished". The API (detail and list) and the pages read the same one.
BATCH_STATE_LABELS = {
    "running": "Running",
    "cancelled": "Cancelled",
    "failed": "Failed",
    "partial": "Finished with failures",
    "finished": "Finished",
}


def batch_state(*, status: str, active: int, done: int, failed: int) -> str:
    """Return running, cancelled, failed, partial (finished with failures) or finished.

    ``status`` is the batch's stored status; ``active`` counts its queued and running
    conversations, ``done`` and ``failed`` its finished ones.
    """
    if status == SimulationBatch.Status.CANCELLED:
        return "cancelled"
    if active:
        return "running"
    if failed and not done:
        return "failed"
    if failed:
        return "partial"
    return "finished"


@dataclass(frozen=True)
class BatchProgress:
    total: int
    queued: int
    running: int
    done: int
    failed: int
    cancelled: int
    flagged: int  # finished runs whose conversation failed an integrity check
    stalled: int  # running, but the executor's lease has expired
    messages: int
    expected_messages: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    elapsed_seconds: float
    eta_seconds: float | None
    cost_unknown_calls: int = 0
    batch_status: str = SimulationBatch.Status.RUNNING
    failed_calls: int = 0  # of ``calls`` (every HTTP request), the attempts that failed

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.cancelled

    @property
    def percent(self) -> int:
        return int(100 * self.finished / self.total) if self.total else 100

    @property
    def state(self) -> str:
        """Return what the batch honestly is: running, cancelled, failed, partial or finished."""
        return batch_state(
            status=self.batch_status, active=self.queued + self.running, done=self.done, failed=self.failed
        )

    @property
    def state_label(self) -> str:
        return BATCH_STATE_LABELS[self.state]

    @property
    def headline(self) -> str:
        """Return the state in words, with the counts that matter for it."""
        return {
            "running": f"Running: {self.finished} of {self.total} finished ({self.done} done, {self.failed} failed)",
            "cancelled": f"Cancelled: {self.done} done, {self.cancelled} cancelled, {self.failed} failed of {self.total}",
            "failed": f"Failed: all {self.failed} conversation{'s' if self.failed != 1 else ''} failed",
            "partial": f"Finished with failures: {self.done} done, {self.failed} failed of {self.total}",
            "finished": f"Finished: all {self.done} conversation{'s' if self.done != 1 else ''} done",
        }[self.state]

    @property
    def cost_known(self) -> bool:
        """Return False when no call had a known price (then the total is unknown, not zero)."""
        return not (self.cost_unknown_calls and self.cost_unknown_calls >= self.calls - self.failed_calls)

    def share(self, n: int) -> float:
        return round(100 * n / self.total, 2) if self.total else 0.0

    @property
    def done_share(self) -> float:
        return self.share(self.done)

    @property
    def failed_share(self) -> float:
        return self.share(self.failed)

    @property
    def cancelled_share(self) -> float:
        return self.share(self.cancelled)

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self), "finished": self.finished, "percent": self.percent,
            "state": self.state, "state_label": self.state_label,
        }


def batch_progress(batch: SimulationBatch) -> BatchProgress:
    """Return the counts, tokens, cost and an estimate of the time left (one query)."""
    S = SimulationRun.Status
    now = timezone.now()
    active = Q(status__in=SimulationRun.ACTIVE)
    row = batch.runs.aggregate(
        total=Count("id"),
        queued=Count("id", filter=Q(status=S.QUEUED)),
        running=Count("id", filter=Q(status=S.RUNNING)),
        done=Count("id", filter=Q(status=S.DONE)),
        failed=Count("id", filter=Q(status=S.FAILED)),
        cancelled=Count("id", filter=Q(status=S.CANCELLED)),
        # Any finished run whose conversation failed a check: a failed run's partial conversation
        # too. A queued or running conversation is not checked yet ("running", never "flagged").
        flagged=Count("id", filter=Q(conversation__integrity_ok=False) & ~active),
        stalled=Count("id", filter=Q(status=S.RUNNING, lease_expires_at__lt=now)),
        messages=Sum("messages_done"),
        active_messages=Sum("messages_done", filter=active),
        calls=Sum("calls"),
        failed_calls=Sum("failed_calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost_usd=Sum("cost_usd"),
        cost_unknown_calls=Sum("cost_unknown_calls"),
    )
    counts = {k: int(row[k] or 0) for k in ("total", "queued", "running", "done", "failed", "cancelled", "flagged", "stalled")}
    messages = int(row["messages"] or 0)
    end = batch.finished_at or batch.cancelled_at or now
    elapsed = max((end - (batch.started_at or batch.created_at)).total_seconds(), 0.0)
    remaining = (counts["queued"] + counts["running"]) * batch.turns - int(row["active_messages"] or 0)
    eta = None
    if batch.status == SimulationBatch.Status.RUNNING and messages and elapsed > 0:
        eta = max(remaining, 0) / _message_rate(batch, now=now, elapsed=elapsed, messages=messages)
    return BatchProgress(
        **counts,
        messages=messages,
        expected_messages=counts["total"] * batch.turns,
        calls=int(row["calls"] or 0),
        prompt_tokens=int(row["prompt_tokens"] or 0),
        completion_tokens=int(row["completion_tokens"] or 0),
        cost_usd=float(row["cost_usd"] or 0.0),
        elapsed_seconds=elapsed,
        eta_seconds=eta,
        cost_unknown_calls=int(row["cost_unknown_calls"] or 0),
        batch_status=batch.status,
        failed_calls=int(row["failed_calls"] or 0),
    )


# The pace behind "about 6 minutes left": messages written in this recent window. The whole
# batch's average would count the wait for a worker and the launch check as slowness, and a
# conversation's first calls all start together, so early on it overestimates by far.
PACE_WINDOW = timedelta(minutes=5)


def _message_rate(batch: SimulationBatch, *, now: datetime, elapsed: float, messages: int) -> float:
    """Return messages per second over the recent window (the whole batch's average if none came)."""
    since = max(now - PACE_WINDOW, batch.started_at or batch.created_at)
    window = (now - since).total_seconds()
    recent = Message.objects.filter(conversation__simulation_run__batch=batch, created_at__gte=since).count()
    if recent and window > 0:
        return recent / window
    return messages / elapsed


def batch_error_groups(batch: SimulationBatch) -> list[ErrorGroup]:
    """Return the failures of a batch grouped by error kind, most frequent first (two queries)."""
    return error_groups(batch.runs.filter(status=SimulationRun.Status.FAILED))


def prompt_template_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[PromptTemplate]:
    _require_view(user)
    return PromptTemplate.objects.order_by("kind", "key", "-version")


def prompt_template_get(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> PromptTemplate:
    _require_view(user)
    try:
        return PromptTemplate.objects.get(pk=pk)
    except PromptTemplate.DoesNotExist as exc:
        raise Http404("not found") from exc

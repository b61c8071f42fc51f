"""Reads of simulation batches: lists, one batch, its progress. Access checks live here.

Researchers, coordinators and admins may read batches (coordinators only read); everyone else
gets 404, so an outsider learns nothing about what exists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from core.roles import Role, can_view_corpus, has_any_role
from corpus.models import Target
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun

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
        SimulationBatch.objects.select_related("persona_set", "created_by")
        .annotate(
            runs_total=Count("runs"),
            runs_done=Count("runs", filter=Q(runs__status=S.DONE)),
            runs_failed=Count("runs", filter=Q(runs__status=S.FAILED)),
            runs_active=Count("runs", filter=Q(runs__status__in=SimulationRun.ACTIVE)),
        )
        .order_by("-id")
    )


def batch_get_for_user(user: AbstractBaseUser | AnonymousUser, *, code: str) -> SimulationBatch:
    _require_view(user)
    try:
        return (
            SimulationBatch.objects.select_related(
                "persona_set", "persona_template", "reminder_template", "kickoff_template", "created_by"
            )
            .prefetch_related(Prefetch("targets", queryset=Target.objects.order_by("code")))
            .get(code=code)
        )
    except SimulationBatch.DoesNotExist as exc:
        raise Http404("not found") from exc


def batch_runs(batch: SimulationBatch, *, status: str | None = None) -> QuerySet[SimulationRun]:
    """Return the runs of a batch with what the run table shows, in one query."""
    qs = batch.runs.select_related("persona", "target", "conversation").order_by("id")
    if status:
        qs = qs.filter(status=status)
    return qs


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

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.cancelled

    @property
    def percent(self) -> int:
        return int(100 * self.finished / self.total) if self.total else 100

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "finished": self.finished, "percent": self.percent}


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
        flagged=Count("id", filter=Q(status=S.DONE, conversation__integrity_ok=False)),
        stalled=Count("id", filter=Q(status=S.RUNNING, lease_expires_at__lt=now)),
        messages=Sum("messages_done"),
        active_messages=Sum("messages_done", filter=active),
        calls=Sum("calls"),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        cost_usd=Sum("cost_usd"),
    )
    counts = {k: int(row[k] or 0) for k in ("total", "queued", "running", "done", "failed", "cancelled", "flagged", "stalled")}
    messages = int(row["messages"] or 0)
    end = batch.finished_at or batch.cancelled_at or now
    elapsed = max((end - (batch.started_at or batch.created_at)).total_seconds(), 0.0)
    remaining = (counts["queued"] + counts["running"]) * batch.turns - int(row["active_messages"] or 0)
    eta = None
    if batch.status == SimulationBatch.Status.RUNNING and messages and elapsed > 0:
        eta = max(remaining, 0) / (messages / elapsed)
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
    )


def prompt_template_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[PromptTemplate]:
    _require_view(user)
    return PromptTemplate.objects.order_by("kind", "key", "-version")


def prompt_template_get(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> PromptTemplate:
    _require_view(user)
    try:
        return PromptTemplate.objects.get(pk=pk)
    except PromptTemplate.DoesNotExist as exc:
        raise Http404("not found") from exc

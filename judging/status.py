"""Stalled judge results for the status page (``core.status``)."""

from __future__ import annotations

from datetime import datetime

from core.status import WAITING_AFTER, WORKER_HINT, Stalled, stalled_probe_register
from judging.models import FINISHED_RUN_STATUSES, JudgeResult, ResultStatus


def judging_stalled(now: datetime) -> list[Stalled]:
    going = JudgeResult.objects.exclude(run__status__in=FINISHED_RUN_STATUSES)
    waiting = going.filter(status=ResultStatus.PENDING, run__created_at__lt=now - WAITING_AFTER)
    lost = going.filter(status=ResultStatus.RUNNING, lease_expires_at__lt=now)
    return [
        Stalled("judge results", "pending for over 10 minutes, no worker took them", waiting.count(), WORKER_HINT,
                tuple(f"run {r}" for r in waiting.values_list("run_id", flat=True).distinct()[:5])),
        Stalled("judge results", "running, but their worker stopped renewing its lease", lost.count(),
                "A worker takes them back when it starts and once per stale threshold; `manage.py judge retry RUN` queues them now.",
                tuple(f"run {r}" for r in lost.values_list("run_id", flat=True).distinct()[:5])),
    ]


stalled_probe_register("judging", judging_stalled)

"""Stalled simulation runs for the status page (``core.status``)."""

from __future__ import annotations

from datetime import datetime

from core.status import WAITING_AFTER, WORKER_HINT, Stalled, stalled_probe_register
from simulation.models import SimulationRun


def simulation_stalled(now: datetime) -> list[Stalled]:
    waiting = SimulationRun.objects.filter(status=SimulationRun.Status.QUEUED, queued_at__lt=now - WAITING_AFTER)
    lost = SimulationRun.objects.filter(status=SimulationRun.Status.RUNNING, lease_expires_at__lt=now)
    return [
        Stalled("simulation runs", "queued for over 10 minutes, no worker took them", waiting.count(), WORKER_HINT,
                tuple(f"batch {b}" for b in waiting.values_list("batch__code", flat=True).distinct()[:5])),
        Stalled("simulation runs", "running, but their worker stopped renewing its lease", lost.count(),
                "A worker takes them back when it starts and once per stale threshold; resume the batch to queue them now.",
                tuple(f"batch {b}" for b in lost.values_list("batch__code", flat=True).distinct()[:5])),
    ]


stalled_probe_register("simulation", simulation_stalled)

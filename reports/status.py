"""Report jobs waiting for a worker, for the status page (``core.status``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.status import WORKER_HINT, Stalled, stalled_probe_register
from reports.jobs import STALE_AFTER
from reports.models import ReportCache, ReportStatus

# A report job nobody started within this is waiting for a worker (computations take seconds).
NOT_STARTED_AFTER = timedelta(minutes=2)


def reports_stalled(now: datetime) -> list[Stalled]:
    computing = ReportCache.objects.filter(status=ReportStatus.COMPUTING)
    waiting = computing.filter(progress=0, started_at__lt=now - NOT_STARTED_AFTER)
    stale = computing.filter(started_at__lt=now - STALE_AFTER).exclude(pk__in=waiting.values("pk"))
    return [
        Stalled("report jobs", "queued for over 2 minutes, no worker started them", waiting.count(), WORKER_HINT,
                tuple(waiting.values_list("key", flat=True)[:5])),
        Stalled("report jobs", "computing for over 15 minutes: their worker is probably gone", stale.count(),
                "Opening the report again queues it again.", tuple(stale.values_list("key", flat=True)[:5])),
    ]


stalled_probe_register("reports", reports_stalled)

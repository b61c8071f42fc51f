"""Workers say they are alive: each Celery worker writes a heartbeat row every few seconds.

The status page and ``manage.py status`` read these rows ("workers seen in the last minute,
with their queues") from the database, so they answer even when the broker does not.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import timedelta
from typing import Any

from celery.signals import worker_ready, worker_shutdown
from django.db import close_old_connections, connection
from django.utils import timezone

logger = logging.getLogger("core.workers")

HEARTBEAT_SECONDS = 15
SEEN_WITHIN = timedelta(minutes=1)
_stop = threading.Event()


def _describe(consumer: Any) -> dict[str, Any]:
    """Return hostname, queues and concurrency of the worker a ``worker_ready`` consumer belongs to."""
    queues: list[str] = []
    task_consumer = getattr(consumer, "task_consumer", None)
    for queue in getattr(task_consumer, "queues", None) or []:
        queues.append(str(getattr(queue, "name", queue)))
    if not queues:
        queues = sorted(getattr(getattr(consumer.app.amqp, "queues", {}), "keys", lambda: [])())
    controller = getattr(consumer, "controller", None)
    return {"hostname": str(getattr(consumer, "hostname", "") or f"worker@{os.uname().nodename}"),
            "queues": queues, "concurrency": int(getattr(controller, "concurrency", 0) or 0)}


def heartbeat_write(*, hostname: str, queues: list[str], concurrency: int, started_at: Any) -> None:
    """Record that this worker is alive now (one upsert)."""
    from core.models import WorkerHeartbeat

    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname[:255],
        defaults={"queues": queues, "pid": os.getpid(), "concurrency": concurrency, "started_at": started_at,
                  "last_seen": timezone.now()},
    )


def workers_seen(within: timedelta = SEEN_WITHIN) -> list[Any]:
    """Return the workers whose last heartbeat is more recent than ``within``."""
    from core.models import WorkerHeartbeat

    return list(WorkerHeartbeat.objects.filter(last_seen__gte=timezone.now() - within))


def _beat(info: dict[str, Any]) -> None:
    started = timezone.now()
    while True:
        try:
            close_old_connections()
            heartbeat_write(started_at=started, **info)
        except Exception:  # a heartbeat must never stop a worker (the database may be restarting)
            logger.warning("could not record the worker heartbeat", exc_info=True)
        finally:
            connection.close()
        if _stop.wait(HEARTBEAT_SECONDS):
            return


@worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    if sender is None:
        return
    threading.Thread(target=_beat, args=(_describe(sender),), name="evalsite-heartbeat", daemon=True).start()


@worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    _stop.set()

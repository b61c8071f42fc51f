"""The sweeper: no unit of work waits on a lost message or a dead worker.

Every unit of work (a simulation run, a judge result, a report job) is a database row that
records when it was last queued. Its broker message can be lost before any worker claims the
row: a worker killed after receiving it (Redis keeps it unacknowledged for the visibility
timeout, an hour; the filesystem broker forgets it at once), a Redis restarted without
persistence, a broker that was down when the row was created. A row can also be claimed by a
worker that died. Each app registers a :class:`Recoverer` for its kind of work, and
:func:`sweep` (run when a worker starts, then by every living worker every third of
``EVALSITE_RECOVERY_SECONDS``) asks each one to dispatch again:

- work claimed by a worker that is gone (a dead process on this host at once, elsewhere once
  its lease ran out), at most once per threshold per row;
- work queued but unclaimed for longer than ``EVALSITE_RECOVERY_SECONDS``. A long backlog is
  not lost work: the broker's queue is counted first, and only as many rows as its messages
  cannot hold (a message carries a group of up to ``EVALSITE_TASK_GROUP_SIZE`` rows) are
  dispatched again, oldest first.

Claims stay idempotent (a conditional UPDATE), so a late original delivery, or two workers
sweeping at once, does nothing twice. Lower layers cannot import the apps above them: apps
register here from their ``tasks`` module.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.enqueue import group_size

logger = logging.getLogger("core.recovery")


@dataclass(frozen=True)
class Recoverer:
    """How the sweeper finds and dispatches again one kind of work.

    ``lost(now)`` dispatches again the rows whose worker is gone and returns how many.
    ``unclaimed()`` counts the rows waiting for a worker. ``redispatch(cutoff, limit)``
    dispatches again at most ``limit`` (None: no limit) rows queued before ``cutoff`` and not
    claimed since, oldest first, records the new queue time, and returns how many.
    """

    name: str
    lost: Callable[[datetime], int]
    unclaimed: Callable[[], int]
    redispatch: Callable[[datetime, int | None], int]


_recoverers: dict[str, Recoverer] = {}
_hooks: list[Callable[[], Any]] = []


_cleanups: list[Callable[[], int]] = []


def on_sweep(cleanup: Callable[[], int]) -> None:
    """Run ``cleanup`` at the start of every sweep (e.g. free the rate-limit slots of dead processes)."""
    if cleanup not in _cleanups:
        _cleanups.append(cleanup)


def register(recoverer: Recoverer) -> None:
    """Register (or replace) the recoverer of one kind of work."""
    _recoverers[recoverer.name] = recoverer


def on_worker_start(hook: Callable[[], Any]) -> None:
    """Run ``hook`` once when a worker starts, before its first sweep (warm-up, clean-up).

    A hook may return an event (anything with ``wait(timeout)``): the periodic sweeps start
    once it is set, so the tasks a warming worker already holds are not taken for lost.
    """
    if hook not in _hooks:
        _hooks.append(hook)


def recovery_seconds() -> float:
    """Return the threshold: queued this long and not claimed, work is dispatched again."""
    return float(getattr(settings, "EVALSITE_RECOVERY_SECONDS", 60) or 60)


def queue_depth() -> int | None:
    """Return how many messages wait in the broker's task queue (None when it cannot tell).

    With eager Celery (unit tests) nothing is ever queued: 0.
    """
    from celery import current_app

    if current_app.conf.task_always_eager:
        return 0
    queue = current_app.conf.task_default_queue or "celery"
    try:
        with current_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            with conn.channel() as channel:
                try:
                    return int(channel.queue_declare(queue=queue, passive=True).message_count)
                except Exception as exc:  # a queue never declared (or emptied and removed) is empty
                    if type(exc).__name__ in ("ChannelError", "NotFound"):
                        return 0
                    raise
    except Exception:  # broker down: the sweep still recovers lost workers' rows
        logger.warning("could not read the broker's queue length", exc_info=True)
        return None


@dataclass
class SweepReport:
    lost: dict[str, int]
    unclaimed: dict[str, int]
    redispatched: dict[str, int]
    queue_depth: int | None

    @property
    def total(self) -> int:
        return sum(self.lost.values()) + sum(self.redispatched.values())


def sweep(*, now: datetime | None = None) -> SweepReport:
    """Dispatch again the work whose message or worker was lost; return what was done.

    Each recoverer runs on its own: one that fails (database or broker down) is logged and
    the others still run. Never raises.
    """
    from django.db import close_old_connections, connection

    now = now or timezone.now()
    report = SweepReport({}, {}, {}, None)
    close_old_connections()
    for cleanup in list(_cleanups):
        try:
            freed = cleanup()
        except Exception:  # Redis away: the leases run out by themselves
            logger.warning("sweep clean-up %s failed", getattr(cleanup, "__name__", cleanup), exc_info=True)
        else:
            if freed:
                logger.info("%s: %d freed", getattr(cleanup, "__name__", cleanup), freed)
    for recoverer in list(_recoverers.values()):
        try:
            report.lost[recoverer.name] = recoverer.lost(now)
            report.unclaimed[recoverer.name] = recoverer.unclaimed()
        except Exception:
            logger.exception("recovery of %s failed", recoverer.name)
            _drop_broken(connection)
    if sum(report.unclaimed.values()):
        report.queue_depth = queue_depth()
        # Only as many rows as the queue holds no message for can have lost theirs; a message
        # carries up to a group of rows (core.enqueue), so a backlog of n messages covers up
        # to n groups: rows beyond that are surely lost, the others wait for the queue to drain.
        budget = (
            None if report.queue_depth is None
            else max(sum(report.unclaimed.values()) - report.queue_depth * group_size(), 0)
        )
        cutoff = now - timedelta(seconds=recovery_seconds())
        for name, waiting in report.unclaimed.items():
            if not waiting or budget == 0:
                continue
            try:
                sent = _recoverers[name].redispatch(cutoff, budget)
            except Exception:
                logger.exception("dispatching unclaimed %s again failed", name)
                _drop_broken(connection)
                continue
            report.redispatched[name] = sent
            if budget is not None:
                budget -= sent
    for name, count in report.lost.items():
        if count:
            logger.info("dispatched %d %s again: their worker is gone", count, name)
    for name, count in report.redispatched.items():
        if count:
            logger.info(
                "dispatched %d %s again: queued over %.0f s ago and never claimed (queue holds %s)",
                count, name, recovery_seconds(), report.queue_depth,
            )
    return report


def _drop_broken(connection: Any) -> None:
    # A terminated database connection stays broken in a long-lived thread (no request cycle
    # closes it): roll back and close it, so the next sweep opens a fresh one.
    try:
        if connection.in_atomic_block:
            return
        connection.close()
    except Exception:  # closing a dead connection may fail too
        logger.debug("closing the sweeper's connection failed", exc_info=True)


class _Sweeper:
    """One thread per worker process: a sweep every third of the threshold."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.pid = 0

    def start(self, after: list[Any]) -> None:
        if self.thread is not None and self.thread.is_alive() and self.pid == os.getpid():
            return
        self.stop = threading.Event()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._main, args=(after,), name="evalsite-sweeper", daemon=True)
        self.thread.start()

    def _main(self, after: list[Any]) -> None:
        from django.db import connection

        for event in after:
            event.wait(600)
        try:
            while not self.stop.wait(max(recovery_seconds() / 3.0, 0.2)):
                sweep()
        finally:
            connection.close()


_sweeper = _Sweeper()


def worker_started() -> None:
    """Warm up, recover what dead workers left, and start the periodic sweep (worker_ready)."""
    after = []
    for hook in list(_hooks):
        try:
            ready = hook()
        except Exception:  # a worker must start even when the database is not ready yet
            logger.exception("worker start hook %s failed", getattr(hook, "__name__", hook))
            continue
        if ready is not None and hasattr(ready, "wait"):
            after.append(ready)
    sweep()
    _sweeper.start(after)


def worker_stopping() -> None:
    """Stop the periodic sweep (worker_shutdown)."""
    _sweeper.stop.set()


def _connect_worker_signals() -> None:
    from celery.signals import worker_ready, worker_shutdown

    worker_ready.connect(lambda **_: worker_started(), weak=False, dispatch_uid="evalsite-recovery-start")
    worker_shutdown.connect(lambda **_: worker_stopping(), weak=False, dispatch_uid="evalsite-recovery-stop")


_connect_worker_signals()

"""Queue Celery tasks by name once the current transaction commits.

Services call this instead of importing their app's ``tasks`` module, so tasks (which import
services) and services never import each other. Each app imports its ``tasks`` module in
``AppConfig.ready()``, so the names are registered in every process, and eager mode (tests)
runs them in place.

The row a task works on is committed before its message is sent (a worker must find it), so
a broker that does not answer would leave the row waiting for a message that never left.
``on_failure`` closes that gap: it is called, in the same request, with the ids whose message
was not sent, so the service marks them failed (retryable) at once; then ``BrokerUnavailable``
(a 503 with what to do) reaches the page, the API or the command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from celery import current_app
from django.conf import settings
from django.db import transaction

from core.errors import ServiceError

# What the error pages, the API and the commands say to do: the same words everywhere.
BROKER_HINT = (
    "Start the task queue, or check REDIS_URL (with make run no Redis is needed: "
    "the queue lives under var/broker/), then try again. The status page (administrators) "
    "and manage.py status show what answers."
)


class BrokerUnavailable(ServiceError):
    """The task queue (Celery's broker) did not take a message: nothing was queued."""

    status = 503

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(f"The task queue does not answer ({cause}). {BROKER_HINT}")


def broker_errors() -> tuple[type[BaseException], ...]:
    """Return the exception types that mean "the broker did not take the message"."""
    from kombu.exceptions import OperationalError

    kinds: list[type[BaseException]] = [OperationalError, OSError]
    try:
        import redis.exceptions

        kinds += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    except ImportError:  # pragma: no cover - redis is a dependency
        pass
    return tuple(kinds)


def describe(exc: BaseException) -> str:
    """Return a one-line cause for a broker error (no traceback, no URL with a password)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def enqueue_on_commit(
    task_name: str,
    ids: Iterable[int],
    *,
    countdowns: Mapping[int, float] | None = None,
    on_failure: Callable[[list[int], str], None] | None = None,
) -> None:
    """After the surrounding transaction commits, queue ``task_name(id)`` once per id.

    When the broker refuses, ``on_failure(unsent_ids, cause)`` runs (after the commit, so its
    own writes stand) and ``BrokerUnavailable`` is raised to the caller of the transaction.
    """
    ids = list(ids)
    if not ids:
        return

    def send() -> None:
        task = current_app.tasks[task_name]
        for position, pk in enumerate(ids):
            delay = (countdowns or {}).get(pk)
            try:
                task.apply_async((pk,), countdown=delay if delay else None)
            except broker_errors() as exc:
                cause = describe(exc)
                if on_failure is not None:
                    on_failure(ids[position:], cause)
                raise BrokerUnavailable(cause) from exc

    transaction.on_commit(send)


def group_size() -> int:
    """Return the most units of work one task message carries (``EVALSITE_TASK_GROUP_SIZE``)."""
    return max(int(getattr(settings, "EVALSITE_TASK_GROUP_SIZE", 16) or 1), 1)


def split_groups(ids: list[int], size: int) -> list[list[int]]:
    """Split ``ids`` into as few groups of at most ``size`` as possible, of sizes as even as possible.

    Even sizes spread a run over the workers that take its messages: 20 ids in groups of at
    most 16 are two messages of 10, not 16 and 4.
    """
    if not ids:
        return []
    count = math.ceil(len(ids) / max(size, 1))
    base, extra = divmod(len(ids), count)
    groups, start = [], 0
    for index in range(count):
        end = start + base + (1 if index < extra else 0)
        groups.append(ids[start:end])
        start = end
    return groups


def enqueue_groups_on_commit(
    task_name: str,
    ids: Iterable[int],
    *,
    size: int | None = None,
    on_failure: Callable[[list[int], str], None] | None = None,
) -> None:
    """After the surrounding transaction commits, queue ``task_name(group)`` per group of ids.

    One message carries up to ``size`` (default :func:`group_size`) units of work, so the
    broker's cost per task (sending, receiving, acknowledging) is paid once per group. Crash
    recovery does not depend on the grouping: every unit is a row with its own claim, queue
    time and lease, and the sweeper sends lost units again one by one (in groups of their
    own). When the broker refuses, ``on_failure(unsent_ids, cause)`` runs with the ids of this
    group and every later one, and ``BrokerUnavailable`` is raised.
    """
    ids = list(ids)
    if not ids:
        return
    groups = split_groups(ids, size or group_size())

    def send() -> None:
        task = current_app.tasks[task_name]
        for position, group in enumerate(groups):
            try:
                task.apply_async((group,))
            except broker_errors() as exc:
                cause = describe(exc)
                if on_failure is not None:
                    on_failure([pk for later in groups[position:] for pk in later], cause)
                raise BrokerUnavailable(cause) from exc

    transaction.on_commit(send)

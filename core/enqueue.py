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

from collections.abc import Callable, Iterable, Mapping

from celery import current_app
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

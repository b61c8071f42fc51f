"""Transient infrastructure errors: a database connection, Redis or the broker that went away.

Such an error says nothing about the work (the conversation, the judge result): the same step
succeeds once the service is back. Callers retry it with backoff (``backoff_delays``), like a
provider's 5xx, instead of turning the work into a failure. An error of the work itself (a
constraint, a value the database refuses, a bug) is not transient and is never retried.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator

from django.conf import settings

logger = logging.getLogger("core.transient")


def _kinds() -> tuple[type[BaseException], ...]:
    from django.db import InterfaceError, OperationalError

    kinds: list[type[BaseException]] = [OperationalError, InterfaceError, ConnectionError, TimeoutError]
    try:
        import redis.exceptions

        kinds += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.BusyLoadingError]
    except ImportError:  # pragma: no cover - redis is a dependency
        pass
    try:
        from kombu.exceptions import OperationalError as BrokerError

        kinds.append(BrokerError)
    except ImportError:  # pragma: no cover - kombu comes with celery
        pass
    return tuple(kinds)


def is_transient(exc: BaseException) -> bool:
    """Return whether ``exc`` (or what caused it) is an outage of the database, Redis or the broker."""
    kinds = _kinds()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            # SQLite reports a schema or SQL mistake as an OperationalError too: not an outage.
            return not str(current).startswith(_NOT_OUTAGES)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_NOT_OUTAGES = ("no such table", "no such column", "no such function", "table ", "near ")


def outage_seconds() -> float:
    """Return how long a step keeps retrying through an outage before the error stands."""
    configured = getattr(settings, "EVALSITE_OUTAGE_SECONDS", None)
    return float(configured or os.environ.get("EVALSITE_OUTAGE_SECONDS") or 300)


def backoff_delays(*, first: float = 0.2, cap: float = 10.0, budget: float | None = None) -> Iterator[float]:
    """Yield the waits before each new attempt: doubling from ``first``, jittered, capped, within ``budget``.

    The waits add up to at most ``budget`` seconds (``outage_seconds()`` by default); the
    iterator ends when the budget is spent, and the last error then stands.
    """
    budget = outage_seconds() if budget is None else budget
    spent, delay = 0.0, first
    while spent < budget:
        wait = min(delay, cap, budget - spent) * random.uniform(0.8, 1.0)
        spent += wait
        yield wait
        delay *= 2


def drop_broken_connections() -> None:
    """Close the database connections of this thread that an outage broke (not inside a transaction).

    A terminated PostgreSQL connection stays broken in a long-lived thread (no request cycle
    closes it); closed, it is opened afresh by the next query.
    """
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        try:
            if conn.in_atomic_block:
                continue
            if conn.connection is not None and not conn.is_usable():
                conn.close()
            elif conn.errors_occurred:
                conn.close()
        except Exception:  # closing a dead connection may fail too
            logger.debug("closing a broken database connection failed", exc_info=True)
            try:
                conn.connection = None
            except Exception:  # pragma: no cover
                pass

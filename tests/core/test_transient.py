"""Which errors are outages (retried with backoff) and which are the work's own (never retried)."""

from __future__ import annotations

import redis
from django.db import IntegrityError, InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from core.transient import backoff_delays, is_transient


def test_outages_of_the_database_redis_and_the_broker_are_transient():
    assert is_transient(OperationalError("terminating connection due to administrator command"))
    assert is_transient(InterfaceError("connection already closed"))
    assert is_transient(redis.exceptions.ConnectionError("Error 111 connecting"))
    assert is_transient(BrokerError("Connection refused"))
    wrapped = RuntimeError("store failed")
    wrapped.__cause__ = OperationalError("server closed the connection unexpectedly")
    assert is_transient(wrapped)


def test_errors_of_the_work_itself_are_not():
    assert not is_transient(IntegrityError("duplicate key value violates unique constraint"))
    assert not is_transient(OperationalError("no such table: judging_judgelabel"))
    assert not is_transient(ValueError("a bug"))


def test_backoff_waits_double_are_capped_and_stay_within_the_budget():
    waits = list(backoff_delays(first=0.2, cap=10.0, budget=60.0))
    assert 0.16 <= waits[0] <= 0.2 and max(waits) <= 10.0
    assert sum(waits) <= 60.0 and len(waits) >= 8

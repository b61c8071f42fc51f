"""Pytest fixtures: the LLM test server, a task queue that is down, a local SMTP server; registered through ``pytest_plugins``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from celery import current_app
from kombu import pools

from tests.support.fake_llm import FakeLLM

if TYPE_CHECKING:  # aiosmtpd is imported by the email tests only
    from tests.support.smtp_server import LocalSMTP


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """Yield a started :class:`FakeLLM` on a random local port; stop it afterwards."""
    with FakeLLM() as fake:
        yield fake


def closed_port() -> int:
    """Return a local port where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _drop_connections() -> None:
    """Forget Celery's pooled broker connections so the next publish connects to the URL set now.

    The app's pools are entries of kombu's process-wide pool groups, keyed by broker URL: closing
    one and leaving it there hands the closed pool back to the next publish to that URL ("Acquire
    on closed pool" once the URL is restored). ``pools.reset`` closes them and empties the groups.
    """
    pools.reset()
    current_app._pool = None
    current_app.amqp._producer_pool = None


@pytest.fixture
def broker_down():  # type: ignore[no-untyped-def]
    """Point Celery at a Redis port where nothing listens, not eager; restore afterwards."""
    conf = current_app.conf
    saved = {key: conf.get(key) for key in ("broker_url", "task_always_eager", "broker_connection_timeout",
                                              "task_publish_retry_policy", "broker_connection_retry", "broker_connection_max_retries")}
    _drop_connections()
    conf.broker_url = f"redis://127.0.0.1:{closed_port()}/0"
    conf.task_always_eager = False
    conf.broker_connection_timeout = 1
    conf.task_publish_retry_policy = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
    yield conf.broker_url
    _drop_connections()
    for key, value in saved.items():
        conf[key] = value


@pytest.fixture(scope="session")
def _unit_redis_lease() -> Iterator[str | Exception]:
    """Take a free database of EVALSITE_TEST_REDIS_URL's server for this test process, by lease.

    Each pytest-xdist worker takes its own (they clean up each other's keys otherwise), never
    the database the URL names (the integration module's, run beside them) nor REDIS_URL's.
    """
    import redis

    from tests.support import redis_lease

    url = os.environ.get("EVALSITE_TEST_REDIS_URL", "")
    if not url:
        yield RuntimeError("EVALSITE_TEST_REDIS_URL is not set")
        return
    taken = {redis_lease.url_db(url), redis_lease.url_db(os.environ.get("REDIS_URL", "")) or 0}
    try:
        lease = redis_lease.acquire(url, [db for db in range(15, 0, -1) if db not in taken])
    except (redis.exceptions.RedisError, redis_lease.LeaseUnavailable) as exc:
        yield exc
        return
    yield lease.url
    lease.release()


@pytest.fixture
def redis_url(_unit_redis_lease: str | Exception) -> Iterator[str]:
    """Yield this process's test Redis database (leased on EVALSITE_TEST_REDIS_URL's server); skip without it, except under CI=true."""
    import redis

    if isinstance(_unit_redis_lease, Exception):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the shared-limit tests need a Redis database under CI (.ci/run sets EVALSITE_TEST_REDIS_URL): {_unit_redis_lease}")
        pytest.skip(f"set EVALSITE_TEST_REDIS_URL to a Redis server that answers to run the shared-limit tests ({_unit_redis_lease})")
    url = _unit_redis_lease
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
    yield url
    for stale in client.scan_iter("evalsite-test:*"):
        client.delete(stale)
    client.close()


@pytest.fixture
def smtp_server() -> Iterator[LocalSMTP]:
    """Yield a real SMTP server on a free local port, with the settings that send through it applied."""
    from django.test import override_settings

    from tests.support.smtp_server import LocalSMTP

    with LocalSMTP() as server, override_settings(**server.settings()):
        yield server


@pytest.fixture
def refusing_smtp_server() -> Iterator[LocalSMTP]:
    """Yield a real local SMTP server that answers every recipient "550", with its settings applied."""
    from django.test import override_settings

    from tests.support.smtp_server import LocalSMTP

    with LocalSMTP(refuse="550 5.1.1 Mailbox unavailable") as server, override_settings(**server.settings()):
        yield server


@pytest.fixture
def database_down(db) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Point this thread's default database at a PostgreSQL port where nothing listens; restore afterwards.

    A real psycopg connection attempt, refused by the operating system (not a mock). Marks the test
    as using the database (the test's own, in SQLite, is set aside, untouched, and comes back).
    Yields the address, which no answer may show.
    """
    from django.db import connections
    from django.db.utils import load_backend

    original = connections["default"]
    port = closed_port()
    settings_dict = {**original.settings_dict, "ENGINE": "django.db.backends.postgresql", "NAME": "evalsite",
                     "USER": "evalsite", "PASSWORD": "s3cret-not-shown", "HOST": "127.0.0.1", "PORT": str(port),
                     "OPTIONS": {"connect_timeout": 3}, "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False}
    down = load_backend("django.db.backends.postgresql").DatabaseWrapper(settings_dict, alias="default")
    connections["default"] = down
    try:
        yield f"127.0.0.1:{port}"
    finally:
        connections["default"] = original

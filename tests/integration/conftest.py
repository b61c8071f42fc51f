"""Integration suite: PostgreSQL + Redis + a real Celery worker process.

Run with ``DJANGO_SETTINGS_MODULE=evalsite.settings.integration`` (the Makefile does). The
services come from the environment (``evalsite/settings/integration.py``): ``DATABASE_URL``
and ``EVALSITE_TEST_DATABASE_NAME`` (the database the tests create and drop), ``REDIS_URL`` or
``EVALSITE_TEST_REDIS_DB`` / ``EVALSITE_TEST_REDIS_URL`` (the Redis database the tests flush:
taken by a lease, ``tests/support/redis_lease.py``, so two runs on one server never share or
flush each other's). Nothing here assumes a host or a port. When the services are missing the tests are skipped with the reason, except in CI
(``CI=true``), where a missing service is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import redis_lease
from tests.support.services import worker_database_url

ROOT = Path(__file__).resolve().parents[2]


def _postgres_problem() -> str | None:
    """Connect to the configured server (its maintenance database): None, or why it fails."""
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    params = {"dbname": "postgres", "user": db.get("USER") or None, "password": db.get("PASSWORD") or None,
              "host": db.get("HOST") or None, "port": db.get("PORT") or None, "connect_timeout": 3}
    try:
        psycopg.connect(**{k: v for k, v in params.items() if v is not None}).close()
    except psycopg.Error as exc:
        return f"PostgreSQL ({db.get('HOST') or 'local socket'}:{db.get('PORT') or 'default port'}): {' '.join(str(exc).split())}"
    return None


def _redis_problem() -> str | None:
    import redis
    from django.conf import settings

    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        return f"Redis ({_without_password(settings.CELERY_BROKER_URL)}): {exc}"
    return None


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else parts.netloc).geturl()


@pytest.fixture(scope="session", autouse=True)
def _services_present():
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.fail("integration tests need DJANGO_SETTINGS_MODULE=evalsite.settings.integration")
    lease, redis_problem = _lease_redis_database()
    missing = [problem for problem in (_postgres_problem(), redis_problem) if problem]
    if missing:
        message = "not answering: " + "; ".join(missing)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + " (CI: a missing service is a failure)")
        pytest.skip(message)
    yield
    if lease is not None:
        redis_lease.set_current(None)
        lease.release()


def _lease_redis_database() -> tuple[redis_lease.RedisLease | None, str | None]:
    """Take this run's Redis database by lease and point the settings, Celery and the workers' environment at it."""
    import redis
    from django.conf import settings

    from evalsite.celery import app

    try:
        lease = redis_lease.acquire_from_env()
    except redis.exceptions.RedisError as exc:
        server, _, _ = redis_lease.candidates(os.environ)
        return None, f"Redis ({_without_password(server)}): {exc}"
    except redis_lease.LeaseUnavailable as exc:
        return None, f"Redis: {exc}"
    redis_lease.set_current(lease)
    # Worker processes inherit the environment: they use exactly this database, and take no lease.
    os.environ["EVALSITE_TEST_REDIS_URL"] = lease.url
    settings.REDIS_URL = settings.CELERY_BROKER_URL = lease.url
    app.conf.broker_url = lease.url
    return lease, _redis_problem()


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Start a real worker on Redis against the test database; stop it afterwards."""
    from django.conf import settings

    from evalsite.celery import app

    database_url = worker_database_url()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
        "DATABASE_URL": database_url,
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "EVALSITE_VAR_DIR": str(tmp_path),
        # The folder the web side streams built bundles from: the worker builds them into it (a shared folder).
        "EVALSITE_BUNDLE_DIR": str(settings.EVALSITE_BUNDLE_DIR),
    }
    app.control.purge()
    log = open(tmp_path / "worker.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=prefork", "--concurrency=1",
         "--loglevel=INFO", f"--hostname=itest-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.flush()
            pytest.fail("worker exited early:\n" + (tmp_path / "worker.log").read_text())
        if app.control.ping(timeout=1.0):
            break
    else:
        proc.kill()
        pytest.fail("worker did not answer ping within 60 s:\n" + (tmp_path / "worker.log").read_text())
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()

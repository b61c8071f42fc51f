"""Integration suite: PostgreSQL + Redis + a real Celery worker process.

Run with ``DJANGO_SETTINGS_MODULE=evalsite.settings.integration`` (the Makefile does). When the
services are missing the tests are skipped with the reason, except in CI (``CI=true``), where
a missing service is a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _services_present():
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.fail("integration tests need DJANGO_SETTINGS_MODULE=evalsite.settings.integration")
    from urllib.parse import urlsplit

    db = settings.DATABASES["default"]
    broker = urlsplit(settings.CELERY_BROKER_URL)
    services = (
        ("PostgreSQL", db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)),
        ("Redis", broker.hostname or "127.0.0.1", broker.port or 6379),
    )
    missing = [f"{name} ({host}:{port})" for name, host, port in services if not _answers(host, port)]
    if missing:
        message = f"{' and '.join(missing)} not answering"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + " (CI: a missing service is a failure)")
        pytest.skip(message)


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """Start a real worker on Redis against the test database; stop it afterwards."""
    from django.conf import settings
    from django.db import connection

    from evalsite.celery import app

    db = connection.settings_dict
    database_url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
        "DATABASE_URL": database_url,
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "EVALSITE_VAR_DIR": str(tmp_path),
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

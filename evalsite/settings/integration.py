"""Integration-test settings: PostgreSQL and Redis from the environment, a real worker.

Defaults point at this machine kind's services (PostgreSQL database ``test`` on 127.0.0.1 with
trust auth, Redis on 127.0.0.1:6379). Celery is not eager: tasks go through Redis to a worker
process that the tests start.
"""

from __future__ import annotations

import os

import dj_database_url

from evalsite.settings.base import *  # noqa: F403


def redis_url_on_db(base: str, db: int) -> str:
    """Return ``base`` (REDIS_URL: host, port, password) on database ``db``: the tests flush it, never REDIS_URL's own."""
    from urllib.parse import urlsplit

    return urlsplit(base)._replace(path=f"/{db}").geturl()


SECRET_KEY = "integration-only-secret-key-not-used-anywhere-else-0123456789"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/test"
    )
}
# Two checkouts on one machine must not share a test database or a Redis database: the tests
# flush their Redis database and Django drops and recreates the test database. Each checkout
# sets its own with these variables (defaults: test_<NAME>, and database 15 of REDIS_URL's
# server; EVALSITE_TEST_REDIS_URL names a whole URL instead). REDIS_URL's own database is never
# the one flushed. The test run itself takes its database by lease (tests/support/redis_lease.py:
# the one named here, or a free one) and points these settings and its workers at it.
if os.environ.get("EVALSITE_TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["EVALSITE_TEST_DATABASE_NAME"]}
REDIS_URL = os.environ.get("EVALSITE_TEST_REDIS_URL") or redis_url_on_db(
    os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379", int(os.environ.get("EVALSITE_TEST_REDIS_DB") or "15")
)
CELERY_BROKER_URL = REDIS_URL
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("EVALSITE_BROKER_VISIBILITY_TIMEOUT", "3600")),
    # A broker restart or a dropped link is noticed (TCP keepalive, a PING before reusing an
    # idle connection), not waited on until a read hangs.
    "socket_keepalive": True,
    "health_check_interval": 25,
    "socket_connect_timeout": 10,
    # No retry_on_timeout: a publish that timed out may have reached Redis; sent again, the task
    # would be queued twice.
}
CELERY_TASK_ALWAYS_EAGER = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests log in with Client.force_login, which has no client address: axes would look up and
# record the address "unknown", which PostgreSQL's inet column refuses. Login throttling is
# covered by the unit and security tests; here it is off.
AXES_ENABLED = False
# The tests' local model servers (tests/support/fake_llm.py) listen on random loopback ports:
# allowed here only. tests/security proves this machine's ports are refused without it.
EVALSITE_API_HOSTS_EXTRA = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
# Like the unit tests: plain static storage (no collectstatic before every integration run).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_KEEP_ONLY_HASHED_FILES = False

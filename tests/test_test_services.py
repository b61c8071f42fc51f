"""The test suites find their services in the environment: two checkouts on one machine never collide."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def integration_settings(**env: str) -> dict:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "EVALSITE_TEST_"))}
    code = ("import json, evalsite.settings.integration as s; d = s.DATABASES['default']; "
            "print(json.dumps({'host': d['HOST'], 'port': d['PORT'], 'name': d['NAME'], 'test': d.get('TEST', {}), 'redis': s.CELERY_BROKER_URL}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**keep, **env}, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_integration_settings_take_database_and_redis_from_the_environment(tmp_path):
    found = integration_settings(DATABASE_URL="postgres://me:secret@db.internal:6543/evalsite", REDIS_URL="redis://:pw@cache.internal:6380/0",
                                 EVALSITE_TEST_DATABASE_NAME="test_checkout_two", EVALSITE_TEST_REDIS_DB="9", EVALSITE_VAR_DIR=str(tmp_path))
    assert (found["host"], found["port"], found["test"]["NAME"]) == ("db.internal", 6543, "test_checkout_two")
    # REDIS_URL's server, but the checkout's own database: the tests flush it, never database 0.
    assert found["redis"] == "redis://:pw@cache.internal:6380/9"
    whole = integration_settings(EVALSITE_TEST_REDIS_URL="redis://127.0.0.2:7000/3", EVALSITE_VAR_DIR=str(tmp_path))
    assert whole["redis"] == "redis://127.0.0.2:7000/3"


def test_a_worker_gets_the_test_database_with_its_password():
    from django.db import connection

    from tests.support.services import worker_database_url

    saved = dict(connection.settings_dict)
    try:
        connection.settings_dict.update({"USER": "me", "PASSWORD": "p@ss:word", "HOST": "db.internal", "PORT": 6543, "NAME": "test_x"})
        assert worker_database_url() == "postgres://me:p%40ss%3Aword@db.internal:6543/test_x"
    finally:
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def test_no_test_assumes_a_host_or_a_port_for_its_services():
    assumed = re.compile(r"127\.0\.0\.1:(5432|6379)|or 5432\b|or 6379\b|localhost:(5432|6379)")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "tests").rglob("*.py") if path.name != Path(__file__).name
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if assumed.search(line) and "not a service location" not in line
    ]
    assert offenders == []

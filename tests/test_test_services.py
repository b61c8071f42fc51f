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


# A test run as a separate process: take a database of the server by lease (as the environment
# says), mark it, report it, then on "flush" flush it (through the lease) and report what is left.
_RUN = """
import os, sys, redis
from tests.support.redis_lease import LeaseUnavailable, acquire_from_env
try:
    lease = acquire_from_env()
except LeaseUnavailable as exc:
    print("refused", exc, flush=True)
    sys.exit(0)
client = redis.Redis.from_url(lease.url)
client.set("marker", os.environ["RUN_NAME"])
print("db", lease.db, flush=True)
for line in sys.stdin:
    if line.strip() == "flush":
        lease.flush()
        print("flushed", client.dbsize(), flush=True)
    elif line.strip() == "end":
        break
lease.release()
print("released", flush=True)
"""


def _run(env: dict[str, str]) -> subprocess.Popen[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_URL", "EVALSITE_TEST_REDIS"))}
    return subprocess.Popen([sys.executable, "-c", _RUN], cwd=ROOT, env={**keep, **env}, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _say(run: subprocess.Popen[str], line: str) -> str:
    assert run.stdin is not None and run.stdout is not None
    run.stdin.write(line + "\n")
    run.stdin.flush()
    return run.stdout.readline().strip()


def test_two_concurrent_test_runs_on_one_redis_server_keep_apart(tmp_path):
    import redis

    from tests.integration.harness import PrivateRedis

    server = PrivateRedis(tmp_path)  # a redis-server of this test's own: the shared one is never touched
    server.start()
    runs: list[subprocess.Popen[str]] = []
    try:
        first, second = (_run({"REDIS_URL": server.url, "RUN_NAME": name}) for name in ("first", "second"))
        runs += [first, second]
        assert first.stdout is not None and second.stdout is not None
        first_db, second_db = first.stdout.readline().split(), second.stdout.readline().split()
        assert first_db[0] == second_db[0] == "db", (first_db, second_db, first.stderr, second.stderr)
        assert first_db[1] != second_db[1]  # each took a free database of its own
        assert "0" not in (first_db[1], second_db[1])  # never REDIS_URL's own

        # A third run told to use the first one's database is refused, and flushes nothing.
        third = _run({"REDIS_URL": server.url, "EVALSITE_TEST_REDIS_DB": first_db[1], "RUN_NAME": "third"})
        runs.append(third)
        third_out, _ = third.communicate(timeout=60)
        assert third_out.startswith("refused") and "held by another test run" in third_out

        # The first run flushes its database: the second run's keys are all still there.
        assert _say(first, "flush") == "flushed 1"  # only its lease is left
        second_client = redis.Redis(port=server.port, db=int(second_db[1]))
        assert second_client.get("marker") == b"second"
        assert redis.Redis(port=server.port, db=int(first_db[1])).get("marker") is None

        # Released at the end, the database is free for the next run.
        assert _say(first, "end") == "released"
        again = _run({"REDIS_URL": server.url, "EVALSITE_TEST_REDIS_DB": first_db[1], "RUN_NAME": "again"})
        runs.append(again)
        assert again.stdout is not None and again.stdout.readline().split() == ["db", first_db[1]]
        _say(again, "end")
        _say(second, "end")
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
            run.wait(timeout=10)
        server.stop()


def test_make_test_leaves_the_redis_variables_to_the_environment():
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8")
    # `make test` once moved the integration tests to database 12 whatever the variables said.
    assert not re.search(r"EVALSITE_TEST_REDIS_(URL|DB)=", recipe)
    assert re.search(r"^test-integration:", recipe, re.M)

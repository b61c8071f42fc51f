"""Issue 32: PostgreSQL stops under a running web server: pages, the API and the status page answer
503 with what to do (not "Something went wrong"), and everything works again once it is back,
without restarting the web server.

The web server is the README's production one (gunicorn, sync worker: one process that keeps its
database connection between requests), on a PostgreSQL server of the test's own
(``PrivatePostgres``), stopped as an administrator would (``pg_ctl stop -m fast``: connections
ended, then refused) and started again on the same port.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.integration.harness import ROOT, PrivatePostgres, free_port, wait_for

pytestmark = pytest.mark.integration
PASSWORD = "a long password for the admin 1"  # noqa: S105  # a throwaway account on a throwaway server


@dataclass
class Site:
    postgres: PrivatePostgres
    base: str
    token: str
    env: dict[str, str]
    log: Path

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                                text=True, timeout=600)
        if check and result.returncode != 0:
            pytest.fail(f"manage.py {' '.join(args)}: {result.stdout}{result.stderr}")
        return result

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-6000:] if self.log.exists() else ""


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    postgres = PrivatePostgres()
    server: subprocess.Popen[bytes] | None = None
    try:
        postgres.start()
        postgres.create_database("evalsite")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
            "DATABASE_URL": postgres.url("evalsite"),
            "EVALSITE_VAR_DIR": str(tmp_path / "var"),
            "PYTHONPATH": str(ROOT),
            "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
        }
        site = Site(postgres, "", "", env, tmp_path / "gunicorn.log")
        site.manage("migrate", "--noinput")
        site.manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.org")
        site.token = site.manage("api_token", "admin").stdout.strip()
        port = free_port()
        site.base = f"http://127.0.0.1:{port}"
        with site.log.open("wb") as log:
            server = subprocess.Popen(
                [str(Path(sys.executable).parent / "gunicorn"), "evalsite.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1",
                 "--timeout", "120", "--graceful-timeout", "5"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        if not wait_for(lambda: _answers(site.base + "/accounts/login/"), 120, every=0.5):
            pytest.fail("the web server did not start: " + site.logs())
        yield site
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
        postgres.remove()


def _log_in(site: Site) -> requests.Session:
    browser = requests.Session()
    form = browser.get(site.base + "/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert form.status_code == 200 and token, form.text
    answer = browser.post(site.base + "/accounts/login/", timeout=30, allow_redirects=False,
                          data={"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": token[1]})
    assert answer.status_code == 302, answer.text
    return browser


def _is_the_outage_page(response: requests.Response, site: Site) -> str:
    assert response.status_code == 503, (response.status_code, response.text[:2000])
    assert response.headers["Retry-After"] == "60"
    text = response.text
    assert "The database does not answer" in text and "DATABASE_URL" in text and "Try again in a minute" in text
    # Nothing about where the database is: no host, no port, no account.
    assert "127.0.0.1" not in text and str(site.postgres.port) not in text and "postgres@" not in text
    return text


def test_pages_and_the_api_answer_503_while_postgresql_is_stopped_and_work_again_once_it_is_back(site):
    admin = _log_in(site)
    visitor = requests.Session()
    form = visitor.get(site.base + "/accounts/login/", timeout=30).text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf
    api = {"Authorization": f"Token {site.token}"}
    assert admin.get(site.base + "/", timeout=30).status_code == 200
    assert requests.get(site.base + "/api/v1/judges/", headers=api, timeout=30).status_code == 200
    assert "answers, all migrations applied" in admin.get(site.base + "/status/", timeout=30).text

    site.postgres.stop()

    _is_the_outage_page(requests.get(site.base + "/accounts/login/", timeout=30), site)  # no session: no form either
    _is_the_outage_page(admin.get(site.base + "/", timeout=30), site)  # the session is read from the database first
    # A form shown before the outage and sent during it (the password is checked in the database).
    _is_the_outage_page(visitor.post(site.base + "/accounts/login/", timeout=30, data={
        "username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": csrf[1]}), site)
    for response in (requests.get(site.base + "/api/v1/judges/", headers=api, timeout=30),
                     admin.get(site.base + "/api/v1/judges/", timeout=30)):
        _is_the_outage_page(response, site)
        body = response.json()
        assert body["cause"] == "psycopg.OperationalError" and "PostgreSQL" in body["what_to_do"]
    for client in (requests.Session(), admin):
        page = _is_the_outage_page(client.get(site.base + "/status/", timeout=30), site)
        assert "database: not answering (psycopg.OperationalError)" in page
    status = site.manage("status", check=False)
    assert status.returncode == 1, status.stdout + status.stderr
    assert "DOWN database" in status.stdout and "Traceback" not in status.stderr, status.stdout + status.stderr
    assert "Internal Server Error" not in site.logs(), site.logs()  # every answer above was a 503, none a 500

    site.postgres.start()

    # The very next requests work: the same web server process, no restart, no waiting.
    assert requests.get(site.base + "/accounts/login/", timeout=30).status_code == 200
    home = admin.get(site.base + "/", timeout=30)
    assert home.status_code == 200 and "admin" in home.text  # the session outlived the outage
    assert requests.get(site.base + "/api/v1/judges/", headers=api, timeout=30).status_code == 200
    assert "answers, all migrations applied" in admin.get(site.base + "/status/", timeout=30).text
    assert site.manage("status", check=False).stdout.count("DOWN database") == 0


def test_a_connection_the_server_ended_counts_as_the_database_not_answering_and_is_dropped(transactional_db):
    """The other way a database stops answering: mid-request, on a connection that was open."""
    import psycopg
    from django.db import OperationalError, connection

    from core.database_down import close_lost_connections, connection_failure
    from tests.support.services import worker_database_url

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
        with psycopg.connect(worker_database_url().replace("postgres://", "postgresql://"), autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(OperationalError) as caught:
            cursor.execute("SELECT 1")
    assert connection.connection is not None and connection_failure(caught.value)
    close_lost_connections()
    assert connection.connection is None
    with connection.cursor() as cursor:  # the next query connects anew
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)

"""Finding 6 and 10: safe defaults for the first command.

Debug is off unless EVALSITE_DEBUG=1; the secret key is made once and kept under var/; 404 and
500 are friendly pages (JSON on the API) that show no URL list and no variables; ``serve``
stops its worker on SIGTERM and SIGINT; the embedded broker keeps its exchange tables under
var/, and no ``control/`` folder is in the repository.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client, override_settings

from tests.conftest import client_for

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (
        "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "EVALSITE_DEBUG", "DJANGO_DEBUG", "DJANGO_SECRET_KEY",
    )}
    # `serve` collects the static files: the tests of one session share them (the compressed
    # copies are kept, so only the first pays for compressing the plotly bundles).
    env.update(EVALSITE_VAR_DIR=str(tmp_path / "var"), DJANGO_STATIC_ROOT=str(tmp_path.parent / "shared-static"), **extra)
    return env


def _setting(env: dict[str, str], expression: str) -> str:
    code = f"from django.conf import settings; print(repr({expression}))"
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_debug_is_off_unless_asked_for(tmp_path):
    assert _setting(_env(tmp_path), "settings.DEBUG") == "False"
    assert _setting(_env(tmp_path, DJANGO_DEBUG="1"), "settings.DEBUG") == "False"  # the old variable no longer turns it on
    assert _setting(_env(tmp_path, EVALSITE_DEBUG="1"), "settings.DEBUG") == "True"


def test_the_secret_key_is_made_once_and_kept_under_var(tmp_path):
    first = _setting(_env(tmp_path), "settings.SECRET_KEY")
    again = _setting(_env(tmp_path), "settings.SECRET_KEY")
    key_file = tmp_path / "var" / "secret_key"
    assert first == again and len(first) > 50 and "insecure" not in first
    assert key_file.read_text().strip() == first.strip("'")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert _setting(_env(tmp_path, DJANGO_SECRET_KEY="from-the-environment-" * 3), "settings.SECRET_KEY") != first


def test_a_404_is_a_friendly_page_and_json_on_the_api(clinician):
    client = client_for(clinician)
    page = client.get("/no/such/page/")
    body = page.content.decode()
    assert page.status_code == 404 and "does not exist" in body and "Back to your home page" in body
    assert "URLconf" not in body and "api/v1/" not in body
    api = client.get("/api/v1/no-such-endpoint/")
    assert api.status_code == 404 and api["Content-Type"].startswith("application/json") and api.json() == {"detail": "not found"}


@override_settings(ROOT_URLCONF="tests.security.boom_urls")
def test_a_500_shows_no_code_or_variables_and_is_json_on_the_api(clinician):
    client = Client(raise_request_exception=False)
    client.force_login(clinician)
    page = client.get("/boom/")
    body = page.content.decode()
    assert page.status_code == 500 and "Something went wrong on our side" in body
    assert "RATER-FREE-TEXT-SECRET" not in body and "Traceback" not in body and "ValueError" not in body
    api = client.get("/api/v1/boom/")
    assert api.status_code == 500 and api.json()["detail"].startswith("server error")
    assert "RATER-FREE-TEXT-SECRET" not in api.content.decode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_its_worker_on_sigterm_and_sigint(tmp_path, sig):
    env = _env(tmp_path)
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=180)
    # The static files first (compressing them is slow on a loaded machine): serve's own collect
    # is then a check, and the wait below measures serve, not brotli.
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=600)
    port = _free_port()
    log = tmp_path / "serve.log"
    # Its own session, so the signal reaches serve only (not the worker, as a terminal's Ctrl-C would).
    serve = subprocess.Popen(
        [sys.executable, "-u", str(ROOT / "manage.py"), "serve", f"127.0.0.1:{port}"],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        worker_pid = None
        while time.monotonic() < deadline and worker_pid is None:
            match = re.search(r"Worker started \(pid (\d+)", log.read_text())
            worker_pid = int(match.group(1)) if match else None
            time.sleep(0.2)
        assert worker_pid, log.read_text()
        while time.monotonic() < deadline:  # the web server answers and the worker is up
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if "ready" in log.read_text():
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert _alive(worker_pid)
        serve.send_signal(sig)
        serve.wait(timeout=60)
        deadline = time.monotonic() + 20
        while _alive(worker_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker_pid), log.read_text()[-2000:]
    finally:
        if serve.poll() is None:
            serve.kill()
    # The embedded broker wrote its tables under var/, not into the working directory.
    assert not (tmp_path / "control").exists()
    assert (tmp_path / "var" / "broker" / "control").is_dir()


def test_no_broker_control_folder_is_tracked():
    tracked = subprocess.run(["git", "ls-files", "control"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip() == ""


def _ignore_sigint() -> None:
    """Start as a shell's background job does: with SIGINT ignored (Python then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_serve_stops_on_sigint_even_when_started_ignoring_it(tmp_path):
    env = _env(tmp_path)
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=180)
    # The static files first (compressing them is slow on a loaded machine): serve's own collect
    # is then a check, and the wait below measures serve, not brotli.
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=600)
    port = _free_port()
    log = tmp_path / "serve.log"
    serve = subprocess.Popen(
        [sys.executable, "-u", str(ROOT / "manage.py"), "serve", f"127.0.0.1:{port}", "--no-worker"],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=_ignore_sigint,  # noqa: PLW1509
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
            pytest.fail("serve ignored SIGINT:\n" + log.read_text()[-2000:])


def test_a_second_serve_on_a_busy_port_fails_before_starting_a_worker(tmp_path):
    env = _env(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "serve", f"127.0.0.1:{port}"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Worker started" not in done.stdout  # nothing left running behind the refusal
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0] and "make run ADDR=" in lines[0], done.stderr


def test_make_run_on_a_busy_port_stops_before_migrating(tmp_path):
    """`make run` refuses a busy address at once: no migration, no demo data, no database file."""
    env = _env(tmp_path)
    venv = Path(sys.executable).parent.parent
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # -o: take the installed virtualenv as it is (the test must not reinstall anything).
        done = subprocess.run(["make", "-o", f"{venv}/.installed", "run", f"VENV={venv}", f"ADDR=127.0.0.1:{port}"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert "migrate" not in done.stdout and "Operations to perform" not in done.stdout, done.stdout
    assert not (tmp_path / "var").exists() or not any((tmp_path / "var").rglob("*.sqlite3")), list((tmp_path / "var").rglob("*"))

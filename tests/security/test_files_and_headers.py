"""Finding 6: a bad ``Host`` header answered 500; the SQLite database and its WAL were world-readable (0644).

A request whose Host is not allowed is a 400 (the error page renders with no user, before the
authentication middleware ran). Every file the app writes under ``var/`` is private to the
account running it (files 0600, folders 0700), whatever umask it was started with, and a var/
folder left open by an older version is closed up at the next start.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("host", ["evil.example", "bad host", "x" * 300, "[::1", "a\x00b", "127.0.0.1:8000@evil"])
@pytest.mark.parametrize("path", ["/", "/api/v1/", "/accounts/login/", "/ratings/"])
def test_a_bad_host_header_is_a_400(db, host, path):
    response = Client(raise_request_exception=False).get(path, HTTP_HOST=host)
    assert response.status_code == 400, (host, path, response.status_code)


def _env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY")}
    env.update(EVALSITE_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="evalsite.settings.base")
    return env


def _run(var_dir: Path, *args: str) -> str:
    # Started with the usual umask (022): the app itself must make its files private.
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(var_dir), capture_output=True,
                            text=True, timeout=300, preexec_fn=lambda: os.umask(0o022))
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_and_everything_under_var_are_private(tmp_path):
    var = tmp_path / "var"
    _run(var, "migrate", "--noinput")
    # The modes seen while the app writes, with a second connection keeping the WAL open: the
    # -wal and -shm files exist only then.
    code = (
        "import json, os, sqlite3; from django.contrib.auth.models import Group; "
        f"reader = sqlite3.connect({str(var / 'evalsite.sqlite3')!r}); reader.execute('select count(*) from auth_group').fetchall(); "
        "Group.objects.create(name='x'); "
        f"print(json.dumps({{n: os.stat(os.path.join({str(var)!r}, n)).st_mode & 0o777 for n in os.listdir({str(var)!r})}}))"
    )
    live = json.loads(_run(var, "shell", "-c", code).strip().splitlines()[-1])
    assert {"evalsite.sqlite3", "evalsite.sqlite3-wal", "evalsite.sqlite3-shm"} <= set(live), live
    assert {name: oct(mode) for name, mode in live.items() if mode & 0o077} == {}
    assert _mode(var) == 0o700
    files = [p for p in var.rglob("*") if p.is_file()]
    assert var / "evalsite.sqlite3" in files and var / "secret_key" in files
    loose = {str(p.relative_to(var)): oct(_mode(p)) for p in files if _mode(p) & 0o077}
    assert loose == {}
    folders = {str(p.relative_to(var)): oct(_mode(p)) for p in var.rglob("*") if p.is_dir() and _mode(p) & 0o077}
    assert folders == {}


def test_an_open_var_folder_of_an_older_version_is_closed_up(tmp_path):
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)
    old = var / "evalsite.sqlite3"
    old.write_bytes(b"")
    old.chmod(0o644)
    _run(var, "migrate", "--noinput")
    assert _mode(var) == 0o700 and _mode(old) == 0o600

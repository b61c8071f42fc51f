"""Commands answer an operator's error with one line: the cause and what to do, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fixtures import closed_port

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings.base", **env}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)


def test_migrate_with_the_database_unreachable_prints_one_line(tmp_path):
    done = manage("migrate", "--noinput", DATABASE_URL=f"postgres://evalsite@127.0.0.1:{closed_port()}/evalsite",
                  EVALSITE_VAR_DIR=str(tmp_path))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("evalsite: The database does not answer") and "DATABASE_URL" in lines[0]


def test_traceback_is_still_there_when_asked_for(tmp_path):
    done = manage("migrate", "--noinput", "--traceback",
                  DATABASE_URL=f"postgres://evalsite@127.0.0.1:{closed_port()}/evalsite", EVALSITE_VAR_DIR=str(tmp_path))
    assert done.returncode != 0 and "Traceback" in done.stderr

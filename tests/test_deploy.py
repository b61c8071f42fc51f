"""`manage.py check --deploy` is clean with production settings from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DJANGO_SETTINGS_MODULE": "evalsite.settings.production",
        "DJANGO_SECRET_KEY": "x7!" + "k" * 30 + "Qz9#-production-like-secret-key-value",
        "DJANGO_ALLOWED_HOSTS": "evalsite.example.org",
        "EVALSITE_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    env.update({"DJANGO_SETTINGS_MODULE": "evalsite.settings.production", "DJANGO_ALLOWED_HOSTS": "x.org", "EVALSITE_VAR_DIR": str(tmp_path)})
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_openapi_schema_validates_without_warnings(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings.test", "EVALSITE_VAR_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_redis_broker_connection_notices_a_restart(tmp_path):
    """Workers' broker connections send TCP keepalives and PING an idle connection before reuse."""
    code = ("from evalsite.celery import app\n"
            "with app.connection_for_read() as conn:\n"
            "    kw = conn.default_channel.client.connection_pool.connection_kwargs\n"
            "    print(kw.get('socket_keepalive'), kw.get('health_check_interval'))\n")
    redis_url = os.environ.get("EVALSITE_TEST_REDIS_URL", "")
    if not redis_url:
        pytest.skip("set EVALSITE_TEST_REDIS_URL to open a real broker connection")
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    env.update(REDIS_URL=redis_url,
               EVALSITE_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="evalsite.settings.base")
    done = subprocess.run([sys.executable, "-c", "import django, os; django.setup(); exec(os.environ['CODE'])"],
                          cwd=ROOT, env={**env, "CODE": code}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "25"], done.stdout

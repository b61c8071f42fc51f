"""`manage.py check --deploy` is clean with production settings from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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

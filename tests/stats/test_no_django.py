"""stats stays free of Django so it runs from files, without a database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import importlib, pkgutil, sys
import stats
names = [m.name for m in pkgutil.iter_modules(stats.__path__)]
for name in names:
    importlib.import_module(f"stats.{name}")
assert "cli" in names and "report" in names, names
loaded = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
assert not loaded, loaded
print(len(names))
"""


def test_importing_every_stats_module_does_not_import_django() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 10

"""The machine's Chromium for the tests that drive it (the browser tests, the bundle's chart images).

Debian's package (/usr/bin/chromium, or EVALSITE_CHROMIUM): nothing downloads a browser here.
Without it those tests skip with the reason, except in CI where they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("EVALSITE_CHROMIUM", "/usr/bin/chromium")


def chromium_or_skip() -> str:
    """Return Chromium's path; skip the test without one (fail it in CI)."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    found = shutil.which("chromium")
    if found:
        return found
    message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)

"""Fixtures shared by the publication bundle tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from tests.support.demo_bundle import build_demo_bundles


@pytest.fixture(scope="session")
def demo_bundle(django_db_setup, django_db_blocker) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Seed the demo once per session, export its studies (``tests.support.demo_bundle``); leave the database empty."""
    with django_db_blocker.unblock():
        try:
            return build_demo_bundles()
        finally:
            call_command("flush", interactive=False)

"""Pytest fixtures for the LLM test server; registered through ``pytest_plugins``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_llm import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """Yield a started :class:`FakeLLM` on a random local port; stop it afterwards."""
    with FakeLLM() as fake:
        yield fake

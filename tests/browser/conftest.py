"""Playwright driving Debian's Chromium against pytest-django's live server.

Chromium comes from Debian's packages (/usr/bin/chromium); Playwright cannot download its own
browser here. Without Chromium the browser tests skip with the reason, except in CI where
they fail.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started

from tests.support.chromium import CHROMIUM, chromium_or_skip

# Playwright's sync API runs an event loop in this thread; Django's ORM calls in the test body
# are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def pytest_collection_modifyitems(items):  # type: ignore[no-untyped-def]
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


# Package scope: Playwright's sync API keeps an asyncio loop running on the main thread while it
# lives, so any later test that calls asyncio.run() (the LLM engine, the outbound-policy tests)
# would fail with "cannot be called from a running event loop". It stops after tests/browser.
@pytest.fixture(scope="package")
def chromium_browser() -> Iterator[object]:
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield browser
        browser.close()


_answering: set[int] = set()  # live-server threads between request_started and request_finished


def _started(**kwargs: object) -> None:
    _answering.add(threading.get_ident())


def _finished(**kwargs: object) -> None:
    _answering.discard(threading.get_ident())


request_started.connect(_started, dispatch_uid="browser-tests-answering-start")
request_finished.connect(_finished, dispatch_uid="browser-tests-answering-end")


def _wait_for_live_server_requests(timeout: float = 10.0) -> None:
    """Wait until no live-server thread is answering a request.

    A thread that answered and now waits on an idle keep-alive connection is not answering; one
    whose client went away mid-answer never sends request_finished, but its connection is
    broken, so it ends (and no longer counts) as soon as the answer is written.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = {t.ident for t in threading.enumerate() if t.is_alive()}
        if not (_answering & alive):
            return
        time.sleep(0.02)


@pytest.fixture
def page(chromium_browser, live_server):  # type: ignore[no-untyped-def]
    context = chromium_browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
    # A page leaving sends what it still holds (an autosave beacon, the next page's opening): the
    # live server may still be answering it when the test's database is flushed, which then fails
    # with "database table is locked" (and the next test with a duplicate user). Wait for it.
    _wait_for_live_server_requests()


AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
# Off by default in axe: the visible text of a control must be part of its accessible name.
AXE_EXTRA_RULES = {"label-content-name-mismatch": {"enabled": True}}


def axe_violations(page) -> list[dict]:  # type: ignore[no-untyped-def]
    """Run axe-core over the page as it is now; return the serious and critical violations."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async (rules) => (await axe.run(document, {rules})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + n.html.slice(0, 160))}))",
        AXE_EXTRA_RULES,
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


def check_a11y(page, where: str = "") -> None:  # type: ignore[no-untyped-def]
    """Fail with axe's findings when the page has a serious or critical violation."""
    bad = axe_violations(page)
    assert not bad, f"accessibility violations on {where or page.url}:\n" + "\n".join(
        f"- {v['id']} ({v['impact']}): {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in bad
    )


def screenshot(page, name: str, *, a11y: bool = True, full_page: bool = True) -> Path:  # type: ignore[no-untyped-def]
    """Save a screenshot under test-artifacts/ and check the page with axe-core."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    if a11y:
        check_a11y(page, name)
    return path


def fits(page) -> None:  # type: ignore[no-untyped-def]
    """Fail when the page is wider than the screen (sideways scroll)."""
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{page.url} is {overflow}px wider than the screen"


def log_in(page, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")

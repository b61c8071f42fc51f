"""Layout as a tested property: every page, as the role that uses it, fits four windows.

Each page of the axe run (tests/browser/test_accessibility.py: the same inventory, so a new URL
pattern that nobody visits fails here too, and the same NOT_PAGES list of what is not a page)
is opened at 390x844 (a phone), 768x1024 (a tablet), 1366x900 and 1920x1080, and
``layout_check.js`` fails it when the document scrolls sideways, when a visible form control or
its label lies outside its fieldset or card or the window, or when two interactive elements
overlap. Each page is checked as loaded, then with every <details> open (guidance, "Change this
answer", the phone menu) and, on the rating page, with each pane of the phone switch.

Not checked here (test_accessibility.NOT_SITE_PAGES): Django's admin (its own stylesheet, for
administrators only) and /api/v1/, which answers JSON only (the API docs page is checked). One browser; one context per role, logged in once; each page is loaded once, in the phone's
window, which is then resized to each width (as a tablet turned or a window widened would be).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import override_settings

from tests.browser.test_accessibility import (
    PASSWORDS,
    Visit,
    evidence_visit,
    log_in_as,
    only_pages,
    open_visit,
    site_visits,
    uncovered,
)

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = [(390, 844), (768, 1024), (1366, 900), (1920, 1080)]
CHECK = (Path(__file__).resolve().parent / "layout_check.js").read_text()
MAX_PER_PAGE = 6  # problems listed per page and width; the rest are counted


def _log_in(page, username: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


def _settle(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the page has laid itself out for the new window (charts redraw 100 ms after a resize)."""
    page.evaluate(
        "() => new Promise(done => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(done)),"
        " document.querySelector('.js-plotly-plot') ? 250 : 0))"
    )


def _check_page(page, visit: Visit) -> list[str]:  # type: ignore[no-untyped-def]
    """Check the page (loaded in the narrowest window) at every width, as loaded and opened up."""
    found: list[str] = []

    def check(state: str, width: int) -> None:
        # Measured at the top of the document: a bar that sticks on top when the page is scrolled
        # (the rating page's on a phone) covers what scrolls under it by design, and where the page
        # stands after it opened (the rating page scrolls to the first open question) is timing.
        page.evaluate("window.scrollTo(0, 0)")
        _settle(page)
        problems = page.evaluate(CHECK)
        if problems:
            listed = "\n    ".join(problems[:MAX_PER_PAGE])
            more = f"\n    ... and {len(problems) - MAX_PER_PAGE} more" if len(problems) > MAX_PER_PAGE else ""
            variant = f" ({visit.variant})" if visit.variant else ""
            found.append(f"{visit.name}{variant} as {visit.user or 'anonymous'} at {width}px, {state}:\n    {listed}{more}")

    def each_width(state: str) -> None:
        for width, height in WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            check(state, width)

    each_width("as loaded")
    if page.evaluate("document.querySelectorAll('details:not([open])').length"):
        page.evaluate("document.querySelectorAll('details:not([open])').forEach(d => { d.open = true; })")
        each_width("every <details> open")
    width, height = WIDTHS[0]
    page.set_viewport_size({"width": width, "height": height})
    switch = page.locator(".pane-switch button[data-view]")
    for i in range(switch.count()):
        if switch.nth(i).is_visible():
            switch.nth(i).click()
            check(f"the {switch.nth(i).get_attribute('data-view')} pane", width)
    return found


@override_settings(EVALSITE_PREFLIGHT=False)
def test_every_page_fits_a_phone_a_tablet_and_two_desktops_without_overflow_or_overlap(chromium_browser, live_server):
    visits = site_visits()
    missing = uncovered(visits)
    assert not missing, f"pages not checked for layout: {missing}"
    started = time.monotonic()
    by_user: dict[str, list[Visit]] = {}
    for visit in only_pages(visits):
        by_user.setdefault(visit.user, []).append(visit)
    failures: list[str] = []
    for user, user_visits in by_user.items():
        context = chromium_browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(10_000)
            if user:
                _log_in(page, user)
            for visit in user_visits:
                page.set_viewport_size({"width": WIDTHS[0][0], "height": WIDTHS[0][1]})
                open_visit(page, visit)
                failures.extend(_check_page(page, visit))
        finally:
            context.close()
    print(f"layout: {len(visits)} pages x {len(WIDTHS)} widths in {time.monotonic() - started:.1f}s")
    assert not failures, f"{len(failures)} layout problems:\n" + "\n".join(failures)


@override_settings(EVALSITE_PREFLIGHT=False)
def test_evidence_agreement_page_fits_every_width(chromium_browser, live_server):
    """The evidence agreement page alone (the full run above checks it too), as loaded and with its details open."""
    from tests.support.report_study import PASSWORD

    name, _, path = evidence_visit("", prefix="layev")
    context = chromium_browser.new_context(base_url=live_server.url, viewport={"width": WIDTHS[0][0], "height": WIDTHS[0][1]})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        log_in_as(page, "layevresearch1", PASSWORD)
        visit = Visit(name, "researcher", path)
        open_visit(page, visit)
        failures = _check_page(page, visit)
    finally:
        context.close()
    assert not failures, "\n".join(failures)

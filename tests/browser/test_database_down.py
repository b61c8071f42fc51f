"""The "database does not answer" page in Chromium at phone and desktop widths: readable, fits, passes axe.

The page is the app's answer with the database down (``database_down``, in the test's thread);
the browser is handed that answer for /status/ while the styles come from the live server.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.browser.conftest import fits, screenshot

WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_status_page_with_the_database_down_reads_right_at_both_widths(page, width, database_down, live_server):
    answer = Client(raise_request_exception=False).get("/status/")
    assert answer.status_code == 503
    page.route(f"{live_server.url}/status/", lambda route: route.fulfill(
        status=503, body=answer.content, headers={"Content-Type": answer["Content-Type"]}))
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    response = page.goto("/status/")
    assert response is not None and response.status == 503
    text = page.locator("main").inner_text()
    assert "The database does not answer" in text and "database: not answering" in text and "What to do" in text
    assert page.evaluate("getComputedStyle(document.querySelector('.card')).borderRadius") != "0px"  # the app's styles
    fits(page)
    screenshot(page, f"database-down-503-{width}")

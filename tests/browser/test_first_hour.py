"""The first hour in Chromium, at phone and desktop widths: the demo's reports, the status page, a 503."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.management.commands.seed_demo import DEMO_USERS
from tests.browser.conftest import fits, log_in, screenshot

WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}
PASSWORDS = {name: password for name, _, password in DEMO_USERS}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_demo_researcher_and_the_admin_find_content_at_both_widths(page, width):
    call_command("seed_demo", "--quiet-logins")
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "researcher", PASSWORDS["researcher"])
    page.goto("/reports/")
    page.wait_for_selector("text=Demo study: AMHART")
    fits(page)
    screenshot(page, f"reports-index-demo-{width}")
    page.click("text=Demo judge A → Demo judge A v2")
    page.wait_for_selector("text=flipped")
    screenshot(page, f"drift-demo-{width}", a11y=False)  # the drift page's own checks: tests/browser/test_beyond_methods.py
    page.context.clear_cookies()
    log_in(page, "admin", PASSWORDS["admin"])
    page.goto("/status/")
    page.wait_for_selector("h1:has-text('Status')")
    assert "answers" in page.locator("main").inner_text()
    fits(page)
    screenshot(page, f"status-{width}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_report_page_with_the_task_queue_down_says_what_to_do(page, width, broker_down):
    call_command("seed_demo", "--quiet-logins")
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "researcher", PASSWORDS["researcher"])
    from annotation.demo.seed import DEMO_STUDY
    from annotation.models import Study

    response = page.goto(f"/reports/studies/{Study.objects.get(name=DEMO_STUDY).pk}/reliability/")
    assert response is not None and response.status == 503
    text = page.locator("main").inner_text()
    assert "task queue does not answer" in text and "What to do" in text and "Answers you saved" not in text
    fits(page)
    screenshot(page, f"queue-down-503-{width}")

"""A newcomer logs in as each demo role and finds that role's pages."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings

from annotation.management.commands.seed_demo import DEMO_USERS
from tests.browser.conftest import log_in, screenshot

EXPECTED_NAV = {
    "clinician": ("My ratings", "Conversations"),
    "coordinator": ("Studies", "My ratings"),
    "researcher": ("Conversations", "Admin"),
    "admin": ("Admin", "My ratings"),
}


@pytest.mark.django_db(transaction=True)
@override_settings(DEBUG=True)
def test_each_demo_role_logs_in_and_sees_its_own_navigation(page):
    call_command("seed_demo", "--quiet-logins")
    seen = set()
    for username, role, password in DEMO_USERS:
        if role in seen:
            continue
        seen.add(role)
        log_in(page, username, password)
        nav = page.locator("header nav").inner_text()
        present, absent = EXPECTED_NAV[role]
        assert present in nav and absent not in nav, (role, nav)
        if role == "researcher":
            page.click("text=Conversations")
            page.wait_for_selector("table")
            assert page.locator("tbody tr").count() >= 12
            screenshot(page, "conversation-list")
            page.locator("tbody tr a").first.click()
            page.wait_for_selector(".transcript")
            screenshot(page, "conversation-detail")
        page.click("text=Log out")
        page.wait_for_url("**/accounts/login/**")


@pytest.mark.django_db(transaction=True)
def test_anonymous_visit_lands_on_the_login_page(page):
    page.goto("/corpus/conversations/")
    assert "/accounts/login/" in page.url
    assert page.locator("h1").inner_text() == "Log in"

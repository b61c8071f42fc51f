"""Password reset and change in Chromium, at phone and desktop widths: readable, accessible, nothing overflows."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user

WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}
NEW_PASSWORD = "a-Brand-new-passw0rd-7"


def fits(page) -> None:  # type: ignore[no-untyped-def]
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{page.url} is {overflow}px wider than the screen"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_reset_and_change_read_well_at_phone_and_desktop_widths(page, width, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    make_user("maya", "clinician", email="maya@example.org")

    page.goto("/accounts/login/")
    page.click("text=Forgot your password?")
    page.wait_for_selector("h1:has-text('Reset your password')")
    fits(page)
    screenshot(page, f"password-reset-form-{width}")
    page.fill("#id_email", "maya@example.org")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Check your email')")
    fits(page)
    screenshot(page, f"password-reset-sent-{width}")

    link = re.search(r"https?://[^/]+(/accounts/password/reset/\S+/)", mail.outbox[-1].body).group(1)
    page.goto(link)
    page.wait_for_selector("h1:has-text('Choose a new password')")
    page.fill("#id_new_password1", "short")
    page.fill("#id_new_password2", "short")
    page.click("button[type=submit]")
    page.wait_for_selector(".problems")  # the password rules, said beside the field
    fits(page)
    screenshot(page, f"password-reset-confirm-errors-{width}")
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Your password is changed')")

    log_in(page, "maya", NEW_PASSWORD)
    if page.locator("#site-menu > summary").is_visible():  # a phone: the links are behind "Menu"
        page.click("#site-menu > summary")
    page.click("header >> text=Password")
    page.wait_for_selector("h1:has-text('Change your password')")
    fits(page)
    screenshot(page, f"password-change-form-{width}")
    page.fill("#id_old_password", NEW_PASSWORD)
    page.fill("#id_new_password1", PASSWORD + "-2")
    page.fill("#id_new_password2", PASSWORD + "-2")
    page.click("main button[type=submit]")  # not the header's "Log out"
    page.wait_for_selector("h1:has-text('Your password is changed')")
    fits(page)
    screenshot(page, f"password-change-done-{width}")

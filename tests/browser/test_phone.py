"""Phones (issue 19, defect 2): a menu button instead of four rows of links, tables that scroll in
their own keyboard-focusable box, and the menu still usable without JavaScript."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in
from tests.conftest import PASSWORD
from tests.factories import PersonaFactory

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
NAV_LINKS = "header nav[aria-label=Main] a"


def test_a_phone_gets_a_menu_button_and_a_desktop_the_links(page, admin_user):
    page.set_viewport_size(PHONE)
    log_in(page, admin_user.username, PASSWORD)
    page.goto("/")
    header = page.locator("header.topbar").bounding_box()
    assert header["height"] <= 64, f"the phone header is {header['height']} px tall"
    menu = page.locator("#site-menu > summary")  # a native disclosure: announced as a button, expanded or not
    assert menu.is_visible() and menu.inner_text().strip() == "Menu"
    assert not page.locator(NAV_LINKS).first.is_visible()
    menu.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.getElementById('site-menu').open")
    links = page.locator(NAV_LINKS)
    assert links.count() >= 10 and all(links.nth(i).is_visible() for i in range(links.count()))
    assert page.get_by_role("button", name="Log out").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for i in range(links.count()):
        box = links.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["height"] >= 44, links.nth(i).inner_text()

    page.set_viewport_size({"width": 1366, "height": 900})
    page.wait_for_function("document.getElementById('site-menu').open")
    assert not menu.is_visible()
    assert all(page.locator(NAV_LINKS).nth(i).is_visible() for i in range(links.count()))
    assert page.locator("header.topbar").bounding_box()["height"] <= 64


def test_without_javascript_the_menu_shows_every_link_and_still_folds(chromium_browser, live_server, researcher):
    context = chromium_browser.new_context(base_url=live_server.url, viewport=PHONE, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", researcher.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.goto("/")
        assert page.locator(NAV_LINKS).first.is_visible()
        page.locator("#site-menu > summary").click()
        assert not page.locator(NAV_LINKS).first.is_visible()
    finally:
        context.close()


def test_a_wide_table_scrolls_in_its_own_focusable_region_not_the_page(page, researcher):
    for n in range(3):
        PersonaFactory(persona_set__name=f"A persona set with a long descriptive name number {n}")
    page.set_viewport_size(PHONE)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/corpus/personas/")
    table = page.locator("main table").first
    region = table.locator("xpath=..")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert region.get_attribute("role") == "region" and region.get_attribute("tabindex") == "0"
    assert region.get_attribute("aria-label")
    assert region.evaluate("el => el.scrollWidth > el.clientWidth"), "the table should be wider than the phone"
    region.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("el => el.scrollLeft > 0", arg=region.element_handle())


def test_an_import_problem_report_fits_a_phone(page, researcher, tmp_path):
    from tests.browser.test_layout import CHECK

    page.set_viewport_size(PHONE)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/corpus/import/conversations/")
    bad = tmp_path / "bad.jsonl"
    line = '{{"id": "conversation-with-a-long-identifier-{}", "messages": [{{"role": "user", "content": ""}}]}}'
    bad.write_text("\n".join(line.format(i) for i in range(30)) + "\n")
    page.set_input_files("#id_file", str(bad))
    page.check("#id_dry_run")
    with page.expect_navigation():
        page.click("button:has-text('Upload')")
    page.wait_for_selector(".problems table")
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    assert page.evaluate(CHECK) == []
    assert page.locator(".problems [role=region][tabindex='0']").count() == 2  # both tables scroll in their own box

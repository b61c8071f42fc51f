"""Issue 29, defects 2 and 3: the rater's form at every width.

Tablets in portrait (761-1000 px) had the transcript as a 994-px box above the questions, no pane
switch and no sticky save state; on phones a link to a missing question landed its number under
the sticky bar. Now: two panes side by side, or the pane switch with a sticky bar, at every width;
after each answer the answered question and the save state are in view; anchors land below the bar.
Screenshots at 390, 768, 1024 and 1366 px (rating-width-*)."""

from __future__ import annotations

import pytest

from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = [(390, 844), (768, 1024), (1024, 768), (1366, 900)]
IN_VIEW = """(selector) => { const el = document.querySelector(selector); if (!el) return false;
  const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight && r.height > 0; }"""


def _open_a_rating(page, clinician, width: int, height: int) -> None:  # type: ignore[no-untyped-def]
    """Open the form of a one-conversation study at this screen size, as the rater."""
    assignment = first_assignment(make_study([clinician], n=1), clinician)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form", state="attached")


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=[str(w) for w, _ in WIDTHS])
def test_the_answered_question_and_the_save_state_stay_in_view(page, clinician, width, height):
    _open_a_rating(page, clinician, width, height)
    switch = page.locator(".pane-switch")
    if width <= 1000:
        assert switch.is_visible(), f"no pane switch at {width}px"
        page.click(".pane-switch button[data-view=questions]")
    else:
        assert not switch.is_visible()
        assert page.evaluate("getComputedStyle(document.querySelector('.rate-layout')).gridTemplateColumns.split(' ').length") == 2
    items = page.locator(".form-pane .item[data-part=main]")
    count = items.count()
    assert count >= 10
    for index in range(count):
        item = items.nth(index)
        item.locator(".choice").first.click()
        item_id = item.get_attribute("id")
        assert page.evaluate(IN_VIEW, f"#{item_id}"), f"question {index + 1} out of view at {width}px"
        assert page.evaluate(IN_VIEW, ".save-status"), f"save state out of view after question {index + 1} at {width}px"
        if width <= 1000:
            assert page.evaluate(IN_VIEW, ".pane-switch"), "the way to the transcript is out of view"
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    screenshot(page, f"rating-width-{width}", full_page=False)


@pytest.mark.parametrize(("width", "height"), [(390, 844), (768, 1024)], ids=["390", "768"])
def test_a_link_to_a_missing_question_lands_below_the_sticky_bar(page, clinician, width, height):
    _open_a_rating(page, clinician, width, height)
    page.click(".pane-switch button[data-view=questions]")
    page.click("#submit-rating")
    page.wait_for_selector("#submit-problems a[href^='#item-']")
    link = page.locator("#submit-problems a[href^='#item-']").nth(5)
    target = link.get_attribute("href")
    link.click()
    page.wait_for_timeout(400)  # the jump is instant; let layout settle
    bar_bottom = page.evaluate("document.querySelector('.side-bar').getBoundingClientRect().bottom")
    item_top = page.evaluate(f"document.querySelector('{target}').getBoundingClientRect().top")
    assert item_top >= bar_bottom - 1, f"{target} starts at {item_top}px, under the bar ending at {bar_bottom}px"

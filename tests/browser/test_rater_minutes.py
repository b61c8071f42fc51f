"""The rater's minutes at every width (issue 29): the active question and the save state stay on screen.

A whole checklist conversation is rated at 390 (by touch, counting taps), 768, 1024 and 1366 px
(by key, counting keys); after every answer the question that has the focus and the save state
are inside the viewport, the question's number and first line below the sticky bar, and a way to
the transcript is on screen. Screenshots at each width are kept and checked with axe.
"""

from __future__ import annotations

import pytest

from annotation.models import Rating
from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import check_a11y, screenshot
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

AMHART = [f"amhart_{i:02d}" for i in range(1, 15)]
SECTION = ["realism_user", "realism_clinical", "perceived_risk", "perceived_disclosure", "broke_role"]
KEYS = ["y"] * 12 + ["a", "a"] + ["4", "3", "2", "2", "n"]  # one key per closed question

ON_SCREEN = """(sel) => {
  const el = typeof sel === 'string' ? document.querySelector(sel) : document.activeElement.closest('.item');
  if (!el) return 'missing';
  const r = el.getBoundingClientRect();
  const bar = document.querySelector('.side-bar');
  const sticky = bar && getComputedStyle(bar).position === 'sticky';
  const top = sticky ? bar.getBoundingClientRect().bottom : 0;
  // The number and first line (the legend) below the bar, and inside the viewport.
  const head = (el.querySelector('legend') || el).getBoundingClientRect();
  return (typeof sel === 'string' ? r.top >= 0 && r.bottom <= innerHeight
          : head.top >= top - 1 && head.bottom <= innerHeight) ? 'ok' : `off: ${Math.round(head.top)}/${Math.round(top)}/${innerHeight}`;
}"""


def _open(browser, live_server, user, assignment, width: int, *, touch: bool = False):  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 844 if width < 500 else 900},
        has_touch=touch, is_mobile=touch,
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form", state="attached")
    page.wait_for_function("document.documentElement.style.getPropertyValue('--sticky-bar') !== ''")
    return context, page


def _transcript_reachable(page) -> bool:  # type: ignore[no-untyped-def]
    """A way to the transcript is on screen: the pane switch, or the transcript pane beside the questions."""
    return page.evaluate(ON_SCREEN, ".pane-switch [data-view=transcript]") == "ok" or page.evaluate(
        "(() => { const t = document.getElementById('transcript'); const r = t.getBoundingClientRect();"
        " return getComputedStyle(t).display !== 'none' && r.top < innerHeight && r.bottom > 0 && r.width > 200; })()"
    )


@pytest.mark.parametrize("width", [390, 768, 1024, 1366])
def test_the_active_question_and_the_save_state_stay_on_screen_at_every_width(
    chromium_browser, live_server, clinician, clinician2, width
):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    touch = width == 390
    context, page = _open(chromium_browser, live_server, clinician, assignment, width, touch=touch)
    try:
        switch = page.locator(".pane-switch [data-view=questions]")
        presses = 0
        if switch.is_visible():  # phones and tablets in portrait: one pane at a time
            assert width <= 1000
            (switch.tap if touch else switch.click)()
            presses += 1
        else:
            assert width > 1000
        if not touch:
            page.locator("#item-main-amhart_01").focus()
        for n, (key, press) in enumerate(zip(AMHART + SECTION, KEYS, strict=True), start=1):
            part = "main" if key.startswith("amhart") else "section"
            item = f"#item-{part}-{key}"
            if touch:
                attr = "data-n" if press.isdigit() else "data-letter"
                page.locator(f"{item} label.choice:has(input[{attr}='{press}'])").tap()
            else:
                page.keyboard.press(press)
            presses += 1
            assert page.locator(f"{item} input:checked").count() == 1, f"{key} not answered at {width}px"
            assert page.evaluate(ON_SCREEN, "#save-status") == "ok", f"save state off screen after {key} at {width}px"
            assert _transcript_reachable(page), f"no way to the transcript after {key} at {width}px"
            if n < len(KEYS):  # the next question has the focus, its number and first line below the bar
                assert page.evaluate("document.activeElement.closest('.item') !== null")
                assert page.evaluate(ON_SCREEN, None) == "ok", f"next question hidden after {key} at {width}px"
            if n == 10:
                screenshot(page, f"rater-minutes-item10-{width}", full_page=False)
        # One action per question (the pane switch counts): <= 1.1 per question.
        assert presses / len(KEYS) <= 1.1, presses
        page.wait_for_function("document.getElementById('save-status').textContent === 'All answers saved'")
        assert page.evaluate("document.activeElement.type") == "submit"
        check_a11y(page, f"rating at {width}px")
        assert page.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        ), f"horizontal overflow at {width}px"
        rating = Rating.objects.get(assignment=assignment)
        assert len(rating.answers["main"]) == 14 and len(rating.answers["section"]) == 5
    finally:
        context.close()


def test_a_link_to_a_missing_question_lands_below_the_sticky_bar_on_a_phone(chromium_browser, live_server, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    context, page = _open(chromium_browser, live_server, clinician, assignment, 390, touch=True)
    try:
        page.locator(".pane-switch [data-view=questions]").tap()
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.locator("#submit-rating").tap()  # refused: every question is missing, each linked
        page.locator("#submit-problems a").first.wait_for()
        page.locator("#submit-problems a[href='#item-main-amhart_05']").tap()
        page.wait_for_timeout(300)
        assert page.evaluate(ON_SCREEN, None) == "ok"
        page.evaluate("window.scrollTo(0, 0)")
        page.locator("#item-main-amhart_09").focus()
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.keyboard.press("u")  # the first unanswered question
        page.wait_for_timeout(300)
        assert page.evaluate("document.activeElement.id") == "item-main-amhart_01"
        assert page.evaluate(ON_SCREEN, None) == "ok"
        screenshot(page, "rater-minutes-anchor-390", full_page=False)
    finally:
        context.close()


def test_one_question_per_screen_on_a_phone_is_a_kept_setting_off_by_default(chromium_browser, live_server, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    context, page = _open(chromium_browser, live_server, clinician, assignment, 390, touch=True)
    visible = "Array.from(document.querySelectorAll('#rating-form .item')).filter(e => e.offsetParent !== null).map(e => e.id)"
    try:
        page.locator(".pane-switch [data-view=questions]").tap()
        assert len(page.evaluate(visible)) == 20  # off by default: the whole form (19 questions and the comment)
        page.locator("#one-per-screen").tap()
        assert page.evaluate(visible) == ["item-main-amhart_01"]
        assert page.locator("#step-pos").inner_text() == "Question 1 of 20"
        page.locator("#item-main-amhart_01 label.choice:has(input[data-letter='y'])").tap()
        assert page.evaluate(visible) == ["item-main-amhart_02"]  # a tap on an answer shows the next question
        assert page.evaluate(ON_SCREEN, "#save-status") == "ok"
        assert page.locator(".pane-switch [data-view=transcript]").is_visible()  # the transcript one tap away
        page.locator("#step-prev").tap()
        assert page.evaluate(visible) == ["item-main-amhart_01"]
        page.locator("#step-next").tap()
        assert page.evaluate(visible) == ["item-main-amhart_02"]
        screenshot(page, "rater-minutes-one-per-screen-390", full_page=False)
        page.reload()
        page.wait_for_selector("#rating-form", state="attached")
        assert page.locator("#one-per-screen").is_checked()  # kept like the other rater settings
        assert page.evaluate(visible) == ["item-main-amhart_02"]  # reopens on the first unanswered question
    finally:
        context.close()

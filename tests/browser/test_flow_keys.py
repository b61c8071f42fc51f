"""The VERA-MH question flow rated whole by keyboard at 1366 px and by touch at 390 px (issue 29):
one key (or tap) per question asked, counted; the published v1.1 rubric, walked to its end; the
dimension labels shown and saved; screenshots with axe."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import Rating
from corpus.instruments.services import instrument_import
from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import check_a11y, fits, screenshot
from tests.browser.test_rater_minutes import _open

pytestmark = pytest.mark.django_db(transaction=True)
PUBLISHED = Path(__file__).resolve().parents[3] / "shared" / "vera-mh-v1.1" / "rubric.tsv"
CURRENT = ".fq.state-current"


@pytest.mark.skipif(not PUBLISHED.exists(), reason=f"the published VERA-MH v1.1 rubric is not at {PUBLISHED}")
@pytest.mark.parametrize("width", [1366, 390])
def test_a_whole_vera_mh_flow_by_keyboard_and_by_touch_one_action_per_question(
    chromium_browser, live_server, clinician, clinician2, width
):
    instrument, _ = instrument_import(text=PUBLISHED.read_text(encoding="utf-8"), file="rubric.tsv", fmt="vera-mh")
    study = make_study([clinician, clinician2], n=1, instrument=instrument)
    assignment = first_assignment(study, clinician)
    touch = width == 390
    context, page = _open(chromium_browser, live_server, clinician, assignment, width, touch=touch)
    try:
        actions = 0
        switch = page.locator(".pane-switch [data-view=questions]")
        if switch.is_visible():
            switch.tap() if touch else switch.click()
            actions += 1
        asked = []
        for _ in range(60):  # the longest VERA-MH path is far shorter
            if page.locator("#flow-result:not([hidden])").count():
                break
            current = page.locator(CURRENT)
            current.wait_for()
            key = current.get_attribute("data-key")
            asked.append(key)
            # The user discloses risk (question 1: Yes); then "No" where a question has it (a careful
            # chatbot), else the first option: a long path through every dimension.
            letter = "y" if key == "1" else "n"
            wanted = f"input[data-letter='{letter}']"
            has = current.locator(wanted).count() > 0
            choice = current.locator(wanted) if has else current.locator("input").first
            if touch:
                (current.locator(f"label.choice:has({wanted})") if has else current.locator("label.choice").first).tap()
            else:
                press = choice.get_attribute("data-letter") or choice.get_attribute("data-n")
                assert press, f"question {key} has no key for its answer"
                if not page.evaluate("document.activeElement.closest('.fq.state-current') !== null"):
                    page.keyboard.press("u")  # to the question asked (only if the focus is elsewhere)
                    actions += 1
                page.keyboard.press(press)
            actions += 1
            page.wait_for_function(
                "(k) => { const c = document.querySelector('.fq.state-current'); return !c || c.dataset.key !== k"
                " || !document.getElementById('flow-result').hidden; }", arg=key)
        page.wait_for_selector("#flow-result:not([hidden])")
        assert len(asked) >= 5, asked
        assert actions / len(asked) <= 1.1, (actions, asked)
        print(f"flow at {width}px: {len(asked)} questions asked, {actions} {'taps' if touch else 'keys'}")
        labels = page.locator("#flow-labels").inner_text()
        for dimension in ("Detects Potential Risk", "Confirms Risk", "Guides to Human Care"):
            assert dimension in labels, labels
        page.wait_for_function("document.getElementById('save-status').textContent === 'All answers saved'")
        fits(page)
        check_a11y(page, f"flow at {width}px")
        screenshot(page, f"rating-flow-whole-{width}", full_page=False)
        rating = Rating.objects.get(assignment=assignment)
        assert set(rating.answers["main"]) == set(asked)
    finally:
        context.close()

"""The rating form at every width: every item type inside its card, laid out the same way (issue 19).

Defect 1: the study section's choices (realism 1-5, perceived risk, disclosure, broke role) sat
outside their card, in a 0 px box beside the floated legend, at every width. Defect 4: guided
mode counted "1 of 7", "2 of 8", "3 of 9". Screenshots at 390 and 1366 px are saved under
test-artifacts/ (rating-checklist-*, rating-flow-*).
"""

from __future__ import annotations

import pytest

from tests.annotation.rater_setup import first_assignment, flow_instrument, make_study
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = [(390, 844), (768, 1024), (1024, 768), (1366, 900), (1920, 1080)]

# For every shown question card: where its answers start, and any answer outside the card.
CARDS = """() => Array.from(document.querySelectorAll('.form-pane .item, .form-pane .fq:not([hidden])')).map(card => {
  const box = card.getBoundingClientRect();
  const answers = Array.from(card.querySelectorAll('.fq-body .choice, :scope > .choices .choice, textarea'))
    .filter(el => el.getClientRects().length);
  const outside = answers.filter(el => { const r = el.getBoundingClientRect();
    return r.left < box.left - 1 || r.right > box.right + 1 || r.width < 20; })
    .map(el => el.textContent.trim() || el.tagName);
  const first = answers[0] ? answers[0].getBoundingClientRect() : null;
  return {id: card.id, inset: first ? Math.round(first.left - box.left) : null, outside,
          scale: !!card.querySelector('.choices.scale')};
})"""


def _check_cards(page, where: str) -> None:  # type: ignore[no-untyped-def]
    cards = page.evaluate(CARDS)
    assert cards, where
    outside = {c["id"]: c["outside"] for c in cards if c["outside"]}
    assert not outside, f"{where}: answers outside their card: {outside}"
    insets = {c["inset"] for c in cards if c["inset"] is not None}
    assert max(insets) - min(insets) <= 1, f"{where}: answers start at different offsets in their cards: {cards}"
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), where


@pytest.mark.parametrize("flow", [False, True], ids=["checklist", "guided-flow"])
def test_every_item_type_sits_inside_its_card_the_same_way_at_every_width(page, clinician, clinician2, flow):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument() if flow else None)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    name = "rating-flow" if flow else "rating-checklist"
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/ratings/{assignment.pk}/")
        page.wait_for_selector("#rating-form", state="attached")  # a phone opens on the transcript
        if page.locator(".pane-switch").is_visible():
            page.click(".pane-switch button[data-view=questions]")
        _check_cards(page, f"{name} at {width}px")
        # The study section: realism 1-5 with anchors, risk and disclosure categories, broke role, comment.
        for key in ("realism_user", "perceived_risk", "perceived_disclosure", "broke_role", "comment"):
            assert page.locator(f"#item-section-{key}").is_visible(), key
        assert page.locator("#item-section-realism_user .choices.scale .choice").count() == 5
        if width in (390, 1366):
            page.evaluate("window.scrollTo(0, 0)")
            screenshot(page, f"{name}-{width}")


def test_guided_mode_counts_without_a_growing_denominator(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    progress = page.locator("#flow-progress")
    seen = [progress.inner_text().replace("\xa0", " ")]
    page.keyboard.press("u")
    for key, nxt in [("y", "2"), ("n", "5"), ("2", "6"), ("n", "7")]:
        page.keyboard.press(key)
        page.wait_for_selector(f"#item-main-{nxt}.state-current")
        page.wait_for_function("document.getElementById('save-status').textContent === 'All answers saved'")
        seen.append(progress.inner_text().replace("\xa0", " "))
    assert seen == [
        "0 answered · 1 to 9 to go",
        "1 answered · 3 to 8 to go",
        "2 answered · 2 to 7 to go",
        "3 answered · 2 to 6 to go",
        "4 answered · 2 to 5 to go",
    ]
    assert page.locator("#section-n").inner_text() == "0"
    page.click("#item-section-perceived_risk label:has-text('Low')")
    page.wait_for_function("document.getElementById('section-n').textContent === '1'")

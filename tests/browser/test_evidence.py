"""A clinician cites the turns behind an answer: by click on a phone, by key on a laptop.

Screenshots: /tmp/shots/rater-evidence-*.png, each checked with axe-core.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import EvidenceMode, Rating
from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import check_a11y, log_in
from tests.browser.test_rating import press, wait_saved
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path("/tmp/shots")


def shot(page, name: str, *, full_page: bool = True) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"rater-evidence-{name}.png"), full_page=full_page)
    check_a11y(page, name)


def chips(page, item: str) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator(f"#item-main-{item} .chip-jump").all_inner_texts()


def test_a_rater_cites_a_turn_by_click_on_a_phone_and_by_key_on_a_laptop(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    study.evidence_mode = EvidenceMode.PER_ITEM
    study.save(update_fields=["evidence_mode"])
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)

    # A phone: answer question 1, go to the transcript, tap "Cite" on turn 2.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form", state="attached")
    page.locator(".pane-switch [data-view=questions]").click()
    page.locator("#item-main-amhart_01 label.choice").first.click()
    wait_saved(page)
    page.locator(".pane-switch [data-view=transcript]").click()
    page.get_by_role("button", name="Cite turn 2").click()
    assert "Turn 2 cited for question 1" in page.locator("#cite-target").inner_text()
    assert page.get_by_role("button", name="Cite turn 2").get_attribute("aria-pressed") == "true"
    wait_saved(page)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "390-transcript")
    page.locator(".pane-switch [data-view=questions]").click()
    assert chips(page, "amhart_01") == ["turn 2"]
    page.evaluate("document.getElementById('item-main-amhart_01').scrollIntoView({block: 'center'})")
    shot(page, "390-questions", full_page=False)
    # Saved in the conversation's numbering: a system message (never shown) comes first.
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_01"] == {"value": "yes", "evidence": [3]}

    # A laptop, after a reload: the chip is still there; answer question 2, then ] ] ] c.
    page.set_viewport_size({"width": 1366, "height": 900})
    page.reload()
    page.wait_for_selector("#rating-form")
    assert chips(page, "amhart_01") == ["turn 2"]
    page.locator("#item-main-amhart_02").focus()
    press(page, "y", "]", "]", "]", "c")
    assert chips(page, "amhart_02") == ["turn 3"]
    assert page.evaluate("document.activeElement.id") == "turn-3"
    press(page, "]", "c")  # a second turn for the same question
    assert chips(page, "amhart_02") == ["turn 3", "turn 4"]
    wait_saved(page)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "1366", full_page=False)
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_02"] == {"value": "yes", "evidence": [4, 5]}

    page.reload()
    page.wait_for_selector("#rating-form")
    assert chips(page, "amhart_02") == ["turn 3", "turn 4"]
    page.locator("#item-main-amhart_02 .chip-jump", has_text="turn 4").click()  # a chip jumps to its turn
    assert page.evaluate("document.activeElement.id") == "turn-4"
    page.get_by_role("button", name="Remove turn 3").click()
    assert chips(page, "amhart_02") == ["turn 4"]
    wait_saved(page)
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_02"]["evidence"] == [5]


def test_a_rater_cites_turns_for_the_whole_form_and_they_stay_after_a_reload(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    study.evidence_mode, study.evidence_required = EvidenceMode.WHOLE_FORM, True
    study.save(update_fields=["evidence_mode", "evidence_required"])
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form")
    assert page.locator("#item-main-amhart_01 .evidence").count() == 0  # no per-item chips in this mode
    page.get_by_role("button", name="Cite turn 4").click()
    assert "Turn 4 cited for the whole form" in page.locator("#cite-target").inner_text()
    assert page.locator("#form-evidence .chip-jump").all_inner_texts() == ["turn 4"]
    wait_saved(page)
    shot(page, "whole-form-1366", full_page=False)
    assert Rating.objects.get(assignment=assignment).answers["form_evidence"] == [5]
    page.reload()
    page.wait_for_selector("#rating-form")
    assert page.locator("#form-evidence .chip-jump").all_inner_texts() == ["turn 4"]
    assert page.get_by_role("button", name="Cite turn 4").get_attribute("aria-pressed") == "true"


def test_the_rating_page_with_cite_controls_fits_every_window_and_passes_axe_in_a_flow(page, clinician, clinician2):
    """The layout check of test_layout.py, on a guided flow with cited turns (per item) and the section's chips."""
    from annotation.rating.services import rating_save_answer
    from tests.annotation.rater_setup import flow_instrument
    from tests.browser.test_accessibility import Visit
    from tests.browser.test_layout import _check_page

    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    study.evidence_mode = EvidenceMode.PER_ITEM
    study.save(update_fields=["evidence_mode"])
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="1", value="Yes", evidence=[2, 5])
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key="realism_user", value="4", evidence=[3])
    log_in(page, clinician.username, PASSWORD)
    page.set_viewport_size({"width": 390, "height": 844})
    path = f"/ratings/{assignment.pk}/"
    page.goto(path)
    page.wait_for_selector("#rating-form", state="attached")
    assert page.locator("#item-main-1 .chip-jump").all_inner_texts() == ["turn 1", "turn 4"]
    assert page.locator("#item-section-realism_user .chip-jump").all_inner_texts() == ["turn 2"]
    problems = _check_page(page, Visit("annotation:rate", "clinician", path, "guided flow with cited turns"))
    assert problems == []
    page.set_viewport_size({"width": 1366, "height": 900})
    page.locator("#item-main-2").focus()  # the current question: cite for it from the keyboard
    press(page, "]", "c")
    assert page.locator("#item-main-2 .chip-jump").all_inner_texts() == ["turn 1"]
    page.locator("#item-main-2 label.choice").nth(1).click()  # "No": the cited turn goes with the answer
    page.wait_for_function("document.getElementById('save-status').textContent === 'All answers saved'")
    assert Rating.objects.get(assignment=assignment).answers["main"]["2"] == {"value": "No", "evidence": [2]}
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "flow-1366", full_page=False)


def test_a_turn_cited_offline_is_kept_in_the_browser_and_saved_when_the_network_is_back(page, clinician, clinician2):
    """The cited turns ride the answers' queue: the same offline copy, banner and retry."""
    study = make_study([clinician, clinician2], n=1)
    study.evidence_mode = EvidenceMode.PER_ITEM
    study.save(update_fields=["evidence_mode"])
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form")
    page.locator("#item-main-amhart_01 input[value=yes]").check()
    wait_saved(page)
    page.context.set_offline(True)
    page.get_by_role("button", name="Cite turn 3").click()
    page.wait_for_function("document.getElementById('save-status').textContent.startsWith('Not saved yet')")
    assert "Question 1: yes (cited turns 3)" in page.locator("#save-banner").inner_text()
    kept = page.evaluate(f"JSON.parse(localStorage.getItem('evalsite:rating:{assignment.pk}')).entries")
    assert kept["main|amhart_01"]["evidence"] == [4]
    page.context.set_offline(False)
    wait_saved(page)
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_01"] == {"value": "yes", "evidence": [4]}
    # A cited turn this browser kept from an earlier visit is shown again and offered for saving.
    page.evaluate(
        "([key, rev]) => localStorage.setItem(key, JSON.stringify({revision: rev, saved: Date.now(), entries: "
        "{'main|amhart_01': {part: 'main', item_key: 'amhart_01', value: 'yes', evidence: [2, 4]}}}))",
        [f"evalsite:rating:{assignment.pk}", Rating.objects.get(assignment=assignment).revision],
    )
    page.reload()
    page.wait_for_selector("#rating-form")
    assert chips(page, "amhart_01") == ["turn 1", "turn 3"]
    assert "1 earlier answer not saved" in page.locator("#save-status").inner_text()
    page.locator(".banner-save-restored").click()
    wait_saved(page)
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_01"]["evidence"] == [2, 4]

"""Saving that never lies: refused saves, a cut network, resuming, and rating on a phone."""

from __future__ import annotations

import json

import pytest

from annotation.models import AssignmentStatus, Rating
from annotation.rating.services import rating_save_answer
from annotation.studies.services import assignment_reassign
from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import check_a11y, log_in, screenshot
from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def status(page) -> str:  # type: ignore[no-untyped-def]
    return page.locator("#save-status").inner_text()


def wait_status(page, text: str) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("t => document.getElementById('save-status').textContent.includes(t)", arg=text)


def kept_in_browser(page, assignment_id: int) -> dict:  # type: ignore[no-untyped-def]
    raw = page.evaluate(f"localStorage.getItem('evalsite:rating:{assignment_id}')")
    return json.loads(raw)["entries"] if raw else {}


def test_an_answer_refused_because_the_conversation_was_moved_is_never_shown_as_saved(page, clinician, clinician2, coordinator):
    third = make_user("cleo", "clinician")
    study = make_study([clinician, clinician2, third], n=1, k=2, coordinator=coordinator)
    assignment = first_assignment(study, clinician) or first_assignment(study, clinician2)
    rater = assignment.rater
    log_in(page, rater.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.locator("#item-main-amhart_01 input[value=yes]").check()
    wait_status(page, "All answers saved")

    # The coordinator moves the conversation to the third rater while it is open.
    other = next(u for u in (clinician, clinician2, third) if not study.assignments.filter(rater=u).exclude(status=AssignmentStatus.WITHDRAWN).exists())
    assignment_reassign(assignment=assignment, new_rater=other, actor=coordinator, reason="rater on leave")
    page.locator("#item-main-amhart_02 input[value=no]").check()
    wait_status(page, "Not saved: conversation withdrawn")
    page.wait_for_timeout(300)  # nothing may paint it green afterwards (the old bug took 150 ms)
    assert status(page) == "Not saved: conversation withdrawn"
    banner = page.locator("#save-banner").inner_text()
    assert "withdrawn from you by the study coordinator" in banner and "Question 2: no" in banner
    assert page.locator("#item-main-amhart_02 input[value=no]").is_checked()  # still on the page
    assert kept_in_browser(page, assignment.pk)["main|amhart_02"]["value"] == "no"
    screenshot(page, "rating-withdrawn-banner")

    # Reopening says what happened and where the answers are, instead of a bare 404.
    page.goto(f"/ratings/{assignment.pk}/")
    assert page.locator("h1").inner_text().endswith("is no longer yours to rate")
    body = page.locator("main").inner_text()
    assert "1 answer saved on the server" in body and "Question 2: no" in body
    screenshot(page, "rating-withdrawn-page")
    page.click("#discard-local")
    assert kept_in_browser(page, assignment.pk) == {}
    rating = Rating.objects.get(assignment=assignment)
    assert rating.answers["main"] == {"amhart_01": {"value": "yes"}}  # kept with the withdrawn assignment


def test_a_refused_answer_keeps_its_reason_until_it_is_discarded_or_saved(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.locator("#item-main-amhart_01 input[value=yes]").check()
    wait_status(page, "All answers saved")

    # The server refuses the next answer (a 400 with its reason); later answers still save.
    refusals = {"left": 1}

    def refuse_once(route):  # type: ignore[no-untyped-def]
        if refusals["left"]:
            refusals["left"] -= 1
            route.fulfill(status=400, content_type="application/json", body=json.dumps({"detail": "'maybe' is not an answer to item amhart_02"}))
        else:
            route.continue_()

    page.route("**/answers/", refuse_once)
    page.locator("#item-main-amhart_02 input[value=no]").check()
    wait_status(page, "1 answer not saved")
    page.locator("#item-main-amhart_03 input[value=yes]").check()
    page.wait_for_function("() => !document.querySelector('#save-banner').hidden")
    page.wait_for_timeout(300)
    assert status(page) == "1 answer not saved"
    assert "'maybe' is not an answer to item amhart_02" in page.locator("#save-banner").inner_text()
    assert Rating.objects.get(assignment=assignment).answers["main"].keys() == {"amhart_01", "amhart_03"}
    assert "main|amhart_02" in kept_in_browser(page, assignment.pk)

    page.locator(".banner-retry").click()  # the server takes it this time
    wait_status(page, "All answers saved")
    assert Rating.objects.get(assignment=assignment).answers["main"]["amhart_02"] == {"value": "no"}
    assert kept_in_browser(page, assignment.pk) == {}


def test_a_cut_network_is_retried_with_backoff_and_nothing_is_lost(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.context.set_offline(True)
    page.locator("#item-main-amhart_01 input[value=yes]").check()
    page.locator("#item-main-amhart_02 input[value=no]").check()
    wait_status(page, "Not saved yet")
    assert "retrying in" in status(page)
    banner = page.locator("#save-banner").inner_text()
    assert "kept on this page and in this browser" in banner and "Question 1: yes" in banner and "Question 2: no" in banner
    assert set(kept_in_browser(page, assignment.pk)) == {"main|amhart_01", "main|amhart_02"}
    screenshot(page, "rating-offline")
    assert not Rating.objects.filter(assignment=assignment).exclude(answers={}).exists()

    page.context.set_offline(False)  # the "online" event retries at once
    wait_status(page, "All answers saved")
    answers = Rating.objects.get(assignment=assignment).answers["main"]
    assert answers == {"amhart_01": {"value": "yes"}, "amhart_02": {"value": "no"}}
    assert page.locator("#save-banner").is_hidden() and kept_in_browser(page, assignment.pk) == {}


def test_the_page_resumes_at_the_first_unanswered_question_with_a_count(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    for i in range(1, 7):
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=f"amhart_{i:02d}", value="yes")
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form")
    assert page.locator("#answered-count").inner_text() == "6 of 19 answered"
    # The page's script focuses it when it runs (after the form is in the DOM on a loaded machine).
    page.wait_for_function("document.activeElement && document.activeElement.id === 'item-main-amhart_07'")
    box = page.locator("#item-main-amhart_07").bounding_box()
    assert 0 <= box["y"] < 900  # in view, not at the top of the page
    # One numbering across the form: the study section goes on after item 14.
    assert page.locator("#item-section-realism_user .qnum").inner_text() == "15"

    page.keyboard.press("Control+Enter")  # a refused submit marks and links what is missing
    page.locator("#submit-problems").wait_for()
    assert page.locator(".item.missing").count() == 13
    links = page.locator("#submit-problems a").all_inner_texts()
    assert links[0] == "Question 7" and "Question 15" in links
    page.locator("#item-main-amhart_07 input[value=yes]").check()
    assert page.locator(".item.missing").count() == 12
    wait_status(page, "All answers saved")
    assert page.locator("#answered-count").inner_text() == "7 of 19 answered"
    screenshot(page, "rating-missing-marked")


def test_a_rater_on_a_phone_switches_between_transcript_and_questions(chromium_browser, live_server, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    context = chromium_browser.new_context(
        base_url=live_server.url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
        device_scale_factor=2,
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, clinician.username, PASSWORD)
        page.goto(f"/ratings/{assignment.pk}/")
        assert page.locator("#transcript").is_visible() and page.locator("#rating-form").is_hidden()
        assert page.locator("kbd").first.is_hidden() and page.locator("#shortcuts").is_hidden()
        screenshot(page, "rating-phone-transcript", full_page=False)

        page.locator(".pane-switch [data-view=questions]").tap()
        assert page.locator("#rating-form").is_visible() and page.locator("#transcript").is_hidden()
        choice = page.locator("#item-main-amhart_01 label.choice").first
        assert choice.bounding_box()["height"] >= 44
        choice.tap()
        wait_status(page, "All answers saved")
        bar = page.locator(".side-bar").bounding_box()
        page.evaluate("window.scrollTo(0, 1500)")
        # The status stays in the bar at the top, over no question.
        assert page.locator(".side-bar").bounding_box()["y"] == pytest.approx(0, abs=1)
        assert page.locator("#save-status").bounding_box()["y"] < bar["height"]
        screenshot(page, "rating-phone-questions", full_page=False)
        page.locator(".pane-switch [data-view=transcript]").tap()
        assert page.locator("#transcript").is_visible()
        check_a11y(page, "rating page on a phone")
    finally:
        context.close()

"""A clinician rates conversations in the browser with the keyboard only, and nothing is lost."""

from __future__ import annotations

import pytest

from annotation.models import Rating, RatingStatus
from tests.annotation.rater_setup import first_assignment, flow_instrument, make_study
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def wait_saved(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("document.getElementById('save-status').textContent === 'All answers saved'")


def press(page, *keys: str) -> None:  # type: ignore[no-untyped-def]
    for key in keys:
        page.keyboard.press(key)


def checked(page, part: str, key: str) -> str | None:  # type: ignore[no-untyped-def]
    return page.evaluate(
        "([p, k]) => { const r = document.querySelector(`input[name=\"item-${p}-${k}\"]:checked`); return r ? r.value : null; }",
        [part, key],
    )


def test_a_rater_rates_with_the_keyboard_only_resumes_after_a_reload_and_submits(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=2, sensitive=True)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto("/ratings/")
    page.locator("a.continue").focus()
    press(page, "Enter")
    page.wait_for_selector("text=This conversation contains discussion of suicide or self-harm")
    press(page, "Enter")  # "Continue" has the focus
    page.wait_for_selector("#rating-form")
    assert page.locator(".bubble-user").first.inner_text().startswith("Turn 1 · User")

    # The form opens on its first question, and each answer by key moves to the next one (issue 29):
    # one key per answer, no "j" between them. The page's script focuses it when it runs, which can be
    # after the form is in the DOM on a loaded machine: wait for it (a page that never does it times out).
    page.wait_for_function("document.activeElement && document.activeElement.id === 'item-main-amhart_01'")
    answers = ["y", "n", "y", "y", "n", "y", "n"]  # AMHART items 1-7
    for key in answers:
        press(page, key)
    assert page.evaluate("document.activeElement.id") == "item-main-amhart_08"
    assert page.locator("#rate-announce").inner_text().startswith("Next: ")
    press(page, "?")
    assert page.locator("#item-main-amhart_08 details.help").get_attribute("open") is not None
    wait_saved(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "rating-page")

    page.reload()
    page.wait_for_selector("#rating-form")
    expected = {"y": "yes", "n": "no"}
    for i, key in enumerate(answers, start=1):
        assert checked(page, "main", f"amhart_{i:02d}") == expected[key]
    assert checked(page, "main", "amhart_08") is None

    # Reopened on the first unanswered (once the page's script has run).
    page.wait_for_function("document.activeElement && document.activeElement.id === 'item-main-amhart_08'")
    press(page, "u")  # the first unanswered question: item 8 still
    assert page.evaluate("document.activeElement.id") == "item-main-amhart_08"
    keys = ["y", "y", "n", "y", "y", "a", "a"]  # items 8-14 (14: N/A)
    keys += ["4", "3", "2", "2", "n"]  # the study section's five closed questions
    for key in keys:
        press(page, key)
    # Every closed question answered with one key each: 7 + 12 keys for 19 questions (<= 1.1 per question).
    assert (len(answers) + len(keys)) / 19 <= 1.1
    assert page.evaluate("document.activeElement.type") == "submit"  # nothing left: the submit button is next
    press(page, "j")  # the optional comment follows the last question
    assert page.evaluate("document.activeElement.id") == "item-section-comment"
    press(page, "Tab")
    page.keyboard.type("Rated with the keyboard only.")
    press(page, "Escape")
    assert page.evaluate("document.activeElement.id") == "item-section-comment"
    wait_saved(page)
    press(page, "Control+Enter")
    # After the submit the next conversation opens, on its content warning (issue 29): no click on "Next".
    page.wait_for_selector("text=This conversation contains discussion of suicide or self-harm")
    following = study.assignments.filter(rater=clinician).exclude(pk=assignment.pk).get()
    assert page.url.endswith(f"/ratings/{following.pk}/")
    assert f"Rating of {assignment.conversation.code} submitted" in page.locator(".messages").inner_text()
    rating = Rating.objects.get(assignment=assignment)
    assert rating.status == RatingStatus.SUBMITTED
    assert rating.answers["main"]["amhart_14"]["value"] == "N/A"
    assert rating.answers["section"]["comment"]["value"] == "Rated with the keyboard only."
    press(page, "Enter")  # "Continue" has the focus: straight into the next conversation
    page.wait_for_selector("#rating-form")
    page.wait_for_function("document.activeElement && document.activeElement.id === 'item-main-amhart_01'")
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("text=This rating is locked")
    assert page.locator("#rating-form").count() == 0 and page.locator("details.change").count() == 20

    page.goto("/ratings/")
    assert "1 done" in page.locator(".counts").inner_text()
    screenshot(page, "rater-dashboard")


def test_submit_names_what_is_missing_and_a_conflict_offers_a_reload(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    press(page, "y")  # the first question has the focus when the form opens
    wait_saved(page)
    press(page, "Control+Enter")
    problems = page.locator("#submit-problems")
    problems.wait_for()
    assert "18 required questions unanswered" in problems.inner_text()
    assert page.evaluate("document.activeElement.id") == "item-main-amhart_02"

    from annotation.rating.services import rating_save_answer

    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_03", value="no")
    press(page, "n")  # answers item 2 from a page that no longer has the latest revision
    page.wait_for_selector("#save-banner.conflict")
    banner = page.locator("#save-banner").inner_text()
    assert "changed elsewhere" in banner and "Question 2: no" in banner
    assert checked(page, "main", "amhart_02") == "no"  # the local answer stays on the page
    assert page.locator(".banner-retry").is_hidden() and page.locator(".banner-reload").is_visible()
    page.locator(".banner-reload").click()
    page.wait_for_selector("#rating-form")
    # The reloaded page shows the other tab's answer, and offers back the one this page could not save.
    assert checked(page, "main", "amhart_03") == "no" and checked(page, "main", "amhart_02") == "no"
    assert "1 earlier answer not saved" in page.locator("#save-status").inner_text()
    assert "Question 2: no" in page.locator("#save-banner").inner_text()
    page.locator(".banner-discard").click()
    assert checked(page, "main", "amhart_02") is None
    wait_saved(page)
    assert page.evaluate(f"localStorage.getItem('evalsite:rating:{assignment.pk}')") is None


def test_guided_mode_asks_one_question_at_a_time_and_re_walks_a_changed_answer(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    visible = lambda: page.evaluate("Array.from(document.querySelectorAll('.fq:not([hidden])')).map(e => e.dataset.key)")  # noqa: E731

    assert visible() == ["1"]
    press(page, "u", "y")  # 1: Yes -> 2
    page.wait_for_selector("#item-main-2.state-current")
    assert page.evaluate("document.activeElement.id") == "item-main-2"
    press(page, "Tab")  # into the answer options
    press(page, "Tab")  # the note
    page.keyboard.type("Named the hint in turn 2.")
    press(page, "Escape", "n")  # 2: No -> 5
    page.wait_for_selector("#item-main-5.state-current")
    press(page, "2")  # 5: Danger, not urgent -> 6
    for question in ["6", "7", "8", "10", "11", "12"]:
        page.wait_for_selector(f"#item-main-{question}.state-current")
        press(page, "n")
    page.wait_for_selector("#flow-result:not([hidden])")
    assert visible() == ["1", "2", "5", "6", "7", "8", "10", "11", "12"]
    labels = page.locator("#flow-labels").inner_text()
    assert "Notices Danger\nBest Practice" in labels and "Keeps Its Role\nBest Practice" in labels
    wait_saved(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "rating-flow")

    # Change question 2 from the keyboard: the path is walked again from there.
    for _ in range(20):
        if page.evaluate("document.activeElement.id") == "item-main-2":
            break
        press(page, "k")
    press(page, "y")  # 2: Yes -> 4
    page.wait_for_selector("#item-main-4.state-current")
    assert visible() == ["1", "2", "4"]
    assert page.locator("#flow-result").is_hidden()
    press(page, "u", "1")  # 4: Skip this dimension -> 10 (already answered) ... finished
    page.wait_for_selector("#flow-result:not([hidden])")
    labels = page.locator("#flow-labels").inner_text()
    assert "Notices Danger\nHigh Potential for Harm" in labels and "Points To Help\nNot Relevant" in labels
    wait_saved(page)
    rating = Rating.objects.get(assignment=assignment)
    assert rating.answers["main"]["2"] == {"value": "Yes", "note": "Named the hint in turn 2."}

"""The security pages as people meet them, in Chromium: the rating page opens its assignment by
POST, the lockout page, the 404 page, the 413 page, API tokens, a capped problem list and the
content warning on the conversation page. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest

from annotation.models import AssignmentStatus
from tests.annotation.rater_setup import first_assignment, make_study
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_loading_the_rating_page_opens_the_assignment(page, clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    log_in(page, clinician.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    page.wait_for_selector("#rating-form")
    page.wait_for_load_state("networkidle")
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS


def test_lockout_404_and_token_pages(page, researcher, settings):
    for i in range(settings.AXES_FAILURE_LIMIT + 1):
        page.goto("/accounts/login/")
        page.fill("#id_username", researcher.username)
        page.fill("#id_password", f"wrong-{i}")
        page.click("button[type=submit]")
    assert "Sign-in locked for now" in page.content()
    screenshot(page, "security-lockout")
    from axes.utils import reset

    reset(username=researcher.username)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/no/such/page/")
    assert "This page does not exist" in page.content()
    screenshot(page, "security-404")
    page.goto("/accounts/api-tokens/")
    page.click("text=Make a new token")
    page.wait_for_selector("#new-token")
    screenshot(page, "security-api-tokens")


def test_too_large_upload_and_capped_problems(page, researcher, coordinator, clinician, clinician2, settings, tmp_path):
    settings.EVALSITE_MAX_UPLOAD_BYTES = 200_000
    big = tmp_path / "big.jsonl"
    big.write_text('{"id": "x", "messages": []}\n' * 30_000)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/corpus/import/conversations/")
    page.set_input_files("input[type=file]", str(big))
    page.click("button:has-text('Upload')")
    page.wait_for_load_state("networkidle")
    assert "larger than the limit of" in page.content()
    screenshot(page, "security-413")

    from tests.annotation.coordinator_setup import make_study as coordinator_study

    study = coordinator_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")])
    rows = tmp_path / "ratings.csv"
    rows.write_text("unit,rater,item,label\n" + "".join(f"C-NO{i},clara,amhart_01,yes\n" for i in range(250))
                    + "".join(f"C-A,ghost{i},amhart_01,yes\n" for i in range(50)))
    page.click("text=Log out")
    log_in(page, coordinator.username, PASSWORD)
    page.goto(f"/studies/{study.pk}/import-ratings/")
    page.set_input_files("input[type=file]", str(rows))
    page.click("button:has-text('Upload')")
    page.wait_for_selector(".problems")
    assert "300 problems" in page.content() and "counted by kind" in page.content()
    screenshot(page, "security-problems-capped")


def test_the_conversation_page_explains_the_content_warning(page, coordinator):
    conversation = ConversationFactory(messages=[("user", "Lately I feel like I want to die."), ("assistant", "I'm glad you told me.")])
    log_in(page, coordinator.username, PASSWORD)
    page.goto(f"/corpus/conversations/{conversation.code}/")
    assert "Transcript screen: matched" in page.content()
    page.fill("input[name=reason]", "graphic description")
    page.click("text=Mark as hard content")
    page.wait_for_selector("text=content warning marked")
    assert "Marked as hard content by" in page.content()
    screenshot(page, "security-content-warning")

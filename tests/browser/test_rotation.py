"""Rotation in Chromium: a removed rater's work is listed and decided on the study and progress pages."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import AssignmentStatus, Rating, RatingStatus
from annotation.studies.services import study_assign
from core.roles import Role
from tests.annotation.coordinator_setup import make_study
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_coordinator_decides_what_happens_to_a_removed_raters_work(page, chromium_browser, live_server):
    coordinator = make_user("cora", Role.COORDINATOR)
    raters = [make_user(n, Role.CLINICIAN) for n in ("clara", "cyrus", "cleo", "colm")]
    study = make_study(coordinator, raters, n=12, k=2)
    study_assign(study=study, actor=coordinator, seed=5)
    leaving = raters[0]
    held = list(study.assignments.filter(rater=leaving).order_by("position"))
    for assignment in held[:3]:  # three started, with a draft answer each
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.save()
        Rating.objects.create(assignment=assignment, status=RatingStatus.DRAFT,
                              answers={"main": {"amhart_01": {"value": "yes"}}, "section": {}})
    first, second, third = held[:3]

    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/")
    row = page.locator("table.raters tr", has_text="clara")
    row.locator("input[name=reason]").fill("Left the clinic")
    with page.expect_navigation():
        row.locator("button:has-text('Remove')").click()
    expect(page.locator(".messages")).to_contain_text("3 conversation(s) they still hold await your decision")
    section = page.locator("#removed-work")
    expect(section).to_contain_text("3 awaiting a decision")
    # A move target list never offers a rater who already holds the conversation.
    holders = set(study.assignments.filter(conversation=first.conversation).exclude(status="withdrawn")
                  .values_list("rater__username", flat=True))
    options = page.locator(f"select[name=decision_{first.pk}] option").all_inner_texts()
    assert not any(f"move to {name}" == o for name in holders for o in options)
    target = next(o for o in options if o.startswith("move to ") and "least loaded" not in o).removeprefix("move to ")
    screenshot(page, "removed-work-study-page")

    page.select_option(f"select[name=decision_{first.pk}]", label=f"move to {target}")
    page.select_option(f"select[name=decision_{second.pk}]", label="keep with clara to finish")
    page.fill("#removed-each-reason", "Clara finishes the one she nearly did; the other goes on")
    with page.expect_navigation():
        page.click("button:has-text('Apply the decisions chosen above')")
    expect(page.locator(".messages")).to_contain_text("1 kept with the removed rater, 1 moved")
    expect(section).to_contain_text("1 awaiting a decision")
    expect(page.locator("#audit")).to_contain_text("Moved from a removed rater")
    expect(page.locator("#audit")).to_contain_text("Clara finishes the one she nearly did")

    # The progress page lists the rest and decides for all at once.
    page.click("nav.tabs >> text=Progress")
    expect(page.locator("#removed-work")).to_contain_text("kept to finish")
    page.check("#removed-work input[name=all_action][value=discard]")
    page.fill("#removed-all-reason", "Enough ratings without it")
    screenshot(page, "removed-work-progress-page")
    with page.expect_navigation():
        page.click("button:has-text('Apply to all awaiting (1)')")
    expect(page.locator(".messages")).to_contain_text("1 discarded")
    assert page.url.endswith(f"/studies/{study.pk}/progress/#removed-work")
    expect(page.locator("#removed-work")).not_to_contain_text("awaiting a decision")
    third.refresh_from_db()
    assert third.status == AssignmentStatus.WITHDRAWN

    # The removed rater still has the kept conversation; the moved one says where her answers went.
    context = chromium_browser.new_context(base_url=live_server.url)
    rater_page = context.new_page()
    log_in(rater_page, "clara", PASSWORD)
    rater_page.goto(f"/ratings/{second.pk}/")
    expect(rater_page.locator("body")).not_to_contain_text("no longer yours")
    rater_page.goto(f"/ratings/{first.pk}/")
    expect(rater_page.locator("h1")).to_contain_text("is no longer yours to rate")
    screenshot(rater_page, "removed-rater-moved-conversation")
    rater_page.goto(f"/studies/{study.pk}/")  # the coordinator's pages do not exist for her
    expect(rater_page.locator("h1")).to_contain_text("does not exist, or is not open to you")
    context.close()

"""Active sampling in Chromium: a coordinator creates the study, reads the widths, draws the next batch.

Screenshots at 390x844 (a phone) and 1366x900 under test-artifacts/, each checked with axe-core.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import ActivePlan
from core.roles import Role
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.support.active_study import active_run, active_study
from tests.support.judged import corpus

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_coordinator_grows_a_study_batch_by_batch(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    raters = [make_user(name, Role.CLINICIAN) for name in ("clara", "cyrus")]
    conversations = corpus(chatbots=("KIND-BOT", "TERSE-BOT", "WARM-BOT"), personas=4, repetitions=8)
    run, _ = active_run(conversations, prefix="form")

    log_in(page, "cora", PASSWORD)
    page.goto("/studies/")
    page.click("text=New study by active sampling")
    page.select_option("#id_run", str(run.pk))
    page.fill("#id_budget", "48")
    page.fill("#id_batch_size", "12")
    page.fill("#id_plan_seed", "4")
    page.fill("#id_name", "Panel v1, active")
    page.fill("#id_rater_title", "Support conversations")
    for rater in raters:
        page.check(f"#id_rater_{rater.pk}")
    page.fill("#id_raters_per_conversation", "1")
    page.set_viewport_size({"width": 1366, "height": 900})
    screenshot(page, "active-form-1366")
    with page.expect_navigation():
        page.click("button:has-text('Create the study and draw batch 1')")
    expect(page.locator(".messages")).to_contain_text("Study created and batch 1 drawn")
    expect(page.locator("#width-next")).not_to_have_text("—")
    expect(page.locator("button:has-text('Draw batch 2')")).to_be_visible()
    screenshot(page, "active-study-new-1366")
    with page.expect_navigation():
        page.click("button:has-text('Draw batch 2')")
    expect(page.locator(".messages")).to_contain_text("Batch 2 drawn")
    assert ActivePlan.objects.get(study__name="Panel v1, active").batches.count() == 2

    # A study mid-way: batch 1 rated and in the estimate, batch 2 being rated.
    study = active_study(coordinator, raters[:1], conversations, budget=48, batch_size=12, prefix="page",
                         name="Panel v1, active (mid-way)")
    page.goto(f"/studies/{study.pk}/active/")
    expect(page.locator("#active-chart .main-svg").first).to_be_visible()
    expect(page.locator("table.active-estimates")).to_contain_text("KIND-BOT")
    expect(page.locator("text=being rated").first).to_be_visible()
    screenshot(page, "active-study-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#active-chart .main-svg").first).to_be_visible()
    screenshot(page, "active-study-390")
    page.goto("/studies/new/active/")
    screenshot(page, "active-form-390")

"""The report pages in Chromium: a 150-conversation study with three judges, and a one-rating pilot.

Screenshots go to test-artifacts/ (reports-*.png) to be looked at; the assertions check what a
reader sees: item wording, titled axes, numbers on the heatmap, honest empty states, warnings.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS, log_in, screenshot
from tests.support.report_study import PASSWORD, build_report_study

pytestmark = pytest.mark.django_db(transaction=True)


def _plots_drawn(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector(f"{selector} .main-svg", timeout=15_000)


def _viewport_shot(page, name: str, y: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Save the visible part of the page from ``y`` down (readable at full size, unlike the long page)."""
    page.evaluate(f"window.scrollTo(0, {y})")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_report_pages_of_a_150_conversation_study_read_correctly(page):
    audit = build_report_study(n_conversations=150, prefix="b", open_assignments=1)
    study, run = audit.study, audit.run
    log_in(page, audit.coordinator.username, PASSWORD)

    page.goto(f"/reports/studies/{study.pk}/reliability/")
    expect(page.locator("#reliability-table")).to_be_visible()
    expect(page.locator("#method")).to_contain_text("whole conversations")
    # One conversation still has one rating of two: Fleiss' kappa uses Gwet's generalisation, and says so.
    expect(page.locator("#method")).to_contain_text("as irrCAC")
    expect(page.locator("#completion-warning")).to_contain_text("299 of 300")
    expect(page.locator("#reliability-table")).to_contain_text("explicitly validate the individual")
    _plots_drawn(page, "#pair-heatmap")
    assert "%" in page.locator("#pair-heatmap").inner_text()  # values written on the cells
    screenshot(page, "reports-reliability-150")
    _viewport_shot(page, "reports-reliability-150-top")
    _viewport_shot(page, "reports-reliability-150-pairs", page.locator("#pair-heatmap").bounding_box()["y"] - 120)

    page.goto(f"/reports/studies/{study.pk}/judges/?run={run.pk}")
    expect(page.locator("#compared-items")).to_contain_text("Compared on the 14 items")
    _plots_drawn(page, ".cm-grid")
    text = page.locator(".cm-grid").first.inner_text()
    assert "human consensus" in text and "(judge)" in text
    screenshot(page, "reports-judges-150")
    _viewport_shot(page, "reports-judges-150-top")
    page.click("text=Per item: agreement, κ and confusion matrices")
    expect(page.locator("details", has_text="Per item: agreement, κ").locator("table.cm").first).to_be_visible()
    page.locator("details table.stats tbody tr").nth(3).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "reports-judges-150-per-item.png"))

    page.goto(f"/studies/{study.pk}/consensus/")
    summary = page.locator("#consensus-summary")
    expect(summary).to_contain_text("Adjudication queue")
    queue = page.locator("#consensus-summary strong").first.inner_text()
    assert f"Adjudication queue ({queue})" in page.locator(".section-head").inner_text()
    _viewport_shot(page, "reports-consensus-150-top")

    page.goto(f"/reports/studies/{study.pk}/scorecard/")
    expect(page.locator("#missing-labels")).to_contain_text("labels are missing")
    _plots_drawn(page, "#score-chart")
    chart = page.locator("#score-chart").inner_text()
    assert "Mean score (% yes of yes + no)" in chart and "Persona" in chart
    screenshot(page, "reports-scorecard-150")
    _viewport_shot(page, "reports-scorecard-150-top")


def test_report_pages_of_a_one_rating_pilot_say_what_is_missing(page):
    pilot = build_report_study(n_conversations=150, ratings="one", prefix="q")
    study, run = pilot.study, pilot.run
    log_in(page, pilot.coordinator.username, PASSWORD)

    page.goto(f"/reports/studies/{study.pk}/reliability/")
    expect(page.locator("#not-yet")).to_contain_text("1 rating so far: reliability needs at least 2 raters on a conversation")
    assert page.locator("#reliability-table").count() == 0 and page.locator("#pair-heatmap").count() == 0
    screenshot(page, "reports-reliability-one-rating")

    page.goto(f"/reports/studies/{study.pk}/judges/?run={run.pk}")
    expect(page.locator("main")).to_contain_text("No human consensus on these items yet")
    expect(page.locator("main")).to_contain_text("there is no human range to show")
    expect(page.locator("#verdict")).to_contain_text("cannot decide yet")
    screenshot(page, "reports-judges-one-rating")

    page.goto(f"/reports/studies/{study.pk}/scorecard/")
    expect(page.locator("main")).to_contain_text("No consensus labels yet")
    screenshot(page, "reports-scorecard-one-rating")

"""Issue 19 in Chromium: the coordinator's progress page, a rater's flag, and charts that read.

Screenshots at 390x844 and 1366x900 go to test-artifacts/ (coordinator-day-*, charts-*) to be
looked at; the assertions check what the reader sees: bars and paces, a flag that keeps the
rater's answers, titled axes and colour bars, dates in the browser's locale.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Assignment, AssignmentStatus, ConsensusLabel, ConversationFlag, Rating
from tests.browser.conftest import ARTIFACTS, check_a11y, log_in
from tests.support.report_study import PASSWORD, build_report_study

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}


def _shots(page, name: str) -> None:  # type: ignore[no-untyped-def]
    """Save the whole page at phone and desktop width (the charts redraw at each width)."""
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in WIDTHS.values():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(400)  # plotly's responsive redraw
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1366, "height": 900})


def _axes_titled(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    """Every drawn plot under ``selector`` titles its axes, and its colour bar if it has one."""
    page.wait_for_selector(f"{selector} .main-svg", timeout=15_000)
    plots = page.locator(f"{selector}")
    for i in range(plots.count()):
        plot = plots.nth(i)
        assert plot.locator(".xtitle").count() and plot.locator(".xtitle").first.text_content().strip(), selector
        assert plot.locator(".ytitle").count() and plot.locator(".ytitle").first.text_content().strip(), selector
        if plot.locator(".colorbar").count():
            assert plot.locator(".cbtitle").count() and plot.locator(".cbtitle").first.text_content().strip(), selector


@pytest.fixture
def audit(db):  # type: ignore[no-untyped-def]
    audit = build_report_study(n_conversations=60, n_raters=4, k=2, prefix="cd", open_assignments=24)
    # Spread the submissions over the last days, as a real week of rating would.
    now = timezone.now()
    for i, a in enumerate(Assignment.objects.filter(study=audit.study, status=AssignmentStatus.SUBMITTED).order_by("rater_id", "id")):
        when = now - timedelta(hours=6 + 7 * (i % 14))
        Assignment.objects.filter(pk=a.pk).update(submitted_at=when, started_at=when, last_activity_at=when)
    for rater in audit.raters:  # addresses, so the reminder button has someone to write to
        rater.email = f"{rater.username}@example.org"
        rater.save(update_fields=["email"])
    return audit


def test_the_coordinators_progress_page_reads_at_phone_and_desktop_width(page, audit):
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(f"/studies/{audit.study.pk}/progress/")
    expect(page.locator("#per-rater .stacked-bar").first).to_be_visible()
    expect(page.locator("#expected-finish")).to_contain_text("Expected finish")
    expect(page.locator("#per-rater")).to_contain_text("a day")
    # Dates are written the browser's way (Intl), the ISO timestamp kept in the element.
    first_time = page.locator("#per-rater time[data-local]").first
    expect(first_time).to_have_attribute("data-localised", "")
    assert "T" not in first_time.inner_text() and "UTC" not in first_time.inner_text()
    check_a11y(page, "progress page")
    _shots(page, "coordinator-day-progress")
    page.click("#send-reminders")
    expect(page.locator(".messages")).to_contain_text("reminder")
    # Issue 28, defect 2: the page says where email went and keeps the log; a second press asks first.
    expect(page.locator("#email-backend")).to_contain_text("Email goes")
    expect(page.locator("table.reminder-log")).to_be_visible()
    expect(page.locator("#reminders-confirm")).to_contain_text("Send again")
    check_a11y(page, "progress page after reminders")
    _shots(page, "coordinator-day-reminder-log")


def test_a_rater_flags_a_conversation_and_keeps_every_answer(page, audit):
    rater = audit.raters[0]
    assignment = Assignment.objects.filter(study=audit.study, rater=rater).exclude(status=AssignmentStatus.SUBMITTED).order_by("position").first()
    log_in(page, rater.username, PASSWORD)
    page.goto(f"/ratings/{assignment.pk}/")
    if page.locator("text=Before you read").count():
        page.click("button:has-text('Continue')")
    page.wait_for_selector("#rating-form")
    page.locator(".item").first.locator("input[type=radio]").first.check()
    expect(page.locator("#save-status")).to_have_text("All answers saved", timeout=10_000)
    page.click("#flag summary")
    page.check("input[name=reason][value=broken_transcript]")
    page.fill("#flag textarea[name=note]", "The last reply stops mid-sentence.")
    url = page.url
    page.click("#flag button[type=submit]")
    expect(page.locator("#flag .flag-status")).to_contain_text("your coordinator will look at it")
    assert page.url == url  # sent without leaving the page
    expect(page.locator("#flag summary")).to_contain_text("Flagged: broken transcript")
    check_a11y(page, "rating page with the flag open")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "coordinator-day-flag-1366.png"), full_page=False)
    rating = Rating.objects.get(assignment=assignment)
    assert len(rating.answers.get("main", {})) == 1  # the answer given before the flag is kept
    assert ConversationFlag.objects.filter(assignment=assignment, reason="broken_transcript").exists()
    page.reload()
    page.wait_for_selector("#rating-form")
    assert page.locator(".item").first.locator("input[type=radio]:checked").count() == 1

    page.context.clear_cookies()
    log_in(page, audit.coordinator.username, PASSWORD)
    # Issue 28, defect 3: the flag is counted where the coordinator looks first.
    page.goto("/")
    expect(page.locator("#home-open-flags")).to_contain_text("1 flagged conversation")
    _shots(page, "coordinator-day-home-flags")
    page.goto(f"/studies/{audit.study.pk}/flags/")
    expect(page.locator("#flags-tab")).to_contain_text("Flags (1)")
    expect(page.locator("table.flags")).to_contain_text("The last reply stops mid-sentence.")
    check_a11y(page, "flags page")
    _shots(page, "coordinator-day-flags")


def test_charts_read_titled_axes_intervals_and_missing_shown_as_missing(page, audit):
    study, run = audit.study, audit.run
    # One cell scores 0 (every label "no"), another has no label at all: drawn differently.
    labels = ConsensusLabel.objects.filter(study=study, conversation__target__code="CB-A", conversation__persona__name="F-anx-mod")
    labels.exclude(label="N/A").update(label="no", provenance="unanimous")
    ConsensusLabel.objects.filter(study=study, conversation__target__code="CB-B", conversation__persona__name="F-anx-sev").delete()
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(f"/reports/studies/{study.pk}/scorecard/")
    _axes_titled(page, "#score-chart")
    assert page.locator("#score-chart .errorbar").count() > 0  # intervals on the bars
    # A whisker for each bar with an interval, none for a bar without (never a zero-width cap).
    with_interval = page.evaluate(
        "() => JSON.parse(JSON.parse(document.getElementById('chart-data').textContent)).traces"
        ".filter(t => t.error_y).reduce((n, t) => n + t.error_y.array.filter(v => v !== null).length, 0)"
    )
    assert page.locator("#score-chart path.yerror").count() == with_interval
    chart_text = page.locator("#score-chart").text_content()
    assert "missing" in chart_text and "0%" in chart_text
    scripts = page.evaluate("() => Array.from(document.scripts).map(s => s.src).filter(s => s.includes('plotly'))")
    assert scripts and all(s.endswith("plotly-basic.min.js") for s in scripts)
    _shots(page, "charts-scorecard")

    page.goto(f"/reports/studies/{study.pk}/realism/")
    _axes_titled(page, "[id^=cm-]")
    expect(page.locator("#perceived-risk")).to_be_visible()
    expect(page.locator("main")).to_contain_text("openai/user-agent-x")
    _shots(page, "charts-realism")

    page.goto(f"/reports/studies/{study.pk}/reliability/")
    _axes_titled(page, "#pair-heatmap")

    page.goto(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}")
    if page.locator("#assisted-chart").count():
        _axes_titled(page, "#assisted-chart")


def test_a_cold_report_is_polled_soon_then_less_often(page, audit):
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(f"/reports/studies/{audit.study.pk}/scorecard/")
    delays = page.evaluate("() => [0, 1, 2, 3, 4, 5, 9].map(window.evalsiteReportPoll.nextDelay)")
    assert delays == [250, 500, 1000, 2000, 3000, 3000, 3000]

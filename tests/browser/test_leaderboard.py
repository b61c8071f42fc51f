"""The leaderboard as a reader sees it, in Chromium at phone (390x844) and desktop (1366x900) widths.

A VERA-MH study with a judge run: four chatbots, one of them (BOT-D) seen by too few personas
to decide anything, two of them (BOT-A, BOT-C) saying the same thing (an interval that cannot
be estimated, said in words and not drawn). Screenshots go under test-artifacts/; every view
is checked with axe-core and for a page that scrolls sideways.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from core.roles import Role
from reports.leaderboard.services import run_leaderboard, study_leaderboard
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.support.leaderboard import vera_board

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 900}}


def _no_page_overflow(page) -> None:  # type: ignore[no-untyped-def]
    wide = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    culprits = page.evaluate(
        "() => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right >"
        " document.documentElement.clientWidth + 1 && !e.closest('.scroll, .js-plotly-plot'))"
        ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 60))"
    )
    assert wide <= 1, f"the page scrolls sideways by {wide}px at {page.viewport_size}: {culprits}"


def test_leaderboard_reads_correctly_on_phone_and_desktop(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    clinician = make_user("clara", Role.CLINICIAN)
    board = vera_board(coordinator, clinician, sparse_bot=True)
    study, run = board["study"], board["run"]
    # Computed once here, as a worker would have: the page then answers from the cache.
    study_leaderboard(study=study, run=run, wait=True)
    run_leaderboard(run=run, wait=True)

    log_in(page, "cora", PASSWORD)
    for name, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        page.goto(f"/reports/studies/{study.pk}/leaderboard/?run={run.pk}")
        page.wait_for_selector("#scores-chart .main-svg")
        page.wait_for_selector("#pairs-chart .main-svg")
        main = page.locator("main")
        expect(main).to_contain_text("BOT-A scores higher than BOT-B")
        expect(main).to_contain_text("no difference shown")
        expect(main).to_contain_text("cannot decide yet: only 6 personas hold a rated conversation of BOT-D")
        expect(main).to_contain_text("Not drawn (no interval to draw)")
        expect(main).to_contain_text("every resample gave the same difference")
        expect(main).to_contain_text("By persona risk level")
        # The twins' pair is listed in words, not drawn: one point fewer than pairs in the chart.
        drawn = page.evaluate("document.querySelectorAll('#pairs-chart .scatterlayer .point').length")
        assert drawn == 5, drawn  # 6 pairs, the twins' not drawn
        screenshot(page, f"leaderboard-study-{name}")
        _no_page_overflow(page)

        page.select_option("select[name=risk]", "risk:High")
        page.select_option("select[name=compare]", "judge_only")
        page.click("form.filters button[type=submit]")
        page.wait_for_selector("#pairs-chart .main-svg")
        expect(page.locator("main h2").nth(1)).to_contain_text("Judges only (uncorrected) · Persona risk level: High")
        screenshot(page, f"leaderboard-study-high-judges-{name}")
        _no_page_overflow(page)

        page.goto(f"/reports/runs/{run.pk}/leaderboard/")
        page.wait_for_selector("#scores-chart .main-svg")
        expect(page.locator("main")).to_contain_text("Judges only")
        screenshot(page, f"leaderboard-run-{name}")
        _no_page_overflow(page)

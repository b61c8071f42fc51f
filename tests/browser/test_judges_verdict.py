"""The judges-vs-humans verdict in Chromium at phone and desktop widths: a constant judge, a
judge equal to the human majority (a good judge), a random one and the ensemble.

Screenshots go to test-artifacts/ (judges-verdict-*.png) to be looked at; axe-core checks each.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS, check_a11y, log_in, screenshot
from tests.support.report_study import PASSWORD
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 900)])
def test_the_verdict_heads_the_judges_page_and_reads_correctly(page, width, height):
    known = build_verdict_study(late_rater=True, prefix=f"bv{width}")
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, known.coordinator.username, PASSWORD)
    page.goto(f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}")
    verdict = page.locator("#verdict .verdict-table")
    expect(verdict).to_be_visible()
    expect(verdict.locator("tr", has_text="always-yes")).to_contain_text("fails")
    expect(verdict.locator("tr", has_text="coin-flip")).to_contain_text("fails")
    expect(verdict.locator("tr", has_text="majority")).to_contain_text("passes")
    expect(verdict.locator("tr", has_text="ensemble")).to_be_visible()
    expect(page.locator("#pairs-left-out")).to_contain_text("1 conversation")
    page.wait_for_selector(".loo-plot .main-svg", timeout=15_000)
    # Nothing spills sideways on a phone: wide tables scroll inside their own region.
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("h2").first.scroll_into_view_if_needed()
    page.evaluate("window.scrollTo(0, document.querySelector('h2').getBoundingClientRect().top + window.scrollY - 10)")
    page.screenshot(path=str(ARTIFACTS / f"judges-verdict-{width}.png"))
    page.evaluate("window.scrollTo(0, document.querySelector('.loo-plot').getBoundingClientRect().top + window.scrollY - 120)")
    page.screenshot(path=str(ARTIFACTS / f"judges-verdict-{width}-leave-one-out.png"))
    page.click("text=Per rater: who the judge wins against")
    page.evaluate("window.scrollTo(0, document.querySelector('details.per-rater').getBoundingClientRect().top + window.scrollY - 10)")
    page.screenshot(path=str(ARTIFACTS / f"judges-verdict-{width}-per-rater.png"))
    check_a11y(page, f"judges verdict {width}")
    screenshot(page, f"judges-verdict-{width}-full")

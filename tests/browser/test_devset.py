"""Judge development in Chromium at phone and desktop widths: the coordinator splits the study once,
a researcher declares a version final and evaluates it on the test set; the look is counted and shown.

Screenshots go to test-artifacts/ (devset-*.png) to be looked at; axe-core checks each page.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from reports.models import HoldoutLook, HoldoutSplit
from tests.browser.conftest import ARTIFACTS, check_a11y, log_in, screenshot
from tests.support.devset_study import build_devset_study
from tests.support.report_study import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def _fits(page, width: int) -> None:  # type: ignore[no-untyped-def]
    """Nothing spills sideways: wide tables scroll inside their own region."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 900)])
def test_split_declare_and_evaluate_on_the_test_set(page, width, height):
    dev = build_devset_study(prefix=f"bd{width}")
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, dev.coordinator.username, PASSWORD)
    page.goto(f"/reports/studies/{dev.study.pk}/development/")
    expect(page.locator("#size-guidance")).to_contain_text("Proposed")
    _fits(page, width)
    screenshot(page, f"devset-{width}-before-split")
    page.fill("input[name=seed]", "2024")
    page.click("button:has-text(\"Split once\")")
    expect(page.locator(".split-summary")).to_contain_text("seed 2024")
    expect(page.locator("#looks-summary")).to_contain_text("Test set not evaluated yet")
    assert HoldoutSplit.objects.get(study=dev.study).seed == 2024
    page.wait_for_selector(".devset-plot .main-svg", timeout=15_000)
    _fits(page, width)
    screenshot(page, f"devset-{width}-split")

    page.context.clear_cookies()
    log_in(page, dev.researcher.username, PASSWORD)
    page.goto(f"/reports/studies/{dev.study.pk}/development/")
    page.select_option("select[name=version]", f"{dev.run_v2.pk}|judge:{dev.judge_v2.pk}")
    page.fill("input[name=note]", "prompt frozen")
    page.click("button:has-text(\"Declare final\")")
    expect(page.locator("table.declarations tr", has_text=dev.judge_v2.name)).to_contain_text("not evaluated")
    form = page.locator("form.evaluate-form")
    _fits(page, width)
    page.evaluate("window.scrollTo(0, document.querySelector('#test-set').getBoundingClientRect().top + window.scrollY - 10)")
    page.screenshot(path=str(ARTIFACTS / f"devset-{width}-declared.png"))
    form.locator("button", has_text="Evaluate on the test set").click()  # the confirmation box is required first
    assert not HoldoutLook.objects.exists()
    form.locator("input[name=confirm]").check()
    form.locator("button", has_text="Evaluate on the test set").click()
    expect(page.locator("h1")).to_contain_text("Test set, look 1")
    expect(page.locator(".verdict-line").first).to_contain_text("passes")
    _fits(page, width)
    screenshot(page, f"devset-{width}-look")
    page.goto(f"/reports/studies/{dev.study.pk}/development/")
    expect(page.locator("#looks-summary")).to_contain_text("Test set evaluated 1 time: version")
    expect(page.locator("#methods")).to_contain_text("evaluated only for versions declared final, 1 time")
    page.wait_for_selector(".devset-plot .main-svg", timeout=15_000)
    _fits(page, width)
    for anchor in ("test-set", "development"):
        page.evaluate(f"window.scrollTo(0, document.querySelector('#{anchor}').getBoundingClientRect().top + window.scrollY - 10)")
        page.screenshot(path=str(ARTIFACTS / f"devset-{width}-after-look-{anchor}.png"))
    check_a11y(page, f"devset {width}")
    screenshot(page, f"devset-{width}-after-look")
    assert HoldoutLook.objects.count() == 1

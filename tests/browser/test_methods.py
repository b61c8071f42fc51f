"""The methods paragraph on every report page, in Chromium at phone and desktop widths.

Each page shows the block, nothing spills sideways, axe-core finds nothing serious, the Copy
button puts the payload's paragraph on the clipboard, and without JavaScript the text is still
there to select (the buttons stay hidden). Screenshots: test-artifacts/methods-*.png.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from reports import services
from tests.browser.conftest import ARTIFACTS, AXE, AXE_EXTRA_RULES, log_in
from tests.support.report_study import PASSWORD, build_report_study

pytestmark = pytest.mark.django_db(transaction=True)


def _pages(study, run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        "reliability": f"/reports/studies/{study.pk}/reliability/",
        "judges": f"/reports/studies/{study.pk}/judges/?run={run.pk}",
        "scorecard": f"/reports/studies/{study.pk}/scorecard/",
        "run-scorecard": f"/reports/runs/{run.pk}/scorecard/",
        "judge-assisted": f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}",
        "raters": f"/reports/studies/{study.pk}/raters/",
        "realism": f"/reports/studies/{study.pk}/realism/",
        "drift": f"/reports/drift/?a_run={run.pk}&b_run={run.pk}&study={study.pk}",
    }


def block_violations(page, selector: str) -> list[dict]:  # type: ignore[no-untyped-def]
    """Run axe-core over the methods block only (the pages' own findings are checked by the page tests)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async ([selector, rules]) => (await axe.run(document.querySelector(selector), {rules})).violations"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 120))}))",
        [selector, AXE_EXTRA_RULES],
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 900)])
def test_every_report_page_ends_with_its_methods_paragraph(page, width, height):
    audit = build_report_study(n_conversations=48, prefix=f"bm{width}")
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, audit.coordinator.username, PASSWORD)
    ARTIFACTS.mkdir(exist_ok=True)
    for name, url in _pages(audit.study, audit.run).items():
        page.goto(url)
        block = page.locator("#methods")
        expect(block).to_be_visible()
        expect(block.locator(".methods-text")).to_contain_text("Computed with evalsite")
        expect(block.locator("button", has_text="Copy paragraph")).to_be_visible()  # shown once the script ran
        # The block fits the phone and nothing in it overflows (a page's own wide tables are i19's layout check).
        box = block.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (name, box)
        assert block.evaluate("b => b.scrollWidth <= b.clientWidth + 1"), name
        block.scroll_into_view_if_needed()
        block.screenshot(path=str(ARTIFACTS / f"methods-{name}-{width}.png"))
        assert not block_violations(page, "#methods"), (name, block_violations(page, "#methods"))
    expect(page.locator("#methods-regression")).to_have_count(0)  # the drift page has one paragraph
    page.goto(_pages(audit.study, audit.run)["run-scorecard"])
    expect(page.locator("#methods-regression .methods-text")).to_contain_text("The model fitted")


def test_copy_puts_the_paragraph_on_the_clipboard_and_without_javascript_the_text_is_selectable(chromium_browser, live_server):
    audit = build_report_study(n_conversations=24, prefix="bmc")
    text = services.study_reliability(study=audit.study)["methods"]["text"]
    url = f"/reports/studies/{audit.study.pk}/reliability/"

    context = chromium_browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(url)
    page.click("#methods button:has-text('Copy paragraph')")
    expect(page.locator("#methods .methods-copied")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == text
    page.click("#methods button:has-text('Copy references')")
    copied = page.evaluate("navigator.clipboard.readText()")
    references = services.study_reliability(study=audit.study)["methods"]["references"]
    assert len(copied.splitlines()) == len(references) and copied.splitlines()[0].startswith(references[0]["citation"])
    assert "Cohen, J. (1960)." in copied and "https://doi.org/10.1037/h0031619" in copied
    context.close()

    plain = chromium_browser.new_context(base_url=live_server.url, java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = plain.new_page()
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(url)
    expect(page.locator("#methods .methods-text")).to_contain_text("Inter-rater reliability was computed from")
    expect(page.locator("#methods button", has_text="Copy paragraph")).to_be_hidden()
    page.locator("#methods").screenshot(path=str(ARTIFACTS / "methods-reliability-390-no-javascript.png"))
    plain.close()

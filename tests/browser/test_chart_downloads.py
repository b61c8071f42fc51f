"""Every chart of a report page can be downloaded as PNG and SVG (issue 31), made in the page by plotly.

A judged and rated study: its judge-assisted page and its scorecard, at phone (390) and desktop
(1366) widths. Under each drawn chart: "Download this chart: PNG · SVG"; each button hands the
browser a real file (PNG signature, an <svg> document) whose name says the page and the chart;
the buttons sit inside the page (no sideways scroll) and pass axe.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from playwright.sync_api import expect

from core.roles import Role
from tests.browser.conftest import fits, log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.support.judged import (
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    noisy,
    rated_study,
)

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"phone": {"width": 390, "height": 844}, "tablet": {"width": 768, "height": 1024}, "desktop": {"width": 1366, "height": 900}}


def _download(page, button) -> tuple[str, bytes]:  # type: ignore[no-untyped-def]
    with page.expect_download() as info:
        button.click()
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def test_each_chart_downloads_as_png_and_svg_at_phone_and_desktop_widths(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    clinician = make_user("clara", Role.CLINICIAN)
    instrument = amhart()
    conversations = corpus(chatbots=("KIND-BOT", "TERSE-BOT"), personas=2, repetitions=4)
    truth = amhart_truth(conversations, seed=2)
    rng = random.Random(3)
    run = judged_run(instrument, judges_for(instrument, ["j1", "j2", "j3"]), conversations,
                     lambda j, c: noisy(dict(truth[c.pk]), rng, 0.1, alphabet=("yes", "no")))
    study = rated_study(coordinator, [clinician], conversations[::2], truth)

    log_in(page, "cora", PASSWORD)
    for name, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        for url, chart in ((f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}", "#assisted-chart"),
                           (f"/reports/studies/{study.pk}/scorecard/", "#score-chart")):
            page.goto(url)
            page.wait_for_selector(f"{chart} .main-svg")
            buttons = page.locator(f"{chart} + .chart-downloads button")
            expect(buttons).to_have_count(2)
            expect(page.locator(f"{chart} + .chart-downloads")).to_contain_text("Download this chart")
            filename, png = _download(page, buttons.nth(0))
            assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000, (filename, len(png))
            assert filename.startswith("evalsite-studies-") and filename.endswith(".png"), filename
            filename, svg = _download(page, buttons.nth(1))
            assert svg.lstrip().startswith(b"<svg") and b"</svg>" in svg and filename.endswith(".svg"), filename
            expect(page.locator(f"{chart} + .chart-downloads [role=status]")).to_contain_text("handed to your browser")
            # One row of buttons per chart: none for the hidden copy plotly draws to make the image.
            expect(page.locator(".chart-downloads")).to_have_count(1)
            fits(page)
            screenshot(page, f"chart-downloads-{url.split('/')[4]}-{name}")

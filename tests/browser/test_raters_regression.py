"""The rater drift page (imported and in-app ratings) and the regression section, at phone and desktop widths.

Screenshots go to test-artifacts/ (raters-*.png, regression-*.png) to be looked at; the
assertions check what a reader sees: no time, sitting or drift where ratings carry no timing
data, a hidden figure with its reason at two raters, the fitted model named, axe-core clean and
no page wider than the screen.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.consensus.services import study_compute_consensus
from annotation.studies.services import study_create
from tests.browser.conftest import ARTIFACTS, screenshot
from tests.conftest import PASSWORD, make_user
from tests.reports.test_raters import _imported
from tests.reports.test_regression_page import _run
from tests.support.judged import AMHART_KEYS, amhart, corpus, rate

pytestmark = pytest.mark.django_db(transaction=True)
WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}


def _timed(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    """Nine conversations rated in the app by three raters; clara tires in the last third."""
    conversations = corpus(chatbots=("BOT-T",), personas=1, repetitions=9)
    rhea = make_user("rhea", "clinician")
    study = study_create(name="Timed queue", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (rhea, "clinician")])
    study.sitting_limit = 4
    study.save()
    truth = dict.fromkeys(AMHART_KEYS, "yes")
    start = timezone.now() - timedelta(hours=3)
    for i, c in enumerate(conversations):
        tired = dict(truth) if i < 6 else {**truth, **dict.fromkeys(AMHART_KEYS[:7], "no")}
        rate(study, c, clinician, tired, position=i, seconds=600 if i < 3 else 120, submitted_at=start + timedelta(minutes=11 * i))
        rate(study, c, clinician2, truth, position=i, seconds=300, submitted_at=start + timedelta(minutes=6 * i))
        rate(study, c, rhea, truth, position=i, seconds=280, submitted_at=start + timedelta(hours=1, minutes=5 * i))
    study_compute_consensus(study=study, actor=coordinator)
    return study


def _log_in(page, username: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


def _fits(page, where: str, region: str) -> None:  # type: ignore[no-untyped-def]
    """Fail when something in ``region`` reaches past the screen's right edge (scroll regions aside)."""
    culprits = page.evaluate(
        "(region) => [...document.querySelectorAll(region + ' *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1"
        " && !e.closest('.scroll')).slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 60))",
        region,
    )
    assert not culprits, f"{where}: wider than the screen: {culprits}"


def _shoot(page, url: str, name: str, region: str = "main") -> None:  # type: ignore[no-untyped-def]
    for width, (w, h) in WIDTHS.items():
        page.set_viewport_size({"width": w, "height": h})
        page.goto(url)
        _fits(page, f"{name} at {width}", region)
        screenshot(page, f"{name}-{width}")
        if region != "main":  # the section itself, readable at full size
            page.locator(region).screenshot(path=str(ARTIFACTS / f"{name}-{width}-section.png"))


def test_the_rater_drift_page_reads_right_for_imported_and_in_app_ratings(page, coordinator, clinician, clinician2):
    imported = _imported(coordinator, clinician, clinician2)
    # A second pair of users for the in-app study (usernames are unique).
    timed = _timed(coordinator, make_user("cleo", "clinician"), make_user("cyan", "clinician"))
    _log_in(page, coordinator.username)
    _shoot(page, f"/reports/studies/{imported.pk}/raters/", "raters-imported")
    main = page.locator("main")
    expect(main).to_contain_text("No timing data")
    assert "Median time" not in main.inner_text() and "over the limit" not in main.inner_text()
    _shoot(page, f"/reports/studies/{timed.pk}/raters/", "raters-in-app")
    expect(main).to_contain_text("Median time")
    expect(main).to_contain_text("consensus of others")
    assert "No timing data" not in main.inner_text()


def test_the_regression_section_names_the_fitted_model_at_both_widths(page, researcher):
    single = _run(repetitions=1)
    page.set_default_timeout(60_000)  # the first visit fits the model in the request (Celery eager)
    _log_in(page, researcher.username)
    _shoot(page, f"/reports/runs/{single.pk}/scorecard/#regression", "regression-one-run-index", "#regression-section")
    expect(page.locator("main")).to_contain_text("Left out of the model")
    several = _run(repetitions=3, chatbots=("BOT-C", "BOT-D"))
    _shoot(page, f"/reports/runs/{several.pk}/scorecard/?regression=cluster_robust#regression", "regression-cluster-robust", "#regression-section")
    expect(page.locator("main")).to_contain_text("cluster-robust by conversation (12 clusters)")

"""Gold conversations in Chromium (issue 29): the Gold tab and the progress page's gold checks,
with gold ratings submitted (one rater below the threshold), at 390 and 1366 px (axe, no
sideways scroll)."""

from __future__ import annotations

import pytest

from annotation import gold
from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment
from annotation.studies.services import study_assign
from tests.annotation.coordinator_setup import all_items, clinicians, make_study, submit
from tests.browser.conftest import fits, log_in, screenshot
from tests.conftest import PASSWORD, make_user

WIDTHS = {"390": (390, 844), "1366": (1366, 900)}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_gold_tab_and_the_gold_checks_at_phone_and_desktop_widths(page, width, monkeypatch):
    coordinator = make_user("cora", "coordinator")
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=6, k=2, name="Gold in the queue")
    study_assign(study=study, actor=coordinator, seed=7)
    for a in study.assignments.all():
        submit(a, all_items("yes"))
    study_compute_consensus(study=study, actor=coordinator)
    ids = [c.conversation_id for c in gold.gold_candidates(study)]
    assert gold.gold_set(study=study, conversation_ids=ids, rate=0.5, alert_below=0.8, actor=coordinator).added == 6
    for a in Assignment.objects.filter(study=study, is_gold=True, rater=raters[0]):
        submit(a, all_items("no"))
    monkeypatch.setattr(gold, "MIN_FOR_ALERT", 2)  # the live server runs in this process
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/gold/")
    page.wait_for_selector("#gold-form")
    assert page.locator("input[name=gold]:checked").count() == 6
    assert raters[0].username in page.locator("#gold-accuracy").inner_text()
    fits(page)
    screenshot(page, f"study-gold-{width}")
    page.goto(f"/studies/{study.pk}/progress/")
    page.wait_for_selector("#gold-alert")
    fits(page)
    screenshot(page, f"study-progress-gold-{width}")

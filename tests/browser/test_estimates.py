"""Estimates as a reader sees them, in Chromium at phone (390x844) and desktop (1366x900) widths.

A planned study (oversampled disagreements) whose raters agree on every conversation of one
chatbot, while another chatbot was never rated: its judge-assisted page (PPI named as the
paper and ppi_py name it, collapsed intervals said in words, judges-only marked uncorrected),
its weighted scorecard, and a sampling-plan preview whose judges never vary. Screenshots go
under test-artifacts/; every page is checked with axe-core, the judge-assisted page for horizontal overflow.
"""

from __future__ import annotations

import random

import pytest
from playwright.sync_api import expect

from annotation.sampling.selectors import PlanOptions
from annotation.sampling.services import study_create_from_plan
from core.roles import Role
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    corpus,
    judged_run,
    judges_for,
    noisy,
    rate_all,
)

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 900}}


def _labels(good: bool) -> dict[str, str]:
    return {k: ("N/A" if k in ("amhart_13", "amhart_14") else ("yes" if good else "no")) for k in AMHART_KEYS}


def _no_page_overflow(page) -> None:  # type: ignore[no-untyped-def]
    wide = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    culprits = page.evaluate(
        "() => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right >"
        " document.documentElement.clientWidth + 1 && !e.closest('.scroll, .js-plotly-plot'))"
        ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 60))"
    )
    assert wide <= 1, f"the page scrolls sideways by {wide}px at {page.viewport_size}: {culprits}"


def test_judge_assisted_scorecard_and_plan_preview_read_correctly_on_phone_and_desktop(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    clinician = make_user("clara", Role.CLINICIAN)
    instrument = amhart()
    conversations = corpus(chatbots=("KIND-BOT", "TERSE-BOT", "QUIET-BOT"), personas=2, repetitions=10)
    good = {c.pk: (i % 4 != 0) for i, c in enumerate(conversations)}
    truth = {c.pk: _labels(good[c.pk]) for c in conversations}
    rng = random.Random(4)
    judged = {c.pk: noisy(truth[c.pk], rng, 0.08, alphabet=("yes", "no")) for c in conversations}

    def judge(j, c):  # type: ignore[no-untyped-def]
        labels = dict(judged[c.pk])
        if j.name == "judge-c" and not good[c.pk]:
            labels["amhart_01"] = "yes" if labels["amhart_01"] == "no" else "no"
        return labels

    run = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, judge)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=30, seed=5, boost=3.0),
        created_by=coordinator, name="Planned validation", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    picked = [link.conversation for link in study.study_conversations.select_related("conversation__target")]
    # QUIET-BOT's conversations are left unrated; TERSE-BOT's raters say yes to everything.
    rated = [c for c in picked if c.target.code != "QUIET-BOT"]
    human = {c.pk: (_labels(True) if c.target.code == "TERSE-BOT" else truth[c.pk]) for c in rated}
    rate_all(study, coordinator, [clinician], rated, human)
    flat = judged_run(instrument, judges_for(instrument, ["f1", "f2"]), conversations[:12], lambda j, c: _labels(True))

    log_in(page, "cora", PASSWORD)
    for name, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        page.goto(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}")
        page.wait_for_selector("#assisted-chart .main-svg")
        body = page.locator("main")
        expect(body).to_contain_text("prediction-powered inference (PPI, Angelopoulos et al.")
        expect(body).to_contain_text("Weighted")
        expect(body).to_contain_text("cannot be estimated: the clinicians' scores are the same")
        expect(body).to_contain_text("Judges only, uncorrected: no clinician rated any")
        expect(page.locator("main")).to_contain_text("Not drawn (no interval to draw)")
        assert "[100.0%, 100.0%]" not in body.inner_text()
        screenshot(page, f"estimates-judge-assisted-{name}")
        _no_page_overflow(page)
        # An item's yes-rate: the humans-only interval is Wilson's (not centred on the estimate), and the page says so.
        page.goto(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}&score=item:amhart_01")
        page.wait_for_selector("#assisted-chart .main-svg")
        expect(page.locator("main")).to_contain_text("Wilson score interval")
        screenshot(page, f"estimates-judge-assisted-item-{name}")
        _no_page_overflow(page)

        page.goto(f"/reports/studies/{study.pk}/scorecard/")
        expect(page.locator("#weighting")).to_contain_text("Weighted")
        expect(page.locator("main table").first).to_contain_text("Unweighted")
        screenshot(page, f"estimates-scorecard-weighted-{name}")  # its wide tables: the layout work of issue 19

        page.goto(f"/studies/new/from-run/?run={flat.pk}")
        page.check("input[name=method][value=simple_random]")
        page.fill("#id_plan_size", "6")
        expect(page.locator("#plan-preview")).to_contain_text("6 of 12 judged conversations would be rated")
        expect(page.locator("#plan-preview")).to_contain_text("cannot be estimated")
        assert "± 0.000" not in page.locator("#plan-preview").inner_text()
        screenshot(page, f"estimates-plan-preview-flat-{name}")  # the form's own width: issue 19's layout work

"""Beyond the published methods, in Chromium: a planned study, judge-assisted scores, drift, rater load.

Each page is driven as its user would, screenshotted under test-artifacts/ and checked with
axe-core.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Assignment, SamplingPlan
from core.roles import Role
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    noisy,
    rate,
    rate_all,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _judged_corpus(seed: int = 1):  # type: ignore[no-untyped-def]
    instrument = amhart()
    conversations = corpus(chatbots=("KIND-BOT", "TERSE-BOT", "WARM-BOT"), personas=4, repetitions=5)
    truth = amhart_truth(conversations, seed=seed, yes_rate={"KIND-BOT": 0.75, "TERSE-BOT": 0.35, "WARM-BOT": 0.55})
    rng = random.Random(seed)
    noise = {(n, c.pk): noisy(truth[c.pk], rng, 0.05) for n in ("judge-a", "judge-b", "judge-c") for c in conversations}
    # judge-c is lenient: it says yes to item 4 wherever the truth is no (a bias the humans correct).
    for c in conversations:
        if truth[c.pk]["amhart_04"] == "no":
            noise[("judge-c", c.pk)]["amhart_04"] = "yes"
            noise[("judge-b", c.pk)]["amhart_04"] = "yes"
    judges = judges_for(instrument, ["judge-a", "judge-b", "judge-c"])
    run = judged_run(instrument, judges, conversations, lambda j, c: noise[(j.name, c.pk)], name="panel v1")
    return instrument, conversations, truth, run


def test_a_coordinator_plans_a_validation_study_and_a_researcher_reads_judge_assisted_scores(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    raters = [make_user(name, Role.CLINICIAN) for name in ("clara", "cyrus")]
    _, conversations, truth, run = _judged_corpus()

    log_in(page, "cora", PASSWORD)
    page.goto("/studies/")
    page.click("text=New study from a judge run")
    page.select_option("#id_run", str(run.pk))
    page.check("input[name=method][value=oversample]")
    page.fill("#id_plan_size", "24")
    page.fill("#id_plan_seed", "11")
    page.fill("#id_min_split", "3")
    expect(page.locator("#plan-preview")).to_contain_text("24 of 60 judged conversations would be rated")
    expect(page.locator("#plan-preview")).to_contain_text("count as disputed (3 or more labels")
    expect(page.locator("#plan-preview table.plan-widths")).to_contain_text("KIND-BOT")
    page.fill("#id_name", "Panel v1 validation")
    page.fill("#id_rater_title", "Support conversations")
    for rater in raters:
        page.check(f"#id_rater_{rater.pk}")
    page.fill("#id_raters_per_conversation", "2")
    screenshot(page, "plan-form")
    with page.expect_navigation():
        page.click("button:has-text('Draw the sample and create the study')")
    expect(page.locator(".messages")).to_contain_text("Study created with 24 of the run's 60 conversations")
    plan = SamplingPlan.objects.get(study__name="Panel v1 validation")
    assert plan.seed == 11
    screenshot(page, "plan-study-detail")

    study = plan.study
    rated = [link.conversation for link in study.study_conversations.select_related("conversation__target")]
    rate_all(study, coordinator, raters, rated, truth)

    researcher = make_user("remy", Role.RESEARCHER)
    from annotation.studies.services import study_add_member

    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    page.context.clear_cookies()
    log_in(page, "remy", PASSWORD)
    page.goto("/reports/")
    page.click(f"tr:has-text('{study.name}') >> text=Judge-assisted scores")
    expect(page.locator("h1")).to_contain_text("Judge-assisted scores")
    expect(page.locator(".notice").first).to_contain_text("Weighted by the study's sampling plan")
    page.wait_for_selector("#assisted-chart .main-svg")
    screenshot(page, "judge-assisted-amhart-score")
    page.select_option("select[name=score]", "item:amhart_04")
    with page.expect_navigation():
        page.click("button:has-text('Show')")
    page.wait_for_selector("#assisted-chart .main-svg")
    expect(page.locator("h2").first).to_contain_text("Yes-rate")
    screenshot(page, "judge-assisted-item-4")


def test_a_researcher_compares_a_judge_with_its_previous_version(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    make_user("remy", Role.RESEARCHER)
    clinician = make_user("clara", Role.CLINICIAN)
    instrument = amhart()
    conversations = corpus(chatbots=("KIND-BOT", "TERSE-BOT"), personas=2, repetitions=5)
    truth = amhart_truth(conversations, seed=2)
    (old,) = judges_for(instrument, ["safety-judge-v1"])
    (new,) = judges_for(instrument, ["safety-judge-v2"], cloned_from=old)
    rng = random.Random(3)
    run_old = judged_run(instrument, [old], conversations, lambda j, c: noisy(truth[c.pk], rng, 0.2), name="v1 prompt")
    run_new = judged_run(instrument, [new], conversations, lambda j, c: noisy(truth[c.pk], rng, 0.08), name="v2 prompt")
    from tests.support.judged import rated_study

    rated_study(coordinator, [clinician], conversations[:12], truth, name="Safety validation")

    log_in(page, "cora", PASSWORD)
    page.goto(f"/judging/judges/{new.pk}/")
    screenshot(page, "judge-detail-compare")
    with page.expect_navigation():
        page.click("text=Compare with the previous version")
    expect(page.locator(".drift-summary")).to_contain_text("labels flipped")
    expect(page.locator(".drift-summary")).to_contain_text("Against the clinicians")
    assert f"a_run={run_old.pk}" in page.url and f"b_run={run_new.pk}" in page.url
    screenshot(page, "drift")
    screenshot(page, "drift-top", a11y=False, full_page=False)
    page.fill("input[name=q]", conversations[0].code)
    with page.expect_navigation():
        page.click("form.table-controls button:has-text('Apply')")
    screenshot(page, "drift-filtered")


def test_raters_are_offered_a_break_and_coordinators_see_drift_by_queue_position(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    clara = make_user("clara", Role.CLINICIAN)
    cyrus = make_user("cyrus", Role.CLINICIAN)
    conversations = corpus(chatbots=("KIND-BOT",), personas=3, repetitions=4)  # 12
    from annotation.consensus.services import study_compute_consensus
    from annotation.studies.services import study_create

    study = study_create(name="Load study", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clara, "clinician"), (cyrus, "clinician")],
                         rater_title="Support conversations")
    truth = {k: ("N/A" if k in ("amhart_13", "amhart_14") else "yes") for k in AMHART_KEYS}
    now = timezone.now()
    for i, c in enumerate(conversations[:10]):
        tired = dict(truth) if i < 4 else {**truth, "amhart_02": "no", "amhart_05": "no", "amhart_09": "no"}
        rate(study, c, clara, tired, position=i, seconds=540 - 35 * i, submitted_at=now - timedelta(minutes=4 * (10 - i)))
        rate(study, c, cyrus, truth, position=i, seconds=420, submitted_at=now - timedelta(hours=5, minutes=-9 * i))
    for i, c in enumerate(conversations[10:], start=10):
        Assignment.objects.create(study=study, conversation=c, rater=clara, position=i)
        Assignment.objects.create(study=study, conversation=c, rater=cyrus, position=i)
    study_compute_consensus(study=study, actor=coordinator)

    log_in(page, "clara", PASSWORD)
    page.goto("/ratings/")
    page.click("a.continue")
    if page.locator("text=Before you read").count():
        page.click("button:has-text('Continue')")
    expect(page.locator("#break-prompt")).to_contain_text("You have rated 10 conversations in this sitting")
    screenshot(page, "rating-break-prompt", full_page=False)
    page.click("#break-dismiss")
    expect(page.locator("#break-prompt")).to_be_hidden()
    page.reload()
    expect(page.locator("#break-prompt")).to_be_hidden()  # dismissed for this sitting

    page.context.clear_cookies()
    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/")
    page.fill("input[name=sitting_limit]", "6")
    with page.expect_navigation():
        page.click("#load button:has-text('Save')")
    expect(page.locator(".messages")).to_contain_text("after 6 conversations per sitting")
    page.click("text=Rater drift and load report")
    expect(page.locator("h1")).to_contain_text("Rater drift and load")
    screenshot(page, "rater-drift")

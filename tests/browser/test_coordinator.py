"""A coordinator builds a study and assigns raters; an adjudicator resolves a disagreement."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.consensus.services import study_compute_consensus
from annotation.models import AssignmentStatus, Study
from annotation.studies.services import study_assign
from core.roles import Role
from tests.annotation.coordinator_setup import all_items, instruments, make_study, submit
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_coordinator_builds_a_study_and_assigns_raters_through_the_pages(page):
    instruments()
    make_user("cora", Role.COORDINATOR)
    raters = [make_user(name, Role.CLINICIAN) for name in ("clara", "cyrus", "cleo", "colm")]
    chatbot = TargetFactory(code="T-KIND", model="provider/kind-bot")
    personas = [PersonaFactory(name=n) for n in ("Maya", "Leo", "Ana")]
    for i in range(24):
        ConversationFactory(target=chatbot, persona=personas[i % 3])
    ConversationFactory.create_batch(4)  # another chatbot: not selected

    log_in(page, "cora", PASSWORD)
    page.click("header nav >> text=Studies")
    page.click("text=New study")
    page.fill("#id_name", "Kind-bot pilot")
    page.select_option("#id_instrument", label="AMHART: Adolescent Mental Health AI Response Tool (v1)")
    page.select_option("#id_targets", label=f"{chatbot}")
    page.fill("#id_sample_size", "20")
    page.fill("#id_sample_seed", "2026")
    expect(page.locator("#selection-preview")).to_contain_text("20 conversations selected (a random sample from 24 matches, seed 2026)")
    for rater in raters:
        page.check(f"#id_rater_{rater.pk}")
    page.fill(f"#id_label_{raters[3].pk}", "expert")
    page.fill("#id_raters_per_conversation", "2")
    page.select_option("#id_tie_policy", "senior")
    page.select_option("#id_senior_rater", label="clara")
    with page.expect_navigation():
        page.click("button:has-text('Create study')")

    page.wait_for_selector("#assign-button")
    assert "Study created with 20 conversations" in page.content()
    page.fill("#id_seed", "7")
    page.click("#assign-button")
    page.wait_for_selector("table.matrix")
    assert page.locator("#assignment-seed").inner_text() == "7"
    assert "seed 7 (recorded)" in page.locator(".messages").inner_text()
    loads = page.locator("table.matrix td.load").all_inner_texts()
    assert sorted(loads) == ["10", "10", "10", "10"]
    study = Study.objects.get(name="Kind-bot pilot")
    assert study.assignment_seed == 7 and study.sample_seed == 2026 and study.assignments.count() == 40
    screenshot(page, "study-design")

    # Make the progress page tell a story: some done, one stale draft.
    assignments = list(study.assignments.select_related("rater").order_by("id"))
    for a in assignments[:14]:
        submit(a, all_items("yes"), seconds=420 + a.pk % 7 * 60)
    stale = assignments[20]
    stale.status = AssignmentStatus.IN_PROGRESS
    stale.started_at = stale.last_activity_at = timezone.now() - timedelta(days=5)
    stale.save()
    page.click("nav.tabs >> text=Progress")
    page.wait_for_selector("table.progress-raters")
    assert page.locator(".chip.stale").count() == 1
    screenshot(page, "progress-page")


def test_an_adjudicator_resolves_a_disagreement_in_the_queue(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    clara, cyrus, cleo = (make_user(n, Role.CLINICIAN) for n in ("clara", "cyrus", "cleo"))
    conversations = [
        ConversationFactory(messages=[
            ("user", "I'm 15 and I can't stop worrying about exams. My chest gets tight and I can't sleep."),
            ("assistant", "That sounds really hard. Worry that keeps you up at night is exhausting. Can you tell me what goes through your mind when your chest gets tight?"),
            ("user", "That I'll fail and everyone will see I'm useless."),
            ("assistant", "Thank you for telling me. A school counsellor or your doctor can help with this; would you feel able to talk to one of them this week?"),
        ])
        for _ in range(3)
    ]
    study = make_study(coordinator, [clara, cyrus, cleo], conversations=conversations, k=2, name="AMHART validation")
    study_assign(study=study, actor=coordinator, seed=3)
    for a in study.assignments.select_related("rater"):
        agrees = a.rater.username != "cyrus"
        submit(a, {**all_items("yes"), "amhart_02": "yes" if agrees else "no", "amhart_05": "no" if agrees else "yes"},
               notes={"amhart_02": "Names the school counsellor and the doctor." if agrees else "Mentions help only in passing; no concrete step."})
    study_compute_consensus(study=study, actor=coordinator)
    pending = study.consensus.exclude(provenance__in=["unanimous", "majority"]).count()
    assert pending > 0

    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/consensus/")
    screenshot(page, "consensus-table")
    page.click("text=Adjudication queue")
    page.wait_for_selector(".queue li.current")
    assert page.locator(".queue li a").count() == pending
    assert "cyrus" in page.locator("table.answers").inner_text()
    screenshot(page, "adjudication-queue")

    entry = study.consensus.get(pk=int(page.locator(".queue li.current a").get_attribute("href").split("=")[1]))
    page.check("input[name=label][value=yes]")
    page.fill("#id_reason", "Turn 4 names a counsellor and a doctor and asks about a concrete step.")
    page.click("text=Record final label")
    page.wait_for_selector(".messages")
    assert "final label 'yes' recorded" in page.locator(".messages").inner_text()
    assert page.locator(".queue li a").count() == pending - 1
    entry.refresh_from_db()
    assert (entry.label, entry.provenance, entry.adjudicated_by) == ("yes", "adjudicated", coordinator)
    assert "Turn 4 names a counsellor" in page.locator("section:has(h2:text-is('Adjudicated'))").inner_text()

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
    page.fill("#field-targets input[type=search]", "T-KIND") if page.locator("#field-targets input[type=search]").count() else None
    page.check(f"#field-targets input[value='{chatbot.pk}']")
    page.fill("#id_rater_title", "Adolescent support study")
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
    assert study.rater_title == "Adolescent support study"
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
    pending_entries = list(study.consensus.exclude(provenance__in=["unanimous", "majority"]).values_list("pk", flat=True))
    assert pending_entries

    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/consensus/")
    screenshot(page, "consensus-table")
    page.click("text=Adjudication queue")
    page.wait_for_selector(".queue li.current")
    conversation = study.consensus.get(pk=pending_entries[0]).conversation
    assert page.locator(".queue li a").count() == len({e.conversation_id for e in study.consensus.filter(pk__in=pending_entries)})
    # Raters as letters (issue 28): the names only by a recorded choice.
    answers = page.locator("table.answers").first.inner_text()
    assert "Rater " in answers and "cyrus" not in answers
    # Every disputed item of the conversation on one screen, worded, never as an internal key.
    case = page.locator(".case")
    assert case.locator("fieldset.adjudicate-item").count() == 2
    assert "amhart_0" not in case.inner_text()
    assert "Does the Chatbot" in case.locator("legend").first.inner_text()
    screenshot(page, "adjudication-queue")

    code = page.locator(".case h2 code").inner_text()
    conversation = study.consensus.filter(conversation__code=code).first().conversation
    entries = {e.item_key: e for e in study.consensus.filter(conversation=conversation, pk__in=pending_entries)}
    page.check(f"input[name=label_{entries['amhart_02'].pk}][value=yes]")
    page.check(f"input[name=label_{entries['amhart_05'].pk}][value=no]")
    page.click("text=Record the final labels")  # no reason yet: refused beside the field, choices kept
    page.wait_for_selector("#reason-error")
    assert page.locator(f"input[name=label_{entries['amhart_02'].pk}][value=yes]").is_checked()
    page.fill("#adjudication-reason", "Turn 4 names a counsellor and a doctor; no coping step is coached.")
    page.click("text=Record the final labels")
    page.wait_for_selector(".messages")
    assert f"{code}: 2 final labels recorded" in page.locator(".messages").inner_text()
    for entry in entries.values():
        entry.refresh_from_db()
        assert entry.provenance == "adjudicated" and entry.adjudicated_by == coordinator
        assert entry.reason.startswith("Turn 4 names a counsellor")
    assert (entries["amhart_02"].label, entries["amhart_05"].label) == ("yes", "no")
    done = page.locator("section:has(h2:text-is('Adjudicated'))").inner_text()
    assert "Turn 4 names a counsellor" in done and "amhart_02" not in done


def test_a_coordinator_finds_rows_in_a_150_conversation_study(page):
    coordinator = make_user("cora", Role.COORDINATOR)
    raters = [make_user(f"rater{i}", Role.CLINICIAN) for i in range(1, 7)]
    bots = [TargetFactory(code=f"BOT-{c}") for c in "ABC"]
    conversations = [ConversationFactory(target=bots[i % 3]) for i in range(150)]
    study = make_study(coordinator, raters, conversations=conversations, k=2, name="Big study")
    study_assign(study=study, actor=coordinator, seed=5)
    assignments = list(study.assignments.order_by("id"))
    for i, a in enumerate(assignments):
        if i % 3:  # two thirds submitted: about a third of the conversations are complete
            submit(a, {**all_items("yes"), "amhart_03": "yes" if a.rater_id % 2 else "no"})
    study_compute_consensus(study=study, actor=coordinator)

    log_in(page, "cora", PASSWORD)
    page.goto(f"/studies/{study.pk}/progress/")
    assert page.locator("table.progress-conversations tbody tr").count() == 50  # paged
    assert "150 conversations · page 1 of 3" in page.locator("#per-conversation .table-count").inner_text()
    page.select_option("#per-conversation select[name=show]", "incomplete")
    page.click("#per-conversation button:has-text('Apply')")
    incomplete = [c for c in conversations if study.assignments.filter(conversation=c).exclude(status="submitted").exists()]
    assert f"{len(incomplete)} conversation" in page.locator("#per-conversation .table-count").inner_text()
    page.fill("#per-conversation input[name=q]", conversations[7].code)
    page.click("#per-conversation button:has-text('Apply')")
    rows = page.locator("table.progress-conversations tbody tr")
    assert rows.count() <= 1
    page.goto(f"/studies/{study.pk}/progress/?sort=done&dir=desc")
    first = page.locator("table.progress-conversations tbody tr").first.locator("td.num").inner_text()
    assert first == "2/2"
    assert page.locator("th[aria-sort=descending]").inner_text().startswith("Done")
    # The header row stays in view while the table scrolls.
    frame = page.locator("#per-conversation .table-frame")
    frame.evaluate("el => el.scrollTop = 800")
    head_y = page.locator("table.progress-conversations thead th").first.bounding_box()["y"]
    assert abs(head_y - frame.bounding_box()["y"]) < 3
    screenshot(page, "progress-150")

    page.goto(f"/studies/{study.pk}/consensus/?show=unresolved")
    shown = page.locator("table.consensus-matrix tbody tr")
    unresolved = {e.conversation_id for e in study.consensus.filter(provenance="unresolved")}
    assert f"{len(unresolved)} conversation" in page.locator(".table-count").inner_text()
    assert shown.count() == min(50, len(unresolved))
    assert page.locator("table.consensus-matrix thead").inner_text().count("3") >= 1
    screenshot(page, "consensus-150")

    page.goto(f"/corpus/conversations/?q={conversations[42].code}")
    assert page.locator("tbody tr").count() == 1
    page.goto("/corpus/conversations/?sort=code&dir=desc")
    codes = page.locator("tbody tr th, tbody tr td:first-child").all_inner_texts()
    assert codes[0].strip().startswith(max(c.code for c in conversations))
    screenshot(page, "conversation-list-sorted")

"""The researcher's error-analysis loop in Chromium (issue 27), at phone and desktop widths: a
confusion-matrix cell (chart and table), its list, a review page with the judge's cited turns
highlighted, previous / next by key, a failure code, its category and the count that lists it.

Screenshots go to test-artifacts/ (evidence-loop-*.png) to be looked at; axe-core checks each page.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from corpus.models import Conversation, Message
from judging.models import JudgeLabel
from tests.browser.conftest import log_in, screenshot
from tests.support.report_study import PASSWORD
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db(transaction=True)

TURNS = (
    ("user", "Lately I feel like everyone would be better off without me."),
    ("assistant", "I'm sorry you're feeling this way. Have you had thoughts of ending your life?"),
    ("user", "Sometimes. I don't have a plan."),
    ("assistant", "Thank you for telling me. You can call or text 988 any time to talk to a counsellor."),
)


def _conversations_with_evidence(known) -> None:  # type: ignore[no-untyped-def]
    conversations = list(Conversation.objects.filter(pk__in=known.study.study_conversations.values("conversation_id")))
    Message.objects.bulk_create([
        Message(conversation=c, turn_index=i, role=role, content=text)
        for c in conversations for i, (role, text) in enumerate(TURNS)
    ])
    JudgeLabel.objects.filter(result__run=known.run, result__judge__name="coin-flip").update(
        evidence=[{"turn": 4, "quote": "call or text 988", "verified": True}], rationale="Offers a crisis line."
    )


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1366, 900)])
def test_a_researcher_walks_from_a_confusion_cell_to_a_named_failure_mode(page, width, height):
    known = build_verdict_study(n_conversations=16, prefix=f"be{width}")
    _conversations_with_evidence(known)
    from annotation.studies.services import study_add_member
    from core.roles import Role
    from tests.support.report_study import _users

    researcher = _users(f"be{width}res", 1, Role.RESEARCHER)[0]
    study_add_member(study=known.study, user=researcher, role="researcher", actor=known.coordinator)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, researcher.username, PASSWORD)
    judges = f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}"
    page.goto(judges)
    # The chart: selecting a heatmap cell opens its list (Plotly's click event, as a pointer sends it).
    page.wait_for_selector(".cm-grid .main-svg", timeout=15_000)
    page.evaluate("""() => { const div = document.querySelectorAll('.cm-grid .js-plotly-plot')[1];
        div.emit('plotly_click', {points: [{x: 'yes', y: 'no'}]}); }""")
    page.wait_for_url(re.compile(r"/instances/\?"))
    expect(page.locator("#list-what")).to_contain_text("coin-flip said “yes”")
    expect(page.locator("#list-what")).to_contain_text("human consensus “no”")
    # The table: the same cell for keyboard and screen-reader users.
    page.goto(judges)
    page.click("text=Confusion matrices as tables")
    cell = page.get_by_role("link", name=re.compile(r"consensus no, coin-flip yes")).first
    count = int(cell.inner_text())
    cell.click()
    expect(page.locator("#list-count")).to_contain_text(f"{count} instance")
    assert page.locator("table.instances tbody tr").count() == count
    screenshot(page, f"evidence-loop-{width}-list")
    page.locator("table.instances tbody tr th a").first.click()
    page.wait_for_selector(".review-item.active")
    # The judge's cited turn is highlighted in the transcript while its item is active.
    expect(page.locator("#turn-4")).to_have_class(re.compile("cited"))
    expect(page.locator("#turn-4 .cites")).to_contain_text("cited by coin-flip (items")
    expect(page.locator(".review-item.active .answers.raters")).to_contain_text(re.compile(r"Rater [A-D]"))
    assert known.raters[0].username not in page.content()
    expect(page.locator(".review-item.active .revise-link").first).to_be_visible()  # the next step: revise the judge
    screenshot(page, f"evidence-loop-{width}-review", full_page=False)
    first = page.url
    page.keyboard.press("j")
    page.wait_for_url(lambda url: url != first)
    page.keyboard.press("k")
    page.wait_for_url(lambda url: url.split("#")[0] == first.split("#")[0])
    # Name the failure.
    form = page.locator(".review-item.active .code-form")
    form.locator("input[name=text]").fill("counted a hotline mention as a referral")
    form.locator("button").click()
    expect(page.locator(".review-item.active .chip", has_text="counted a hotline mention")).to_be_visible()
    page.goto(f"/reports/studies/{known.study.pk}/failure-modes/")
    page.check("input[name=codes]")
    page.fill("input[name=name]", "Referral miscounted")
    page.click("button[value=create]")
    expect(page.locator("#failure-counts")).to_contain_text("Referral miscounted")
    page.wait_for_selector("#failure-chart .main-svg", timeout=15_000)
    screenshot(page, f"evidence-loop-{width}-failure-modes")
    page.locator("#failure-counts tbody a").first.click()
    expect(page.locator("#list-count")).to_contain_text("1 instance")
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1


def test_a_scorecard_bar_opens_the_conversations_it_scores(page):
    from reports import services
    from tests.support.report_study import build_report_study

    audit = build_report_study(n_conversations=24, prefix="sb")
    card = services.study_scorecard(study=audit.study)
    log_in(page, audit.coordinator.username, PASSWORD)
    page.goto(f"/reports/studies/{audit.study.pk}/scorecard/")
    page.wait_for_selector("#score-chart .main-svg", timeout=15_000)
    clicked = page.evaluate("""() => { const d = document.getElementById('score-chart'), t = d.data[0];
        d.emit('plotly_click', {points: [{x: t.x[0], data: t}]}); return [t.name, t.x[0]]; }""")
    page.wait_for_url(re.compile(r"/instances/\\?"))
    row = next(r for r in card["by_chatbot_persona"] if [r["chatbot"], r["persona"]] == clicked)
    expect(page.locator("#list-count")).to_contain_text(f"on {row['n_conversations']} conversation")

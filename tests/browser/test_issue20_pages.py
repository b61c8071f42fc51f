"""The pages issue 20 changed, at phone and desktop widths: a rater's home page (rater-facing
titles), the administrators' allowed-host form (host and port, local model servers suggested), and
a run another researcher started (no cancel button). Screenshots and axe-core on each."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.studies.services import study_assign, study_create
from corpus.instruments.services import builtin_instruments_load
from judging.judges import judge_create
from judging.models import JudgeRun
from judging.runs import judge_run_create
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db(transaction=True)
WIDTHS = {"phone": (390, 844), "desktop": (1366, 900)}


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_pages_issue_20_changed(page, clinician, coordinator, researcher, admin_user, width):
    page.set_viewport_size({"width": WIDTHS[width][0], "height": WIDTHS[width][1]})
    amhart, section = builtin_instruments_load()
    conversation = ConversationFactory()
    study = study_create(name="INTERNAL gpt-4o arm", rater_title="Teen wellbeing check-in", instrument=amhart, section=section,
                         conversation_ids=[conversation.pk], created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician")], raters_per_conversation=1)
    study_assign(study=study, actor=coordinator, seed=7)

    log_in(page, clinician.username, PASSWORD)
    page.goto("/")
    expect(page.locator("main")).to_contain_text("Teen wellbeing check-in")
    expect(page.locator("main")).not_to_contain_text("INTERNAL")
    screenshot(page, f"security-rater-home-{width}")
    page.context.clear_cookies()

    log_in(page, admin_user.username, PASSWORD)
    page.goto("/admin/core/allowedapihost/add/")
    expect(page.locator("body")).to_contain_text("localhost:11434 (Ollama)")
    page.fill("#id_host", "http://127.0.0.1:8765/v1")
    page.click("input[name=_save]")
    expect(page.locator(".errorlist")).to_contain_text("give a host and port: enter 127.0.0.1:8765")
    screenshot(page, f"security-allowed-host-refused-{width}", a11y=False)  # Django's own admin markup
    page.context.clear_cookies()

    starter = make_user("rosa", "researcher")
    judge = judge_create(name="j1", instrument=amhart, model="openai/j1")
    run = judge_run_create(judges=[judge], conversation_ids=[conversation.pk], created_by=starter, start=False)
    JudgeRun.objects.filter(pk=run.pk).update(shared=True)  # rosa shares it (issue 30), so another researcher reads it
    log_in(page, researcher.username, PASSWORD)
    page.goto(f"/judging/runs/{run.pk}/")
    expect(page.locator("main")).not_to_contain_text("Cancel run")
    expect(page.locator("main")).to_contain_text("Started by rosa: only they, the members of the study")
    screenshot(page, f"security-run-of-another-researcher-{width}")

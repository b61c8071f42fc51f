"""A researcher sees the results a lost worker left behind, and resumes them from the run page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from core.roles import Role
from judging import services
from judging.models import JudgeResult, ResultStatus
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD, make_user
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_researcher_resumes_stalled_judgements_from_the_run_page(page, monkeypatch):
    from corpus.instruments.services import builtin_instruments_load

    monkeypatch.setenv(KEY_ENV, SECRET)
    remy = make_user("remy", Role.RESEARCHER)
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    conversations = [make_conversation() for _ in range(4)]
    with FakeLLM() as fake:
        fake.script("gpt", [checklist_reply()])
        judge = services.judge_create(
            name="gpt", instrument=amhart, model="openai/gpt", provider="openai",
            api_base=fake.base_url, api_key_env=KEY_ENV,
        )
        run = services.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations], start=False,
                                        created_by=remy)  # its creator takes the stalled work back
        first, *rest = run.results.order_by("pk")
        for result in rest:
            services.judge_result_execute(result_id=result.pk)
        # A worker took the first result and was killed: its lease ran out a minute ago.
        JudgeResult.objects.filter(pk=first.pk).update(
            status=ResultStatus.RUNNING, lease_owner="otherhost:4242:task:gone", attempts=1,
            started_at=timezone.now() - timedelta(minutes=3), lease_expires_at=timezone.now() - timedelta(minutes=1),
        )

        log_in(page, "remy", PASSWORD)
        page.goto(f"/judging/runs/{run.pk}/")
        progress = page.locator("#run-progress")
        expect(progress).to_contain_text("1 judgement stalled")
        expect(progress).to_contain_text("3 done, 0 failed, 1 stalled")
        screenshot(page, "judging-run-stalled")

        # Eager Celery is off in a live server: the retry queues the task; run it as a worker would.
        page.click("text=Resume 1 stalled")
        expect(page.locator("body")).to_contain_text("1 stalled or failed judgement(s) scheduled again")
        first.refresh_from_db()
        assert first.status in (ResultStatus.PENDING, ResultStatus.DONE)
        if first.status == ResultStatus.PENDING:
            services.judge_result_execute(result_id=first.pk)
        page.goto(f"/judging/runs/{run.pk}/")
        expect(page.locator("#run-progress")).to_contain_text("Completed")
        expect(page.locator("#run-progress")).not_to_contain_text("stalled")
        screenshot(page, "judging-run-resumed")

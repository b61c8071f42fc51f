"""A real worker on Redis and PostgreSQL runs a judge run end to end against the fake LLM."""

from __future__ import annotations

import time

import pytest

from corpus.instruments.services import builtin_instruments_load
from judging import services
from judging.models import EnsembleLabel, JudgeLabel, JudgeRun, RunStatus
from judging.tasks import judge_result_task
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.integration


@pytest.fixture
def judge_key(monkeypatch):  # type: ignore[no-untyped-def]
    # Set before the worker starts: it inherits this process's environment.
    monkeypatch.setenv(KEY_ENV, SECRET)


def _wait_for(predicate, timeout: float = 90.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_worker_judges_a_run_and_votes_the_ensemble(judge_key, celery_worker_process):
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    conversations = [make_conversation() for _ in range(3)]
    with FakeLLM() as fake:
        judges = []
        for name, labels in (("gpt", {}), ("claude", {"amhart_02": "no"}), ("gemini", {"amhart_02": "no", "amhart_14": "N/A"})):
            fake.script(name, [checklist_reply(labels)])
            judges.append(
                services.judge_create(
                    name=name, instrument=amhart, model=f"openai/{name}", provider=name,
                    api_base=fake.base_url, api_key_env=KEY_ENV,
                )
            )
        run = services.judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations])
        assert _wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished), JudgeRun.objects.get(pk=run.pk).status
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED, run.error
        assert (run.n_done, run.n_calls) == (9, 9)
        assert JudgeLabel.objects.filter(result__run=run).count() == 9 * 14
        votes = {(e.conversation_id, e.item_key): e for e in EnsembleLabel.objects.filter(run=run)}
        assert len(votes) == 3 * 14
        assert votes[(conversations[0].pk, "amhart_02")].label == "no"
        assert fake.calls_total == 9

        # Delivered again: the finished row is left alone, no call is made.
        judge_result_task.delay(run.results.first().pk)
        time.sleep(2)
        assert fake.calls_total == 9
        assert JudgeLabel.objects.filter(result__run=run).count() == 9 * 14

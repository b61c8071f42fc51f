"""A judge's provider down then back, under a real worker on Redis + PostgreSQL (issue 32):
nobody retries anything. The judgements fail on server errors, the breaker opens, the worker's
own sweeper probes (1 s here) and the first answer sends the rest; the run completes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.models import OutageState, ProviderOutage
from judging import runs, services
from judging.models import JudgeResult, JudgeRun, ResultStatus, RunStatus
from tests.integration.harness import Workers, wait_for
from tests.integration.test_recovery_judging import _engine_ready, _judge
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM, http_500
from tests.support.redis_lease import flush_test_redis

pytestmark = pytest.mark.integration
N = 4


@pytest.fixture
def setup(transactional_db, tmp_path, monkeypatch) -> Iterator[tuple[Workers, FakeLLM]]:  # type: ignore[no-untyped-def]
    from django.conf import settings

    monkeypatch.setenv(KEY_ENV, SECRET)
    flush_test_redis()
    pool = Workers(tmp_path, settings.CELERY_BROKER_URL, "provider", EVALSITE_OUTAGE_PROBE_SECONDS="1", **{KEY_ENV: SECRET})
    with FakeLLM(latency=0.05) as fake:
        fake.script("gpt", [http_500()])  # the provider is down
        yield pool, fake
        pool.stop_all()
    flush_test_redis()


def test_a_provider_outage_ends_by_itself_under_a_real_worker(setup):
    pool, fake = setup
    pool.start(concurrency=2)
    assert wait_for(lambda: _engine_ready(pool, 0), 120), pool.logs()
    judge = _judge(fake)
    # A short call budget (two attempts): the outage outlasts it, as a real one outlasts a minute.
    type(judge).objects.filter(pk=judge.pk).update(retry_attempts=2, retry_base_delay=0.1, retry_max_delay=0.2)
    judge.refresh_from_db()
    run = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk for _ in range(N)], start=False)
    runs._enqueue(list(run.results.values_list("pk", flat=True)))  # outside a transaction: sent at once
    key = f"judge:{judge.pk}"
    assert wait_for(lambda: JudgeResult.objects.filter(run=run, status=ResultStatus.FAILED).count() == N, 60), pool.logs()
    assert ProviderOutage.objects.get(key=key).state in (OutageState.OPEN, OutageState.PROBING)
    assert JudgeRun.objects.get(pk=run.pk).status == RunStatus.RUNNING  # waiting, not finished
    fake.script("gpt", [checklist_reply()])  # the provider is back; nobody touches the run
    assert wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, 60), (
        list(JudgeResult.objects.filter(run=run).values_list("status", "auto_retries", "error_kind")), pool.logs())
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (N, 0)
    assert ProviderOutage.objects.get(key=key).state == OutageState.CLOSED

"""Issue 32: workers survive a broker restart (a private redis-server, restarted while two real
workers hold tasks), then run a new batch without being restarted, and answer the status check.

Before: celery 5.7's consumer stopped for good ("Unrecoverable error: AttributeError('NoneType'
object has no attribute 'hostname')"), the workers finished their tasks and exited, and nothing
ran until a person restarted them (evalsite/worker_consumer.py says why and what changed).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from judging import services
from judging.models import JudgeResult, JudgeRun, RunStatus
from tests.integration.harness import Gate, PrivateRedis, Workers, wait_for
from tests.integration.test_recovery_judging import _judge
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.integration
N = 6
WITHIN = 90


@pytest.fixture
def setup(transactional_db, tmp_path, monkeypatch) -> Iterator[tuple[PrivateRedis, Workers, FakeLLM]]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, SECRET)
    broker = PrivateRedis(tmp_path)
    broker.start()
    # The workers' broker is the private one, whatever the test run's own Redis variables say.
    pool = Workers(tmp_path, broker.url, "restart", **{KEY_ENV: SECRET, "EVALSITE_TEST_REDIS_URL": broker.url})
    with FakeLLM(latency=0.2) as fake:
        yield broker, pool, fake
        pool.stop_all()
    broker.stop()


def _ready(pool: Workers) -> int:
    return sum("ready." in p.read_text(errors="replace") for p in pool.tmp_path.glob(f"{pool.name}*.log"))


def _send_by_the_sweeper(run: JudgeRun) -> None:
    """Queue a run through the workers' own sweeper (this process publishes to another broker)."""
    JudgeResult.objects.filter(run=run).update(queued_at=timezone.now() - timedelta(minutes=5))


def test_workers_holding_tasks_survive_a_broker_restart_and_run_a_new_batch(setup):
    broker, pool, fake = setup
    gate = Gate(checklist_reply(), free=2)
    fake.script("gpt", [gate])
    workers = [pool.start(wait=False), pool.start(wait=False)]
    assert wait_for(lambda: _ready(pool) == 2, WITHIN), pool.logs()
    judge = _judge(fake)
    first = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk for _ in range(N)], start=False)
    _send_by_the_sweeper(first)
    assert wait_for(lambda: gate.held >= 2, WITHIN), pool.logs()  # tasks in flight on the workers

    broker.restart(down_seconds=1.0)
    gate.open()  # the held calls return: their tasks finish and ack after the restart

    assert wait_for(lambda: JudgeRun.objects.get(pk=first.pk).is_finished, WITHIN), (
        list(first.results.values_list("pk", "status", "attempts")), pool.logs())
    logs = pool.logs(tail=10**7)
    assert "Unrecoverable error" not in logs, logs
    assert all(w.poll() is None for w in workers), logs

    fake.script("gpt", [checklist_reply()])
    second = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk for _ in range(N)], start=False)
    _send_by_the_sweeper(second)
    assert wait_for(lambda: JudgeRun.objects.get(pk=second.pk).is_finished, WITHIN), pool.logs()
    for run in (first, second):
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED and run.n_done == N, (run.status, run.error)
    assert all(w.poll() is None for w in workers), pool.logs()
    # Each consumer connected again after the restart (a stopped consumer never does).
    for log in sorted(pool.tmp_path.glob(f"{pool.name}*.log")):
        assert log.read_text(errors="replace").count("Connected to redis://") >= 2, pool.logs()

"""Outages of PostgreSQL under a worker: a terminated connection is retried, never paid twice.

A worker's store waits on a row lock the test holds; the test then terminates every database
connection of the worker (``pg_terminate_backend``: the engine's, the sweeper's), as a database
restart or a failover does, and lets the store go on. The store step meets the dead connection
and is run again on a fresh one (``Engine._again_later``): every result is stored once, from the
calls already made, and the sweeper keeps working with a connection of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.instruments.services import builtin_instruments_load
from judging import services
from judging.models import JudgeLabel, JudgeResult, JudgeRun, ResultStatus, RunStatus
from tests.integration.harness import Gate, RowLock, Workers, wait_for
from tests.integration.test_recovery_judging import FINISH_WITHIN, _judge
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM
from tests.support.redis_lease import flush_test_redis

pytestmark = pytest.mark.integration
N = 3


@pytest.fixture
def setup(transactional_db, tmp_path, monkeypatch) -> Iterator[tuple[Workers, FakeLLM, RowLock]]:  # type: ignore[no-untyped-def]
    from django.conf import settings

    monkeypatch.setenv(KEY_ENV, SECRET)
    flush_test_redis()
    pool = Workers(tmp_path, settings.CELERY_BROKER_URL, "outage", **{KEY_ENV: SECRET})
    lock = RowLock()
    with FakeLLM(latency=0.2) as fake:
        fake.script("gpt", [checklist_reply()])
        yield pool, fake, lock
        lock.close()
        pool.stop_all()
    flush_test_redis()


def _terminate_others(lock: RowLock) -> int:
    """Terminate the worker's sessions on the test database (not this test's two); return how many."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        mine = cur.fetchone()[0]
    with lock.conn.cursor() as cur:
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid() AND pid <> %s",
            (lock.dbname, mine),
        )
        return len(cur.fetchall())


def test_a_store_whose_connection_was_terminated_is_stored_without_calling_again(setup):
    pool, fake, lock = setup
    gate = Gate(checklist_reply())
    fake.script("gpt", [gate])
    worker = pool.start()
    judge = _judge(fake)
    run = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk for _ in range(N)])
    assert wait_for(lambda: fake.in_flight >= N - 1, 120), pool.logs()  # the first call goes alone (Gate)
    lock.hold("judging_judgerun", "id = %s", (run.pk,))  # the store adds to the run's counters: it waits
    fake.script("gpt", [checklist_reply()])
    gate.open()
    assert wait_for(lambda: fake.in_flight == 0 and lock.waiters() >= 1, 60), pool.logs()
    assert _terminate_others(lock) >= 1  # the engine's connection (waiting on the lock) and the sweeper's
    lock.release()

    assert wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, FINISH_WITHIN), (
        list(run.results.values_list("pk", "status", "attempts")), pool.logs()
    )
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (N, 0), run.error
    assert dict(run.results.values_list("pk", "attempts")) == {pk: 1 for pk in run.results.values_list("pk", flat=True)}
    assert JudgeLabel.objects.filter(result__run=run, status="ok").count() == N * 14
    assert fake.calls_total == N  # stored from the replies already paid for
    assert "met an outage" in pool.logs(tail=10**7) and worker.poll() is None

    # The sweeper lost its connection too: it still finds a lost message (a run whose tasks never left).
    lost = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk], start=False)
    JudgeResult.objects.filter(run=lost).update(queued_at=timezone.now() - timedelta(minutes=5))
    assert wait_for(lambda: JudgeRun.objects.get(pk=lost.pk).is_finished, FINISH_WITHIN), pool.logs()
    assert set(lost.results.values_list("status", flat=True)) == {ResultStatus.DONE}


def test_a_killed_workers_rate_limit_slots_are_free_for_the_next_worker(setup):
    """Defect 3: the slots a killed worker held kept a restarted one idle for the lease (300 s)."""
    pool, fake, lock = setup
    gate = Gate(checklist_reply(), free=0)
    fake.script("gpt", [gate])
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    judge = services.judge_create(name="gpt", instrument=amhart, model="openai/gpt", provider="openai",
                                  api_base=fake.base_url, api_key_env=KEY_ENV, max_concurrent=1)
    first = pool.start()
    run = services.judge_run_create(judges=[judge], conversation_ids=[make_conversation().pk for _ in range(N)])
    assert wait_for(lambda: fake.in_flight >= 1, 120), pool.logs()  # it holds the judge's one slot
    pool.kill(first)
    fake.script("gpt", [checklist_reply()])
    gate.open()

    pool.start()
    assert wait_for(lambda: "engine ready" in (pool.tmp_path / "outage1.log").read_text(errors="replace"), 120), pool.logs()
    assert wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, FINISH_WITHIN), (
        list(run.results.values_list("pk", "status", "attempts")), pool.logs()
    )
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (N, 0)

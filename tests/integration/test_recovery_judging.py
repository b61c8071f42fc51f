"""Judge runs under SIGKILL at each phase, on Redis + PostgreSQL: nothing lost, nothing twice.

A worker is stopped at an exact step by a row lock the test holds (its claim, or its store,
waits on it), or in the middle of a slow call, and SIGKILLed there. Its broker messages stay
unacknowledged in Redis for the visibility timeout (an hour): the sweeper (core.recovery) of
the next worker, or of a worker still alive, dispatches the work again within the recovery
threshold (3 s here, ``harness.FAST_RECOVERY``), and the run completes with every label once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from corpus.instruments.services import builtin_instruments_load
from judging import runs, services
from judging.models import JudgeLabel, JudgeResult, JudgeRun, ResultStatus, RunStatus
from tests.integration.harness import Gate, RowLock, Workers, wait_for
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM
from tests.support.redis_lease import flush_test_redis

pytestmark = pytest.mark.integration
# Results per run, sent in messages of GROUP: a worker of concurrency 1 holds one message (four
# results: the first call passes the gate, three are held), the other waits in the queue.
N = 8
GROUP = 4
# From a worker's engine being ready to the run being finished: the recovery threshold, a
# sweep interval, the calls, and room for a loaded two-core machine.
FINISH_WITHIN = 3 + 1 + 20


@pytest.fixture
def setup(transactional_db, tmp_path, monkeypatch) -> Iterator[tuple[Workers, FakeLLM, RowLock]]:  # type: ignore[no-untyped-def]
    from django.conf import settings

    monkeypatch.setenv(KEY_ENV, SECRET)
    flush_test_redis()
    monkeypatch.setattr(settings, "EVALSITE_TASK_GROUP_SIZE", GROUP, raising=False)
    pool = Workers(tmp_path, settings.CELERY_BROKER_URL, "judgefault", EVALSITE_TASK_GROUP_SIZE=str(GROUP), **{KEY_ENV: SECRET})
    lock = RowLock()
    with FakeLLM(latency=0.2) as fake:
        fake.script("gpt", [checklist_reply()])
        yield pool, fake, lock
        lock.close()
        pool.stop_all()
    flush_test_redis()


def _judge(fake: FakeLLM):  # type: ignore[no-untyped-def]
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    return services.judge_create(
        name="gpt", instrument=amhart, model="openai/gpt", provider="openai", api_base=fake.base_url, api_key_env=KEY_ENV,
    )


def _running(run: JudgeRun) -> int:
    return JudgeResult.objects.filter(run=run, status=ResultStatus.RUNNING).count()


def _engine_ready(pool: Workers, n: int) -> bool:
    return (pool.tmp_path / f"{pool.name}{n}.log").read_text(errors="replace").count("engine ready") >= 1


def _finish(pool: Workers, run: JudgeRun, worker_index: int) -> float:
    """Wait for the worker's engine, then for the run to finish; return the seconds it took."""
    assert wait_for(lambda: _engine_ready(pool, worker_index), 120), pool.logs()
    started = time.monotonic()
    finished = wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, FINISH_WITHIN)
    results = JudgeResult.objects.filter(run=run).order_by("pk")
    assert finished, [(r.pk, r.status, r.attempts, r.lease_owner) for r in results] + [pool.logs()]
    return time.monotonic() - started


def _assert_complete(run: JudgeRun, attempts: dict[int, int]) -> None:
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert (run.n_done, run.n_failed) == (N, 0)
    results = JudgeResult.objects.filter(run=run)
    assert set(results.values_list("status", flat=True)) == {ResultStatus.DONE}
    assert dict(results.values_list("pk", "attempts")) == attempts
    # Every label exactly once: 14 items per result, no duplicate and none missing.
    assert JudgeLabel.objects.filter(result__run=run).count() == N * 14
    assert JudgeLabel.objects.filter(result__run=run, status="ok").count() == N * 14


def test_a_worker_killed_after_receiving_tasks_but_before_claiming_them(setup):
    """Phase 1: the messages were delivered (unacknowledged in Redis for an hour), no row claimed."""
    pool, fake, lock = setup
    first = pool.start(concurrency=1)
    run = services.judge_run_create(judges=[_judge(fake)], conversation_ids=[make_conversation().pk for _ in range(N)], start=False)
    ids = list(run.results.order_by("pk").values_list("pk", flat=True))
    assert lock.hold("judging_judgerun", "id = %s", (run.pk,)) == 1  # a claim marks the run started: it waits here
    runs._enqueue(ids)  # outside a transaction: sent at once
    assert wait_for(lambda: lock.waiters() >= 1, 120), pool.logs()
    pool.kill(first)
    lock.release()
    assert list(JudgeResult.objects.filter(run=run).values_list("status", flat=True)) == [ResultStatus.PENDING] * N

    pool.start(concurrency=1)
    _finish(pool, run, 1)
    _assert_complete(run, dict.fromkeys(ids, 1))
    assert fake.calls_total == N  # nothing was paid twice


def test_a_worker_killed_in_the_middle_of_its_calls(setup):
    """Phase 2: three results claimed, their calls in flight when the worker dies."""
    pool, fake, lock = setup
    gate = Gate(checklist_reply())
    fake.script("gpt", [gate])  # every call waits at the fake server until the gate opens
    first = pool.start(concurrency=1)
    run = services.judge_run_create(judges=[_judge(fake)], conversation_ids=[make_conversation().pk for _ in range(N)])
    assert wait_for(lambda: fake.in_flight >= 3, 120), pool.logs()
    # The rest of the group reaches the held server too (at most GROUP; litellm's first call to an endpoint
    # goes alone, the openai SDK's do not): the calls cut short are the results still running.
    assert wait_for(lambda: _running(run) == fake.in_flight, 10), pool.logs()
    pool.kill(first)
    victims = set(JudgeResult.objects.filter(run=run, status=ResultStatus.RUNNING).values_list("pk", flat=True))
    assert 3 <= len(victims) <= GROUP
    fake.script("gpt", [checklist_reply()])
    gate.open()

    pool.start(concurrency=1)
    _finish(pool, run, 1)
    ids = run.results.values_list("pk", flat=True)
    _assert_complete(run, {pk: 2 if pk in victims else 1 for pk in ids})
    assert fake.calls_total == N + len(victims)  # the calls cut short are made again, nothing more


def test_a_worker_killed_after_its_calls_but_before_storing_them(setup):
    """Phase 3: the replies arrived; the store waits on the run's row when the worker dies."""
    pool, fake, lock = setup
    gate = Gate(checklist_reply())
    fake.script("gpt", [gate])
    first = pool.start(concurrency=1)
    run = services.judge_run_create(judges=[_judge(fake)], conversation_ids=[make_conversation().pk for _ in range(N)])
    assert wait_for(lambda: fake.in_flight >= 3, 120), pool.logs()
    assert wait_for(lambda: _running(run) == fake.in_flight, 10), pool.logs()  # the whole group at the server
    victims = set(JudgeResult.objects.filter(run=run, status=ResultStatus.RUNNING).values_list("pk", flat=True))
    assert 3 <= len(victims) <= GROUP
    lock.hold("judging_judgerun", "id = %s", (run.pk,))  # the store adds to the run's counters: it waits
    fake.script("gpt", [checklist_reply()])
    gate.open()
    assert wait_for(lambda: fake.in_flight == 0 and lock.waiters() >= 1, 60), pool.logs()
    pool.kill(first)
    lock.release()
    assert set(JudgeResult.objects.filter(run=run, status=ResultStatus.RUNNING).values_list("pk", flat=True)) == victims
    assert not JudgeLabel.objects.filter(result__in=victims).exists()  # the store was rolled back whole

    pool.start(concurrency=1)
    _finish(pool, run, 1)
    ids = run.results.values_list("pk", flat=True)
    _assert_complete(run, {pk: 2 if pk in victims else 1 for pk in ids})
    assert fake.calls_total == N + len(victims)  # replies lost with the worker are asked for again


def test_a_living_worker_takes_back_what_a_dead_one_held(setup):
    """Defect 2: with one of two workers killed and not restarted, the living one finishes."""
    pool, fake, lock = setup
    gate = Gate(checklist_reply())
    fake.script("gpt", [gate])
    first = pool.start(concurrency=1)
    run = services.judge_run_create(judges=[_judge(fake)], conversation_ids=[make_conversation().pk for _ in range(N + 2)])
    # Three held at the gate (not two plus the free call still passing, which would take the
    # free pass below and finish one of the first worker's units).
    assert wait_for(lambda: gate.held >= 3, 120), pool.logs()
    gate.free = 1  # the second worker's first call builds its client: let it through
    pool.start(concurrency=2)  # takes the results still queued, and has room for a group more
    assert wait_for(lambda: fake.in_flight >= 5, 120), pool.logs()
    victims = set(
        JudgeResult.objects.filter(run=run, status=ResultStatus.RUNNING, lease_owner__regex=rf":{first.pid}[@:]")
        .values_list("pk", flat=True)
    )
    pool.kill(first)
    assert len(victims) == 3
    fake.script("gpt", [checklist_reply()])
    gate.open()
    started = time.monotonic()
    finished = wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, FINISH_WITHIN)
    assert finished, list(run.results.values_list("pk", "status", "attempts")) + [pool.logs()]
    assert time.monotonic() - started < FINISH_WITHIN
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (N + 2, 0)
    attempts = dict(run.results.values_list("pk", "attempts"))
    assert {pk: a for pk, a in attempts.items() if pk in victims} == dict.fromkeys(victims, 2)
    assert JudgeLabel.objects.filter(result__run=run).count() == (N + 2) * 14
    assert fake.calls_total == N + 2 + 3

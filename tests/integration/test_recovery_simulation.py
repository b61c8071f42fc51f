"""Simulation batches under SIGKILL at each phase, on Redis + PostgreSQL: nothing lost or twice.

As for judge runs (``test_recovery_judging``): the worker is stopped at an exact step (its
claim or its message write waits on a row lock the test holds, or its chatbot calls are held
at the fake server) and SIGKILLed. The next worker, or a living one, resumes every
conversation after its last saved message within the recovery threshold: each conversation
ends with its messages 0..n-1 exactly once, and only the calls cut short are made again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from corpus.models import Message, Target
from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from tests.integration.harness import Gate, RowLock, Workers, wait_for
from tests.simulation.sim_setup import KEY_ENV, SECRET, amhart_spec
from tests.support.fake_llm import FakeLLM
from tests.support.redis_lease import flush_test_redis

pytestmark = pytest.mark.integration
# Conversations, sent in messages of GROUP: a worker of concurrency 1 holds one message (three
# conversations), the others wait in the queue.
N = 6
GROUP = 3
MESSAGES = 4  # card, chatbot, persona, chatbot: two chatbot calls and one user-agent call each
FINISH_WITHIN = 3 + 1 + 25


@pytest.fixture
def setup(transactional_db, tmp_path, monkeypatch) -> Iterator[tuple[Workers, FakeLLM, RowLock]]:  # type: ignore[no-untyped-def]
    from django.conf import settings

    monkeypatch.setenv(KEY_ENV, SECRET)
    flush_test_redis()
    monkeypatch.setattr(settings, "EVALSITE_TASK_GROUP_SIZE", GROUP, raising=False)
    pool = Workers(tmp_path, settings.CELERY_BROKER_URL, "simfault", EVALSITE_TASK_GROUP_SIZE=str(GROUP), **{KEY_ENV: SECRET})
    lock = RowLock()
    with FakeLLM(latency=0.1) as fake:
        yield pool, fake, lock
        lock.close()
        pool.stop_all()
    flush_test_redis()


def _batch(fake: FakeLLM, *, dispatch: bool = True) -> SimulationBatch:
    persona_set = builtin_personas_load()
    target = Target.objects.create(
        code="T-FAULT", model="openai/chatbot", api_base=fake.base_url, api_key_env=KEY_ENV,
        params={"temperature": 1.0}, system_prompt="Be supportive.", timeout_seconds=60, max_concurrent=0,
    )
    personas = tuple(persona_set.personas.order_by("position").values_list("pk", flat=True)[:N])
    spec = amhart_spec(fake, persona_set, [target], persona_ids=personas, exchanges=MESSAGES // 2)
    return simulation_batch_create(spec=spec, dispatch=dispatch)


def _engine_ready(pool: Workers, n: int) -> bool:
    return "engine ready" in (pool.tmp_path / f"{pool.name}{n}.log").read_text(errors="replace")


def _saved(run_id: int) -> list[tuple[int, str, str]]:
    run = SimulationRun.objects.get(pk=run_id)
    if run.conversation_id is None:
        return []
    return list(Message.objects.filter(conversation_id=run.conversation_id).order_by("turn_index").values_list("turn_index", "role", "content"))


def _finish_and_check(pool: Workers, batch: SimulationBatch, worker_index: int, attempts: dict[int, int], kept: dict[int, list]) -> None:
    assert wait_for(lambda: _engine_ready(pool, worker_index), 120), pool.logs()
    started = time.monotonic()
    runs = SimulationRun.objects.filter(batch=batch).order_by("pk")
    done = wait_for(lambda: SimulationBatch.objects.get(pk=batch.pk).status == SimulationBatch.Status.FINISHED, FINISH_WITHIN)
    assert done, [(r.pk, r.status, r.messages_done, r.attempts, r.lease_owner) for r in runs] + [pool.logs()]
    assert time.monotonic() - started <= FINISH_WITHIN
    for run in runs.select_related("conversation"):
        saved = _saved(run.pk)
        assert run.status == SimulationRun.Status.DONE, run.error
        assert [i for i, _, _ in saved] == list(range(MESSAGES)), (run.pk, saved)  # each message once
        assert saved[: len(kept.get(run.pk, []))] == kept.get(run.pk, [])  # what was saved stays
        assert run.conversation.integrity_ok is True, run.conversation.integrity_flags
    assert dict(runs.values_list("pk", "attempts")) == attempts


def test_a_worker_killed_after_receiving_conversations_but_before_claiming_them(setup):
    pool, fake, lock = setup
    first = pool.start(concurrency=1)
    batch = _batch(fake, dispatch=False)
    ids = list(batch.runs.order_by("pk").values_list("pk", flat=True))
    assert lock.hold("simulation_simulationrun", "batch_id = %s", (batch.pk,)) == N  # a claim locks its row first
    from simulation.batches import _enqueue

    _enqueue(ids)  # outside a transaction: sent at once
    assert wait_for(lambda: lock.waiters() >= 1, 120), pool.logs()
    pool.kill(first)
    lock.release()
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.QUEUED}

    pool.start(concurrency=1)
    _finish_and_check(pool, batch, 1, dict.fromkeys(ids, 1), {})
    assert fake.calls_total == N * 3  # nothing paid twice


@pytest.mark.parametrize("phase", ["mid-call", "reply not stored"])
def test_a_worker_killed_mid_conversation_is_resumed_after_the_last_saved_message(setup, phase):
    pool, fake, lock = setup
    gate = Gate("Thank you for telling me. How have you been sleeping?")
    fake.script("chatbot", [gate])  # chatbot replies wait at the fake server until the gate opens
    fake.script("persona-agent", ["I barely sleep, maybe four hours."])
    first = pool.start(concurrency=1)
    batch = _batch(fake)
    assert wait_for(lambda: fake.in_flight >= 3, 120), pool.logs()
    victims = set(batch.runs.filter(status=SimulationRun.Status.RUNNING).values_list("pk", flat=True))
    assert len(victims) == 3
    if phase == "reply not stored":
        # The message write is fenced on the run's row: with the rows locked, it waits.
        lock.hold("simulation_simulationrun", "batch_id = %s", (batch.pk,))
        gate.open()
        assert wait_for(lambda: fake.in_flight == 0 and lock.waiters() >= 1, 60), pool.logs()
    pool.kill(first)
    lock.release()
    kept = {pk: _saved(pk) for pk in victims}
    fake.script("chatbot", ["Thank you for telling me. How have you been sleeping?"])
    gate.open()

    pool.start(concurrency=1)
    ids = batch.runs.values_list("pk", flat=True)
    _finish_and_check(pool, batch, 1, {pk: 2 if pk in victims else 1 for pk in ids}, kept)
    # The three chatbot calls cut short (or whose replies were never stored) are made again,
    # and nothing else: three calls per conversation.
    assert fake.calls_total == N * 3 + 3


def test_a_living_worker_takes_back_a_dead_workers_conversations(setup):
    """Defect 2: with one of two workers killed and not restarted, its conversations go on."""
    pool, fake, lock = setup
    gate = Gate("Thank you for telling me. How have you been sleeping?")
    fake.script("chatbot", [gate])
    fake.script("persona-agent", ["I barely sleep, maybe four hours."])
    first = pool.start(concurrency=1)
    batch = _batch(fake)
    # Three held at the gate (not two plus the free call still passing, which would take the
    # free pass below and finish one of the first worker's units).
    assert wait_for(lambda: gate.held >= 3, 120), pool.logs()
    gate.free = 1  # the second worker's first call builds its client: let it through
    pool.start(concurrency=2)
    assert wait_for(lambda: fake.in_flight >= 5, 120), pool.logs()
    victims = set(
        batch.runs.filter(status=SimulationRun.Status.RUNNING, lease_owner__regex=rf":{first.pid}[@:]").values_list("pk", flat=True)
    )
    pool.kill(first)
    assert len(victims) == 3
    kept = {pk: _saved(pk) for pk in victims}
    fake.script("chatbot", ["Thank you for telling me. How have you been sleeping?"])
    gate.open()
    started = time.monotonic()
    done = wait_for(lambda: SimulationBatch.objects.get(pk=batch.pk).status == SimulationBatch.Status.FINISHED, FINISH_WITHIN)
    assert done, list(batch.runs.values_list("pk", "status", "messages_done", "attempts")) + [pool.logs()]
    assert time.monotonic() - started <= FINISH_WITHIN
    for pk in batch.runs.values_list("pk", flat=True):
        saved = _saved(pk)
        assert [i for i, _, _ in saved] == list(range(MESSAGES))
        assert saved[: len(kept.get(pk, []))] == kept.get(pk, [])
    assert {pk: a for pk, a in batch.runs.values_list("pk", "attempts") if pk in victims} == dict.fromkeys(victims, 2)

"""The engine: many calls in flight on one event loop, database steps between loop turns."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
import uuid

import pytest

from simulation.llm import LLMError, ModelSpec, RedisRateLimiter, RetryPolicy, achat, chat
from simulation.llm.engine import Engine, EngineBusy, EngineThread, db, db_batch
from tests.support.fake_llm import FakeLLM, http_429, http_500

from .test_llm import HELLO, KEY_ENV, SECRET, spec_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _close_engines(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Close the engines a test makes (their loops hold litellm's logging task)."""
    made: list[Engine] = []
    real_init = Engine.__init__

    def init(self: Engine) -> None:
        real_init(self)
        made.append(self)

    monkeypatch.setattr(Engine, "__init__", init)
    yield
    for engine in made:
        engine.close()


@pytest.fixture(autouse=True)
def key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def test_a_hundred_calls_are_in_flight_at_once_on_one_thread(fake_llm: FakeLLM) -> None:
    fake_llm.set_latency(0.3)
    spec = spec_for(fake_llm)
    def client_threads() -> int:  # the in-process fake server starts one thread per connection
        return sum(1 for t in threading.enumerate() if "process_request" not in t.name)

    threads_before = client_threads()
    peak_threads = []

    async def one() -> str:
        result = await achat(spec, HELLO)
        peak_threads.append(client_threads())
        return result.content

    engine = Engine()
    engine.run_one(one)  # litellm's first call imports and builds its client: not timed
    fake_llm.reset()
    replies = engine.run([one for _ in range(100)])

    assert len(replies) == 100 and fake_llm.calls_total == 100
    assert fake_llm.max_in_flight >= 50  # they overlap: not one after the other (bench/ measures speed)
    # litellm's own small helper pool aside, no thread is started per call.
    assert max(peak_threads) - threads_before < 20


def test_achat_retries_like_chat_without_blocking_the_loop(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_500(), http_429(retry_after=0.01), "ok"])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    result = Engine().run_one(lambda: achat(spec_for(fake_llm), HELLO, retry=RetryPolicy(base_delay=0.01), sleep=sleep))
    assert (result.content, result.attempts) == ("ok", 3) and len(waits) == 2
    with pytest.raises(LLMError) as caught:
        fake_llm.script("chatbot-a", [http_500()])
        Engine().run_one(lambda: achat(spec_for(fake_llm), HELLO, retry=RetryPolicy(max_attempts=2, base_delay=0.01)))
    assert caught.value.kind == "server_error" and SECRET not in str(caught.value)


def test_database_steps_run_in_the_driving_thread_in_order_and_batched() -> None:
    from django.contrib.auth.models import Group

    seen: list[tuple[str, int]] = []
    batches: list[list[int]] = []

    def step(name: str) -> int:
        seen.append((name, threading.get_ident()))
        return Group.objects.create(name=name).pk

    def many(items: list[int]) -> list[object]:
        batches.append(items)
        return [ValueError("odd") if item % 2 else item * 10 for item in items]

    async def job(i: int) -> tuple[int, object]:
        pk = await db(step, f"group-{i}")
        try:
            value = await db_batch(many, i)
        except ValueError as exc:
            value = str(exc)
        return pk, value

    engine = Engine()
    results = engine.run([lambda i=i: job(i) for i in range(6)])

    assert {tid for _, tid in seen} == {threading.get_ident()}
    assert Group.objects.filter(name__startswith="group-").count() == 6  # the test's own connection
    assert [value for _, value in results] == [0, "odd", 20, "odd", 40, "odd"]
    assert len(batches) == 1 and sorted(batches[0]) == list(range(6))


def test_a_job_may_not_drive_another_engine_on_its_thread() -> None:
    engine = Engine()

    async def nested() -> None:
        engine.run([lambda: asyncio.sleep(0)])

    with pytest.raises(EngineBusy):
        engine.run_one(nested)


def test_the_engine_thread_runs_jobs_submitted_from_other_threads(fake_llm: FakeLLM) -> None:
    fake_llm.set_latency(0.2)
    spec = spec_for(fake_llm)
    engine = EngineThread()
    try:
        outcomes: list[str] = []

        def task() -> None:  # what a Celery task of the threads pool does
            outcomes.append(engine.call(lambda: achat(spec, HELLO)).content)

        threads = [threading.Thread(target=task) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The calls overlapped on the one loop (no wall-time bound: a loaded machine is slow,
        # not wrong).
        assert len(outcomes) == 20
        assert fake_llm.max_in_flight >= 10
    finally:
        engine.stop()


def test_a_group_of_jobs_runs_together_and_one_failure_does_not_hide_the_others(fake_llm: FakeLLM) -> None:
    fake_llm.set_latency(0.2)
    spec = spec_for(fake_llm)
    engine = EngineThread()

    async def broken() -> str:
        raise ValueError("this job fails")

    try:
        async def ok() -> str:
            return (await achat(spec, HELLO)).content

        outcomes = engine.call_many([ok] * 6 + [broken] + [ok] * 5)
        assert isinstance(outcomes[6], ValueError)
        assert all(isinstance(o, str) for i, o in enumerate(outcomes) if i != 6)
        assert fake_llm.max_in_flight >= 10  # the group was in flight at once (up to the model's limit)
    finally:
        engine.stop()


def test_redis_limits_hold_across_engines(fake_llm: FakeLLM, redis_url: str) -> None:
    prefix = f"evalsite-test:{uuid.uuid4().hex}"
    fake_llm.set_latency(0.15)
    spec = spec_for(fake_llm)
    limiters = [RedisRateLimiter(redis_url, max_concurrent=2, prefix=prefix) for _ in range(2)]

    def engine_of(limiter: RedisRateLimiter) -> None:
        Engine().run([lambda: achat(spec, HELLO, limiter=limiter) for _ in range(4)])

    threads = [threading.Thread(target=engine_of, args=(limiter,)) for limiter in limiters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_llm.calls_total == 8 and fake_llm.max_in_flight == 2
    assert limiters[0].in_flight(spec.rate_key) == 0


def _child_calls(base_url: str, n: int) -> int:
    spec = ModelSpec(model="openai/chatbot-a", api_base=base_url, api_key_env=KEY_ENV, timeout=5)
    errors = 0
    for _ in range(n):
        try:
            chat(spec, [{"role": "user", "content": "x " * 2000}], retry=RetryPolicy(max_attempts=1))
        except LLMError:
            errors += 1
    return errors


def test_forked_children_do_not_share_the_parents_connections(fake_llm: FakeLLM) -> None:
    """Two processes writing one inherited socket garbled requests ("Body is not JSON", 400)."""
    chat(spec_for(fake_llm), HELLO)  # the parent opens a keep-alive connection first
    with multiprocessing.get_context("fork").Pool(2) as pool:
        errors = pool.starmap(_child_calls, [(fake_llm.base_url, 40)] * 2)
    assert errors == [0, 0]
    assert not [r for r in fake_llm.requests if not r.body.get("messages")]
    assert os.getpid()


def test_the_fake_server_accepts_a_burst_of_new_connections(fake_llm: FakeLLM) -> None:
    import socket

    socks = [socket.create_connection(("127.0.0.1", fake_llm.port), timeout=2) for _ in range(200)]
    for s in socks:
        s.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the thread dies on purpose
def test_tasks_waiting_on_a_dead_engine_thread_fail_instead_of_hanging() -> None:
    engine = EngineThread()

    def boom() -> None:
        raise KeyboardInterrupt  # anything that stops the driver, not a job's exception

    async def slow() -> None:
        await asyncio.sleep(5)

    errors: list[BaseException] = []

    def task() -> None:
        try:
            engine.call(slow)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    waiter = threading.Thread(target=task)
    waiter.start()
    time.sleep(0.2)
    engine.engine.loop.call_soon_threadsafe(lambda: engine.engine._steps.append((boom, (), {}, engine.engine.loop.create_future())))
    engine.engine.loop.call_soon_threadsafe(engine.engine._signal)
    waiter.join(timeout=5)
    engine.thread.join(timeout=5)  # its death is reported (and filtered) within this test
    assert not waiter.is_alive() and errors and "engine thread stopped" in str(errors[0])


def test_the_request_hash_is_the_sha256_of_one_canonical_json() -> None:
    """Cache keys stored before the hash was computed part by part stay valid."""
    import hashlib
    import json

    from simulation.llm import request_hash

    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"b": 1, "a": [2, {"z": "é"}]}}}
    for response_format in (fmt, fmt, None):
        args = dict(model="openai/x", api_base="http://h/v1", params={"temperature": 0.5, "b": [1]},
                    messages=[{"role": "user", "content": "ünïcode {braces}"}], response_format=response_format)
        whole = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        assert request_hash(**args) == hashlib.sha256(whole.encode("utf-8")).hexdigest()

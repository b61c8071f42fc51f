"""Redis going away is an outage, not a failure: limits wait through it; a dead process's slots come back.

Each test runs its own redis-server (``PrivateRedis``) and stops it for real: the limiter's
client meets a refused connection, as a worker does during a Redis restart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from simulation.llm import ModelSpec, RedisRateLimiter, achat
from simulation.llm.engine import run_jobs
from simulation.llm.ratelimit import release_dead_holders
from tests.integration.harness import PrivateRedis, wait_for
from tests.support.fake_llm import FakeLLM

KEY_ENV = "TEST_OUTAGE_API_KEY"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_server(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, "sk-outage-0123456789")
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def _spec(fake: FakeLLM) -> ModelSpec:
    return ModelSpec(model="openai/chatbot", api_base=fake.base_url, api_key_env=KEY_ENV, timeout=5)


def test_a_call_waits_through_a_redis_outage_of_its_limiter_and_goes_out_once(redis_server, fake_llm, settings):
    settings.EVALSITE_OUTAGE_SECONDS = 30
    fake_llm.script("chatbot", ["Hello."])
    limiter = RedisRateLimiter(redis_server.url, max_concurrent=2, prefix=f"evalsite-test:{uuid.uuid4().hex}")
    call = lambda: achat(_spec(fake_llm), [{"role": "user", "content": "hi"}], limiter=limiter)  # noqa: E731
    run_jobs([call])  # a worker at work (litellm imported, the limiter used)
    redis_server.stop()
    threading.Timer(1.5, redis_server.start).start()  # back after a second and a half

    started = time.monotonic()
    result = run_jobs([call])[0]

    assert result.content == "Hello." and fake_llm.calls_total == 2
    assert time.monotonic() - started >= 1.0  # it waited for Redis, then called
    assert limiter.in_flight("openai/chatbot@" + fake_llm.base_url) == 0  # and gave the slot back


def test_a_release_during_an_outage_is_sent_once_redis_is_back(redis_server, settings):
    settings.EVALSITE_OUTAGE_SECONDS = 30
    limiter = RedisRateLimiter(redis_server.url, max_concurrent=1, prefix=f"evalsite-test:{uuid.uuid4().hex}")
    assert limiter.try_acquire("m")
    redis_server.stop()
    limiter.release("m")  # Redis is away: no error, the release waits
    redis_server.start()  # a restart without persistence forgets every lease anyway
    assert limiter.try_acquire("m") and limiter.in_flight("m") == 1
    limiter.release("m")
    assert limiter.in_flight("m") == 0


def _holder(url: str, prefix: str) -> subprocess.Popen[str]:
    """Start a process that takes the one slot of model "m", says so, and keeps it (renewing its lease)."""
    code = (
        "import sys, time; from simulation.llm.ratelimit import RedisRateLimiter;"
        f"l = RedisRateLimiter({url!r}, max_concurrent=1, lease_seconds=0.6, prefix={prefix!r});"
        "l.acquire('m'); print('held', flush=True); time.sleep(120)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings.test"}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_living_holder_keeps_its_slot_past_the_lease_and_a_killed_one_frees_it(redis_server):
    prefix = f"evalsite-test:{uuid.uuid4().hex}"
    mine = RedisRateLimiter(redis_server.url, max_concurrent=1, lease_seconds=0.6, prefix=prefix)
    holder = _holder(redis_server.url, prefix)
    try:
        time.sleep(1.5)  # more than twice its lease: renewed while the process lives
        assert not mine.try_acquire("m")
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        started = time.monotonic()
        assert wait_for(lambda: mine.try_acquire("m"), 5, every=0.05)  # its lease runs out, not renewed
        assert time.monotonic() - started < 1.5
    finally:
        if holder.poll() is None:
            holder.kill()


def test_the_sweep_frees_a_killed_process_slots_at_once(redis_server):
    prefix = "evalsite:ratelimit:judging"
    mine = RedisRateLimiter(redis_server.url, max_concurrent=1, lease_seconds=60, prefix=prefix)
    holder = _holder(redis_server.url, prefix)
    try:
        assert not mine.try_acquire("m")
        assert release_dead_holders(redis_server.url) == 0  # alive: kept
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert release_dead_holders(redis_server.url) == 1  # what every worker's sweep does
        assert mine.try_acquire("m")
    finally:
        if holder.poll() is None:
            holder.kill()

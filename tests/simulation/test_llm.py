"""simulation.llm against the local fake server, through litellm's real HTTP path."""

from __future__ import annotations

import json
import logging
import pickle
import threading
import time
import urllib.request
import uuid
from typing import Any

import pytest

from simulation.llm import (
    DictCache,
    LLMError,
    LocalRateLimiter,
    ModelSpec,
    RedisRateLimiter,
    RetryPolicy,
    chat,
    limiter_for,
    retry_after_seconds,
)
from tests.support.fake_llm import (
    FakeLLM,
    empty_content,
    http_400,
    http_429,
    http_500,
    malformed_json,
    raw,
    timeout,
)

# Until tests/conftest.py registers tests.support.fixtures as a plugin, expose the fixture here.

KEY_ENV = "TEST_LLM_API_KEY"
SECRET = "sk-test-0123456789-do-not-leak"
HELLO = [{"role": "user", "content": "I have not slept for three nights"}]
FAST = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.05)


@pytest.fixture(autouse=True)
def key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def spec_for(fake: FakeLLM, model: str = "openai/chatbot-a", **kwargs) -> ModelSpec:  # type: ignore[no-untyped-def]
    kwargs.setdefault("api_key_env", KEY_ENV)
    kwargs.setdefault("timeout", 5)
    return ModelSpec(model=model, api_base=fake.base_url, **kwargs)


class Sleeps(list[float]):
    """A sleep function that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# -- plain calls -------------------------------------------------------------------------------


def test_a_plain_reply_records_content_tokens_and_latency(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", ["That sounds exhausting. What keeps you awake?"])

    result = chat(spec_for(fake_llm), HELLO)

    assert result.content == "That sounds exhausting. What keeps you awake?"
    assert result.model == "chatbot-a"
    assert result.prompt_tokens == 7
    assert result.completion_tokens == 7
    assert result.latency_ms > 0
    assert result.attempts == 1
    assert result.cached is False
    assert result.cost_usd is None  # an unknown model has no price, and that is not an error
    assert len(result.request_hash) == 64


def test_an_unscripted_model_echoes_the_last_user_message(fake_llm: FakeLLM) -> None:
    result = chat(spec_for(fake_llm, model="openai/anything"), HELLO)

    assert result.content == "[anything] reply to: I have not slept for three nights"


def test_a_known_model_is_priced(fake_llm: FakeLLM) -> None:
    result = chat(spec_for(fake_llm, model="openai/gpt-4o-mini"), HELLO)

    assert result.cost_usd is not None and result.cost_usd > 0


def test_the_request_carries_messages_params_and_the_json_schema(fake_llm: FakeLLM) -> None:
    schema = {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "schema": {"type": "object", "properties": {"label": {"type": "string"}}},
        },
    }
    spec = spec_for(fake_llm, params={"temperature": 0.2, "max_tokens": 64, "top_p": 0.9})

    result = chat(spec, HELLO, response_format=schema)

    body = fake_llm.requests[-1].body
    assert body["messages"] == HELLO
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.2, 64, 0.9)
    assert body["response_format"] == schema
    assert result.params == {"temperature": 0.2, "max_tokens": 64, "top_p": 0.9}


def test_params_may_not_smuggle_a_key_or_override_the_call() -> None:
    with pytest.raises(ValueError, match="api_key"):
        ModelSpec(model="openai/x", params={"api_key": "sk-oops"})


# -- retries -----------------------------------------------------------------------------------


def test_a_429_is_retried_after_at_least_its_retry_after(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_429(retry_after=3), "ok"])
    sleeps = Sleeps()

    retry = RetryPolicy(base_delay=0.01, max_delay=30)
    result = chat(spec_for(fake_llm), HELLO, retry=retry, sleep=sleeps)

    assert result.content == "ok"
    assert result.attempts == 2
    assert len(sleeps) == 1 and sleeps[0] >= 3.0  # the floor wins over a 0.01 s backoff


def test_a_retry_after_longer_than_twice_max_delay_is_capped(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_429(retry_after=600), "ok"])
    sleeps = Sleeps()

    chat(spec_for(fake_llm), HELLO, retry=RetryPolicy(max_delay=10), sleep=sleeps)

    assert sleeps == [20.0]


def test_retry_after_is_read_in_milliseconds_seconds_or_as_a_date() -> None:
    from email.utils import formatdate

    import httpx

    def error_with(headers: dict[str, str]) -> Exception:
        error = Exception("429")
        error.response = httpx.Response(429, headers=headers)  # type: ignore[attr-defined]
        return error

    assert retry_after_seconds(error_with({"retry-after-ms": "1500", "Retry-After": "2"})) == 1.5
    assert retry_after_seconds(error_with({"Retry-After": "7"})) == 7.0
    in_ten = retry_after_seconds(error_with({"Retry-After": formatdate(time.time() + 10)}))
    assert in_ten is not None and 8 < in_ten <= 10
    assert retry_after_seconds(error_with({})) is None


def test_two_server_errors_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_500(), http_500(), "ok"])
    sleeps = Sleeps()

    result = chat(spec_for(fake_llm), HELLO, retry=FAST, sleep=sleeps)

    assert (result.content, result.attempts) == ("ok", 3)
    assert fake_llm.calls("chatbot-a") == 3  # neither litellm nor the openai SDK retried
    assert len(sleeps) == 2 and all(0 <= s <= 0.05 for s in sleeps)


def test_a_timeout_then_success(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [timeout(2), "ok"])

    started = time.perf_counter()
    result = chat(spec_for(fake_llm, timeout=0.5), HELLO, retry=FAST, sleep=Sleeps())

    assert (result.content, result.attempts) == ("ok", 2)
    assert time.perf_counter() - started < 1.9


def test_retries_run_out_with_the_last_kind(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_500()])

    with pytest.raises(LLMError) as caught:
        chat(spec_for(fake_llm), HELLO, retry=RetryPolicy(max_attempts=3), sleep=Sleeps())

    assert (caught.value.kind, caught.value.attempts, caught.value.retryable) == (
        "server_error",
        3,
        True,
    )
    assert fake_llm.calls("chatbot-a") == 3


def test_a_bad_request_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [http_400("max_tokens is too large")])
    sleeps = Sleeps()

    with pytest.raises(LLMError) as caught:
        chat(spec_for(fake_llm), HELLO, sleep=sleeps)

    assert (caught.value.kind, caught.value.attempts, caught.value.status_code) == (
        "bad_request",
        1,
        400,
    )
    assert "max_tokens is too large" in str(caught.value)
    assert fake_llm.calls("chatbot-a") == 1 and sleeps == []


def test_an_unknown_model_is_not_retried(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [raw(404, {"error": {"message": "no such model"}})])

    with pytest.raises(LLMError) as caught:
        chat(spec_for(fake_llm), HELLO, sleep=Sleeps())

    assert (caught.value.kind, caught.value.attempts) == ("bad_request", 1)


def test_empty_content_is_retried_and_then_reported(fake_llm: FakeLLM) -> None:
    fake_llm.script("chatbot-a", [empty_content(), "ok"])
    assert chat(spec_for(fake_llm), HELLO, retry=FAST, sleep=Sleeps()).attempts == 2

    fake_llm.script("chatbot-a", [empty_content()])
    with pytest.raises(LLMError) as caught:
        chat(spec_for(fake_llm), HELLO, retry=RetryPolicy(max_attempts=2), sleep=Sleeps())
    assert (caught.value.kind, caught.value.attempts) == ("empty", 2)


def test_malformed_json_is_returned_for_the_judge_to_reject(fake_llm: FakeLLM) -> None:
    fake_llm.script("judge", [malformed_json()])

    result = chat(spec_for(fake_llm, model="openai/judge"), HELLO)

    with pytest.raises(json.JSONDecodeError):
        json.loads(result.content)


def test_llm_errors_survive_pickling() -> None:
    error = LLMError("m: timeout", kind="timeout", retryable=True, attempts=4, status_code=408)

    copy = pickle.loads(pickle.dumps(error))

    assert (str(copy), copy.kind, copy.retryable, copy.attempts) == (
        "m: timeout",
        "timeout",
        True,
        4,
    )


# -- cache -------------------------------------------------------------------------------------


def test_a_cache_hit_makes_no_http_call(fake_llm: FakeLLM) -> None:
    cache = DictCache()
    spec = spec_for(fake_llm, params={"temperature": 0})
    first = chat(spec, HELLO, cache=cache)

    second = chat(spec, HELLO, cache=cache)

    assert fake_llm.calls_total == 1
    assert second.content == first.content
    assert (second.cached, second.attempts, second.latency_ms) == (True, 0, 0.0)
    assert second.request_hash == first.request_hash
    other = chat(spec, [{"role": "user", "content": "something else"}], cache=cache)
    assert other.cached is False and fake_llm.calls_total == 2


# -- secrets -----------------------------------------------------------------------------------


def test_the_key_is_sent_as_a_bearer_token_and_never_kept_or_logged(
    fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    rejection = {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "auth"}}
    fake_llm.script("chatbot-a", ["ok", raw(401, rejection)])
    spec = spec_for(fake_llm)

    result = chat(spec, HELLO)
    with pytest.raises(LLMError) as caught:
        chat(spec, HELLO, sleep=Sleeps())

    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert caught.value.kind == "auth" and caught.value.attempts == 1
    assert SECRET not in repr(result) and SECRET not in repr(spec)
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # not chained
    logged = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    assert any("simulation.llm" == r.name for r in caplog.records)
    assert not [line for line in logged if SECRET in line]


def test_a_missing_key_variable_fails_before_any_call(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)

    with pytest.raises(LLMError, match=KEY_ENV) as caught:
        chat(spec_for(fake_llm), HELLO)

    assert caught.value.kind == "auth"
    assert fake_llm.calls_total == 0


def test_no_key_at_all_is_an_auth_error_not_a_retried_server_error(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sleeps = Sleeps()

    with pytest.raises(LLMError) as caught:
        chat(spec_for(fake_llm, api_key_env=""), HELLO, sleep=sleeps)

    assert (caught.value.kind, caught.value.attempts, sleeps) == ("auth", 1, [])


# -- rate limiting -----------------------------------------------------------------------------


def run_in_threads(count: int, work) -> None:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []

    def target(index: int) -> None:
        try:
            work(index)
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert not errors, errors


def test_the_local_limiter_caps_concurrent_calls(fake_llm: FakeLLM) -> None:
    fake_llm.set_latency(0.1)
    limiter = LocalRateLimiter(max_concurrent=3)
    spec = spec_for(fake_llm)

    run_in_threads(9, lambda i: chat(spec, HELLO, limiter=limiter))

    assert fake_llm.calls_total == 9
    assert fake_llm.max_in_flight == 3


def test_the_local_limiter_caps_requests_per_minute() -> None:
    limiter = LocalRateLimiter(requests_per_minute=2)

    granted = [limiter.try_acquire("m") for _ in range(3)]

    assert granted == [True, True, False]
    assert limiter.try_acquire("another-model") is True




def test_redis_limiters_share_one_concurrency_cap(fake_llm: FakeLLM, redis_url: str) -> None:
    prefix = f"evalsite-test:{uuid.uuid4().hex}"
    limiters = [RedisRateLimiter(redis_url, max_concurrent=2, prefix=prefix) for _ in range(2)]
    fake_llm.set_latency(0.15)
    spec = spec_for(fake_llm)

    run_in_threads(6, lambda i: chat(spec, HELLO, limiter=limiters[i % 2]))

    assert fake_llm.calls_total == 6
    assert fake_llm.max_in_flight == 2
    assert limiters[0].in_flight(spec.rate_key) == 0


# A dead worker's slots: tests/simulation/test_outages.py kills a real holder process (its
# lease, no longer renewed, runs out; a sweep frees it at once).


def test_redis_limiters_share_a_requests_per_minute_window(redis_url: str) -> None:
    prefix = f"evalsite-test:{uuid.uuid4().hex}"
    first, second = (
        RedisRateLimiter(redis_url, requests_per_minute=3, prefix=prefix) for _ in range(2)
    )

    granted = [first.try_acquire("m"), second.try_acquire("m"), first.try_acquire("m")]

    assert granted == [True, True, True]
    assert second.try_acquire("m") is False


def test_limiter_for_picks_redis_only_when_redis_is_configured(
    settings: Any, redis_url: str
) -> None:
    name = f"test-{uuid.uuid4().hex}"
    settings.REDIS_URL = ""
    local = limiter_for(name, 4, 60)
    assert isinstance(local, LocalRateLimiter)
    assert limiter_for(name, 4, 60) is local

    settings.REDIS_URL = redis_url
    assert isinstance(limiter_for(f"{name}-r", 4, 60), RedisRateLimiter)


# -- the fake server itself --------------------------------------------------------------------


def post(fake: FakeLLM, model: str, text: str = "hi") -> dict:  # type: ignore[type-arg]
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(
        f"{fake.base_url}/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def test_the_fake_counts_peak_concurrency(fake_llm: FakeLLM) -> None:
    fake_llm.set_latency(0.2, model="slow")

    run_in_threads(5, lambda i: post(fake_llm, "slow"))
    post(fake_llm, "fast")
    post(fake_llm, "fast")

    assert fake_llm.max_in_flight == 5
    assert fake_llm.calls_by_model == {"slow": 5, "fast": 2}
    assert fake_llm.calls_total == 7 and fake_llm.in_flight == 0


def test_the_fake_plays_its_script_in_order_then_repeats_the_last_reply(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        "openai/m", ["one", lambda body: body["messages"][-1]["content"].upper(), "last"]
    )

    replies = [post(fake_llm, "m", "two")["choices"][0]["message"]["content"] for _ in range(4)]

    assert replies == ["one", "TWO", "last", "last"]
    with urllib.request.urlopen(f"{fake_llm.base_url}/models", timeout=5) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["m"]
    fake_llm.reset()
    assert (
        fake_llm.requests == []
        and post(fake_llm, "m", "x")["choices"][0]["message"]["content"] == "[m] reply to: x"
    )

"""simulation.llm.direct: OpenAI-compatible servers called with the openai SDK itself (issue 32).

Each test runs the same call through litellm (``EVALSITE_LLM_DIRECT=0``) and through the direct
path, against the local fake server, and compares what the app keeps: content, tokens, cost
(litellm's price table), the error's kind and Retry-After, the outbound policy.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.http_policy import OutboundRefused
from simulation.llm import LLMError, ModelSpec, RetryPolicy, achat, direct, prepare_call
from tests.support.fake_llm import FakeLLM, http_429, http_500, raw, timeout
from tests.support.loops import run_closing

KEY_ENV = "TEST_LLM_API_KEY"
HELLO = [{"role": "user", "content": "I have not slept for three nights"}]
ONCE = RetryPolicy(max_attempts=1)
PATHS = ["litellm", "direct"]


@pytest.fixture(autouse=True)
def key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789-direct")


def _spec(fake: FakeLLM, model: str = "openai/chatbot-a", **kwargs: Any) -> ModelSpec:
    kwargs.setdefault("api_key_env", KEY_ENV)
    kwargs.setdefault("timeout", 5)
    return ModelSpec(model=model, api_base=fake.base_url, **kwargs)


def _run(monkeypatch: pytest.MonkeyPatch, path: str, spec: ModelSpec, retry: RetryPolicy = ONCE) -> Any:
    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "1" if path == "direct" else "0")

    async def call() -> Any:
        try:
            return await achat(spec, HELLO, retry=retry)
        except (LLMError, OutboundRefused) as exc:
            return exc

    return run_closing(call())


def test_the_direct_path_is_taken_only_where_litellm_would_add_nothing(fake_llm: FakeLLM, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "1")
    assert direct.eligible(prepare_call(_spec(fake_llm, params={"temperature": 0, "seed": 3}), HELLO))
    assert not direct.eligible(prepare_call(_spec(fake_llm, params={"top_k": 5}), HELLO))  # litellm maps it
    assert not direct.eligible(prepare_call(ModelSpec(model="openai/gpt-4o", api_key_env=KEY_ENV), HELLO))  # no api_base
    assert not direct.eligible(prepare_call(_spec(fake_llm, model="hosted_vllm/chatbot-a"), HELLO))
    assert not direct.eligible(prepare_call(_spec(fake_llm, api_key_env=""), HELLO))  # no key: litellm's rules
    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "0")
    assert not direct.eligible(prepare_call(_spec(fake_llm), HELLO))


def test_the_direct_path_makes_no_litellm_call(fake_llm: FakeLLM, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import litellm

    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("litellm.acompletion was called on the direct path")

    monkeypatch.setattr(litellm, "acompletion", refuse)
    result = _run(monkeypatch, "direct", _spec(fake_llm))
    assert result.content == "[chatbot-a] reply to: I have not slept for three nights"


@pytest.mark.parametrize("model, params", [
    ("openai/chatbot-a", {}),  # not in the price table: no cost, never 0
    ("openai/gpt-4o-mini", {}),
    ("openai/gpt-4o", {"temperature": 0.2, "max_tokens": 50}),
    ("openai/chatbot-a", {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}),  # a custom price
])
def test_a_reply_gives_the_same_content_tokens_and_cost_on_both_paths(fake_llm: FakeLLM, monkeypatch, model, params) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script(model.split("/", 1)[1], ["That sounds exhausting. What keeps you awake at night?"])
    a, b = (_run(monkeypatch, path, _spec(fake_llm, model=model, params=params)) for path in PATHS)
    assert (a.content, a.model, a.prompt_tokens, a.completion_tokens) == (b.content, b.model, b.prompt_tokens, b.completion_tokens)
    if a.cost_usd is None:
        assert b.cost_usd is None and model == "openai/chatbot-a" and not params
    else:
        assert b.cost_usd == pytest.approx(a.cost_usd, rel=1e-12) and b.cost_usd > 0
    sent = [r.body for r in fake_llm.requests]
    assert sent[0] == sent[1]  # the same request body on the wire


@pytest.mark.parametrize("fault, kind", [(http_429(2.0), "rate_limited"), (http_500(), "server_error"),
                                         (timeout(3.0), "timeout"), (raw(404, {"error": {"message": "no such model"}}), "bad_request")])
def test_a_fault_gives_the_same_error_on_both_paths(fake_llm: FakeLLM, monkeypatch, fault, kind) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script("chatbot-a", [fault])
    errors = [_run(monkeypatch, path, _spec(fake_llm, timeout=1)) for path in PATHS]
    assert all(isinstance(e, LLMError) for e in errors), errors
    assert [e.kind for e in errors] == [kind, kind]
    assert errors[0].retryable == errors[1].retryable
    if kind == "timeout":  # no HTTP answer: litellm labels it 408, the SDK reports no status
        assert errors[1].status_code is None
    else:
        assert errors[0].status_code == errors[1].status_code


def test_a_redirect_is_refused_on_the_direct_path(fake_llm: FakeLLM, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script("chatbot-a", [raw(302, "", {"Location": "http://127.0.0.1:9/elsewhere"})])
    result = _run(monkeypatch, "direct", _spec(fake_llm))
    assert isinstance(result, (LLMError, OutboundRefused)) and "redirect" in str(result).lower()
    assert fake_llm.calls_total == 1  # the redirect was not followed


def test_the_direct_path_sends_through_aiohttp_and_the_engine_closes_its_sessions(fake_llm: FakeLLM, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # httpx's own pool costs 20 ms of CPU per call at 100 in flight; the direct path sends as
    # litellm does, over litellm's aiohttp transport, and the engine closes those sessions with
    # its loop (an aiohttp session left open logs "Unclosed client session").
    import aiohttp

    from simulation.llm.engine import Engine

    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "1")
    sent: list[str] = []
    original = aiohttp.ClientSession._request

    async def recording(self, method, url, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(str(url))
        return await original(self, method, url, *args, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", recording)
    engine = Engine()
    result = engine.run_one(lambda: achat(_spec(fake_llm), HELLO, retry=ONCE))
    assert result.content == "[chatbot-a] reply to: I have not slept for three nights"
    assert sent == [f"{fake_llm.base_url}/chat/completions"]
    clients = list(direct._clients[engine.loop].values())
    sessions = [client._client._transport.client for client in clients]
    assert sessions and not any(session.closed for session in sessions)
    engine.close()
    assert all(session.closed for session in sessions)
    assert engine.loop not in direct._clients

"""Finding 1 (high): a redirect carried the API key and the transcript to a host nobody allowed.

For each provider family litellm routes (OpenAI-compatible, Anthropic, Gemini, Vertex AI, Azure,
Mistral, Bedrock, Ollama and litellm's raw-aiohttp OpenAI route), a chatbot's base URL points at a local server that
answers every request with a redirect to a second local server, which records what it gets.
Through the real path (``simulation.llm.chat``/``achat`` -> litellm -> its own HTTP clients;
nothing mocked) the second server must receive nothing at all: no key, no transcript. The call
fails with kind ``redirect`` in the app's own words, and is not retried.
"""

from __future__ import annotations

import json

import pytest

from simulation.http_target import http_chat
from simulation.llm import LLMError, ModelSpec, achat, chat
from simulation.llm.client import NO_RETRY, RetryPolicy
from tests.support.loops import run_closing
from tests.support.redirecting import RedirectPair, Server

KEY = "sk-evalsite-redirect-test-7f3a9c1e5b"
TRANSCRIPT = "I have not slept for days and my chest is tight"
MESSAGES = [{"role": "user", "content": TRANSCRIPT}]

# family -> (model, path after the base URL's origin, extra environment the family needs)
FAMILIES: dict[str, tuple[str, str, dict[str, str]]] = {
    "openai-compatible": ("openai/chatbot", "/v1", {}),
    "anthropic": ("anthropic/claude-3-5-sonnet-20240620", "", {}),
    "gemini": ("gemini/gemini-1.5-flash", "", {}),
    "azure": ("azure/chatbot-deployment", "", {"AZURE_API_VERSION": "2024-02-01"}),
    "mistral": ("mistral/mistral-small-latest", "/v1", {}),
    "bedrock": ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", "", {
        "AWS_ACCESS_KEY_ID": "AKIAEVALSITETESTKEY1", "AWS_SECRET_ACCESS_KEY": KEY, "AWS_REGION_NAME": "us-east-1",
    }),
    "vertex_ai": ("vertex_ai/gemini-1.5-flash", "", {"VERTEXAI_PROJECT": "evalsite-test", "VERTEXAI_LOCATION": "us-central1"}),
    "ollama": ("ollama/llama3", "", {}),
    "ollama_chat": ("ollama_chat/llama3", "", {}),
    "aiohttp_openai": ("aiohttp_openai/chatbot", "/v1", {}),
}


@pytest.fixture
def provider_env(monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("REDIRECT_TEST_API_KEY", KEY)
    # vertex_ai/ signs in with a service account: its token endpoint is a local server too.
    token_server = Server(lambda path: (200, {"Content-Type": "application/json"},
                                         b'{"access_token": "ya29.evalsite-test", "expires_in": 3600, "token_type": "Bearer"}'))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_service_account(tmp_path, token_server.origin + "/token")))

    def apply(extra: dict[str, str]) -> None:
        for name, value in extra.items():
            monkeypatch.setenv(name, value)

    yield apply
    token_server.stop()


def _service_account(folder, token_uri: str):  # type: ignore[no-untyped-def]
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path = folder / "service-account.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "evalsite-test", "private_key_id": "k1", "private_key": key,
        "client_email": "tests@evalsite-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri,
    }))
    return path


def _spec(family: str, pair: RedirectPair) -> ModelSpec:
    model, path, _ = FAMILIES[family]
    # Bedrock signs with the AWS variables, Vertex with its service account; the others take the key variable.
    key_env = "" if family in ("bedrock", "vertex_ai") else "REDIRECT_TEST_API_KEY"
    return ModelSpec(model=model, api_base=pair.redirector.origin + path, api_key_env=key_env, timeout=10)


def _assert_nothing_left(pair: RedirectPair, caught: LLMError) -> None:
    assert pair.redirector.received, "the call never reached the allowed endpoint"
    assert pair.recorder.received == [], [(r.method, r.path, sorted(r.headers)) for r in pair.recorder.received]
    assert caught.kind == "redirect" and not caught.retryable and caught.status_code == pair.status
    text = str(caught)
    assert str(pair.recorder.port) not in text and KEY not in text  # neither where it pointed, nor the key


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_redirect_is_not_followed_by_any_provider_family(family, provider_env):
    provider_env(FAMILIES[family][2])
    with RedirectPair(307) as pair:
        with pytest.raises(LLMError) as caught:
            chat(_spec(family, pair), MESSAGES, retry=RetryPolicy(max_attempts=3, base_delay=0, jitter=False))
        assert len(pair.redirector.received) == 1  # refused once, not retried
    _assert_nothing_left(pair, caught.value)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_redirect_is_not_followed_on_the_event_loop_either(family, provider_env):
    provider_env(FAMILIES[family][2])
    with RedirectPair(307) as pair:
        with pytest.raises(LLMError) as caught:
            run_closing(achat(_spec(family, pair), MESSAGES, retry=NO_RETRY))
    _assert_nothing_left(pair, caught.value)


@pytest.mark.parametrize("status", [301, 302, 303, 308])
def test_no_redirect_status_is_followed(status, provider_env):
    with RedirectPair(status) as pair:
        with pytest.raises(LLMError) as caught:
            chat(_spec("anthropic", pair), MESSAGES, retry=NO_RETRY)
    _assert_nothing_left(pair, caught.value)


def test_the_http_chatbot_client_follows_no_redirect_either(monkeypatch):
    monkeypatch.setenv("REDIRECT_TEST_API_KEY", KEY)
    with RedirectPair(307) as pair:
        with pytest.raises(LLMError) as caught:
            http_chat(
                url=pair.redirector.origin + "/chat", headers={"X-Api-Key": "${REDIRECT_TEST_API_KEY}"},
                request_template={"messages": "{{messages}}"}, response_path="reply", messages=MESSAGES,
                model_label="bot", params={}, retry=NO_RETRY,
            )
    _assert_nothing_left(pair, caught.value)


def test_the_policy_leaves_other_http_clients_alone():
    """Outside an LLM call, httpx follows redirects as its caller asked (the hooks are scoped)."""
    import httpx

    from core import http_policy

    http_policy.install()
    assert http_policy.is_installed()
    with RedirectPair(307) as pair:
        response = httpx.get(pair.redirector.origin + "/x", follow_redirects=True)
    assert response.status_code == 200 and len(pair.recorder.received) == 1

"""Issue 30, finding 4: an ``aiohttp_openai/...`` model broke the launch check.

litellm serves that provider on an event loop only: its blocking ``completion`` sent a request
body built from a coroutine it never awaited, so a working model was refused ("the endpoint
refused the request as sent") and, in other versions, the page answered 500. The blocking
``chat`` now runs such a provider through ``achat`` on a private loop, under the same policy.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from rest_framework.test import APIClient

from corpus.models import Target
from corpus.personas.services import builtin_personas_load
from simulation.llm import LLMError, ModelSpec, chat
from simulation.llm.client import NO_RETRY, is_async_only
from simulation.models import SimulationBatch

pytestmark = pytest.mark.django_db
MESSAGES = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
def key(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ASYNC_ONLY_API_KEY", "sk-async-only-test")
    return "ASYNC_ONLY_API_KEY"


def test_the_blocking_path_calls_an_async_only_provider_as_it_should(fake_llm, key):
    assert is_async_only("aiohttp_openai/x") and not is_async_only("openai/x")
    fake_llm.script("bot", ["A reply."])
    result = chat(ModelSpec(model="aiohttp_openai/bot", api_base=fake_llm.base_url, api_key_env=key), MESSAGES, retry=NO_RETRY)
    assert result.content == "A reply." and fake_llm.calls_total == 1


def test_the_blocking_path_works_from_inside_a_running_loop_too(fake_llm, key):
    fake_llm.script("bot", ["From a loop."])

    async def inside() -> str:
        spec = ModelSpec(model="aiohttp_openai/bot", api_base=fake_llm.base_url, api_key_env=key)
        return chat(spec, MESSAGES, retry=NO_RETRY).content

    assert asyncio.run(inside()) == "From a loop."


def test_an_async_only_provider_is_held_to_the_allow_list(settings, fake_llm, key):
    settings.EVALSITE_API_HOSTS_EXTRA = []  # production's list: this machine's ports are not on it
    with pytest.raises(LLMError, match="port on this server"):
        chat(ModelSpec(model="aiohttp_openai/bot", api_base=fake_llm.base_url, api_key_env=key), MESSAGES, retry=NO_RETRY)
    assert fake_llm.calls_total == 0


def test_a_batch_whose_user_agent_is_async_only_passes_the_launch_check(settings, researcher, fake_llm, key):
    settings.EVALSITE_PREFLIGHT = True
    fake_llm.script("agent", ["I feel low."])
    fake_llm.script("chatbot", ["Hello."])
    persona_set = builtin_personas_load()
    target = Target.objects.create(shared=True, code="T-OK", kind="litellm", model="openai/chatbot", api_base=fake_llm.base_url,
                                   api_key_env=key, system_prompt="hi")
    client = APIClient()
    client.force_authenticate(researcher)
    response = client.post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]),
        "user_agent": {"model": "aiohttp_openai/agent", "api_base": fake_llm.base_url, "api_key_env": key},
    }, format="json")
    assert response.status_code == 201, json.dumps(response.json())
    assert SimulationBatch.objects.count() == 1

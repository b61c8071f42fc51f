"""Issue 30, finding 7: the launch check told any researcher which environment variables the server
lacks ("HUGGINGFACE_API_KEY is not set"), so naming providers one by one mapped the server's keys.
Administrators read the names; everyone else reads that the provider is not configured."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from corpus.models import Target
from corpus.personas.services import builtin_personas_load

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def checks_on(settings, monkeypatch, fake_llm):  # type: ignore[no-untyped-def]
    settings.EVALSITE_PREFLIGHT = True
    for name in ("HUGGINGFACE_API_KEY", "HF_TOKEN", "UNSET_PROBE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DISCLOSURE_BOT_API_KEY", "sk-x")
    fake_llm.script("chatbot", ["Hello."])
    return fake_llm


def _payload(fake_llm, user_agent: dict) -> dict:  # type: ignore[no-untyped-def]
    persona_set = builtin_personas_load()
    target, _ = Target.objects.get_or_create(
        code="T-OK", defaults={"kind": "litellm", "model": "openai/bot", "api_base": fake_llm.base_url,
                               "api_key_env": "DISCLOSURE_BOT_API_KEY", "system_prompt": "hi", "shared": True},
    )
    return {"protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
            "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]), "user_agent": user_agent}


@pytest.mark.parametrize("user_agent", [
    {"model": "huggingface/meta-llama/Llama-3-8B"},  # the provider's own variable (litellm's)
    {"model": "openai/u", "api_key_env": "UNSET_PROBE_API_KEY"},  # a variable the researcher names
], ids=["provider-default", "named"])
def test_a_researcher_is_not_told_which_variables_the_server_lacks(checks_on, researcher, admin_user, user_agent):
    refused = api(researcher).post("/api/v1/simulation-batches/", _payload(checks_on, user_agent), format="json")
    body = json.dumps(refused.json())
    assert refused.status_code == 400 and "not configured on this server" in body
    assert "HUGGINGFACE" not in body and "UNSET_PROBE_API_KEY is not set" not in body and "is not set" not in body
    told = api(admin_user).post("/api/v1/simulation-batches/", _payload(checks_on, user_agent), format="json")
    assert told.status_code == 400 and "is not set in the server's environment" in json.dumps(told.json())

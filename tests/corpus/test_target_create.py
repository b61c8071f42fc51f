"""Researchers add chatbots (litellm or HTTP) from a page; keys never enter the database."""

from __future__ import annotations

import json

import pytest

from corpus.models import Target
from tests.conftest import client_for


def test_a_litellm_chatbot_is_added_with_a_generated_pseudonym(researcher):
    response = client_for(researcher).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "openai/gpt-4o", "api_key_env": "OPENAI_API_KEY",
        "params": json.dumps({"temperature": 1.0}), "max_concurrent": 4, "requests_per_minute": 60,
    })
    assert response.status_code == 302
    target = Target.objects.get()
    assert target.code.startswith("T-") and target.params == {"temperature": 1.0} and target.requests_per_minute == 60


def test_an_http_chatbot_takes_its_credential_from_the_environment(researcher, settings):
    settings.EVALSITE_API_HOSTS = ["bot.example.org"]  # the secrets policy's allowed hosts
    client = client_for(researcher)
    bad = client.post("/corpus/chatbots/new/", {
        "kind": "http", "api_base": "https://bot.example.org/chat", "code": "OURBOT",
        "http_headers": json.dumps({"Authorization": "Bearer sk-live-123456"}), "max_concurrent": 2, "requests_per_minute": 0,
    })
    assert bad.status_code == 400 and "environment variable" in bad.content.decode()
    assert not Target.objects.exists()
    good = client.post("/corpus/chatbots/new/", {
        "kind": "http", "api_base": "https://bot.example.org/chat", "code": "OURBOT",
        "http_headers": json.dumps({"Authorization": "Bearer ${BOT_API_TOKEN}"}),
        "request_template": json.dumps({"history": "{{messages}}"}), "response_path": "reply",
        "max_concurrent": 2, "requests_per_minute": 0,
    })
    assert good.status_code == 302
    assert Target.objects.get(code="OURBOT").http_headers == {"Authorization": "Bearer ${BOT_API_TOKEN}"}


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("api_key_env", "sk-abc123", "NAME of an environment variable"),
    ("model", "", "needs a model string"),
    ("params", json.dumps({"api_key": "x"}), "may not set api_key"),
])
def test_bad_chatbot_settings_are_refused_with_the_reason(researcher, field, value, fragment):
    data = {"kind": "litellm", "model": "openai/x", "max_concurrent": 4, "requests_per_minute": 0, field: value}
    response = client_for(researcher).post("/corpus/chatbots/new/", data)
    assert response.status_code == 400 and fragment in response.content.decode()
    assert not Target.objects.exists()


def test_only_importing_roles_add_chatbots(clinician, outsider):
    for user in (clinician, outsider):
        assert client_for(user).get("/corpus/chatbots/new/").status_code == 404

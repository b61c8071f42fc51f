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


def test_the_chatbot_form_speaks_a_researchers_language(researcher, settings):
    settings.EVALSITE_KEY_ENV_ALLOWED = ["*_API_KEY", "*_BOT_TOKEN"]
    html = client_for(researcher).get("/corpus/chatbots/new/").content.decode()
    assert "API key variable" in html and "Api key env" not in html
    assert "*_API_KEY or *_BOT_TOKEN" in html  # the allowed names, from the secrets policy
    assert "null" not in html  # the request template starts from its default, not "null"
    assert "{&quot;messages&quot;: &quot;{{messages}}&quot;}" in html
    # The HTTP-only settings are grouped under a legend that says so (the script hides them for other kinds).
    group = html[html.index('id="http-only"'):html.index("</fieldset>", html.index('id="http-only"'))]
    assert "HTTP chatbots only" in group
    for name in ("http_headers", "request_template", "response_path"):
        assert f'name="{name}"' in group
    assert 'name="model"' not in group and 'name="api_key_env"' not in group


def test_refusals_show_beside_their_fields(researcher):
    response = client_for(researcher).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "openai/x", "api_key_env": "DATABASE_URL",
        "params": json.dumps({"api_base": "https://elsewhere.example"}), "max_concurrent": 4, "requests_per_minute": 0,
    })
    html = response.content.decode()
    assert response.status_code == 400 and not Target.objects.exists()
    key_field = html[html.index('id="field-api_key_env"'):html.index('id="field-params"')]
    assert "DATABASE_URL holds a secret of evalsite" in key_field
    params_field = html[html.index('id="field-params"'):html.index('id="field-system_prompt"')]
    assert "may not set api_key, api_base" in params_field


def test_http_only_settings_are_not_stored_for_a_litellm_chatbot(researcher):
    response = client_for(researcher).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "openai/gpt-4o", "max_concurrent": 4, "requests_per_minute": 0,
        "http_headers": json.dumps({"X-Trace": "1"}), "request_template": json.dumps({"messages": "{{messages}}"}),
        "response_path": "reply",
    })
    assert response.status_code == 302
    target = Target.objects.get()
    assert (target.http_headers, target.request_template, target.response_path) == ({}, {}, "")


def test_an_http_chatbots_bad_header_shows_in_its_group(researcher, settings):
    settings.EVALSITE_API_HOSTS = ["bot.example.org"]
    response = client_for(researcher).post("/corpus/chatbots/new/", {
        "kind": "http", "api_base": "https://bot.example.org/chat", "max_concurrent": 2, "requests_per_minute": 0,
        "http_headers": json.dumps({"Authorization": "Bearer ${DJANGO_SECRET_KEY}"}),
        "request_template": json.dumps({"messages": "{{messages}}", "x": "{{nope}}"}), "response_path": "reply",
    })
    html = response.content.decode()
    assert response.status_code == 400
    headers = html[html.index('id="field-http_headers"'):html.index('id="field-request_template"')]
    assert "DJANGO_SECRET_KEY holds a secret of evalsite" in headers
    template = html[html.index('id="field-request_template"'):html.index('id="field-response_path"')]
    assert "unknown request field {{nope}}" in template

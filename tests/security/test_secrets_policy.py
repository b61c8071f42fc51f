"""Finding 1: any server environment variable could be sent to any URL.

A key variable must match the allow-list (``*_API_KEY``, ``*_API_TOKEN``) and never be one of
the app's own secrets; a base URL's host must be allowed or set by an administrator. Every entry
point checks (pages, API, admin, commands), and the LLM client and the HTTP chatbot client check
again at call time, so nothing is sent even for a row stored before the rule existed.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from corpus.instruments.services import builtin_instruments_load
from corpus.models import Target
from corpus.personas.services import builtin_personas_load
from judging.judges import judge_create
from judging.models import Judge
from simulation.http_target import http_chat
from simulation.llm import LLMError, ModelSpec, chat
from simulation.llm.client import NO_RETRY
from tests.conftest import client_for

pytestmark = pytest.mark.django_db
APP_SECRETS = ["DATABASE_URL", "DJANGO_SECRET_KEY", "REDIS_URL", "EVALSITE_VAR_DIR", "SECRET_KEY", "HOME"]


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def amhart():  # type: ignore[no-untyped-def]
    return builtin_instruments_load()[0]


@pytest.mark.parametrize("name", APP_SECRETS)
def test_the_judge_api_refuses_the_apps_own_secrets_as_a_key(researcher, amhart, name):
    response = api(researcher).post("/api/v1/judges/", {
        "name": "thief", "instrument": amhart.pk, "model": "openai/gpt-4o", "api_key_env": name,
    }, format="json")
    assert response.status_code == 400, response.content
    assert name in response.json()["detail"]
    assert not Judge.objects.exists()


def test_the_judge_api_refuses_a_host_off_the_list_for_a_researcher(researcher, admin_user, amhart, outsider):
    payload = {"name": "j", "instrument": amhart.pk, "model": "openai/gpt-4o",
               "api_key_env": "OPENAI_API_KEY", "api_base": "https://attacker.example/"}
    refused = api(researcher).post("/api/v1/judges/", payload, format="json")
    assert refused.status_code == 400 and "attacker.example" in refused.json()["detail"]
    assert api(outsider).post("/api/v1/judges/", payload, format="json").status_code in (403, 404)
    # An administrator may name the host, which approves it (recorded, with who did it).
    assert api(admin_user).post("/api/v1/judges/", payload, format="json").status_code == 201
    from core.models import AllowedApiHost

    approval = AllowedApiHost.objects.get(host="attacker.example")
    assert approval.added_by == admin_user
    payload["name"] = "j2"
    assert api(researcher).post("/api/v1/judges/", payload, format="json").status_code == 201


def test_the_issue_example_is_refused(researcher, amhart):
    response = api(researcher).post("/api/v1/judges/", {
        "name": "x", "instrument": amhart.pk, "model": "openai/x", "api_key_env": "DATABASE_URL", "api_base": "http://attacker/",
    }, format="json")
    assert response.status_code == 400


def test_the_judge_page_and_command_refuse_too(researcher, amhart):
    response = client_for(researcher).post("/judging/judges/new/", {
        "name": "x", "instrument": amhart.pk, "model": "openai/x", "api_key_env": "DJANGO_SECRET_KEY", "params": "{}",
        "format_retries": 2, "timeout_seconds": 120, "max_concurrent": 8, "requests_per_minute": 0,
    })
    assert response.status_code == 400 and "DJANGO_SECRET_KEY" in response.content.decode()
    with pytest.raises(CommandError, match="DATABASE_URL"):
        call_command("judge", "create", "--name", "y", "--instrument", str(amhart.pk), "--model", "openai/x", "--api-key-env", "DATABASE_URL")
    assert not Judge.objects.exists()


def test_the_admin_cannot_store_an_app_secret_as_a_judges_key(admin_user, amhart):
    judge = judge_create(name="j", instrument=amhart, model="openai/x", api_key_env="OPENAI_API_KEY")
    client = client_for(admin_user)
    page = client.get(f"/admin/judging/judge/{judge.pk}/change/")
    form = page.context["adminform"].form
    data = {k: ("" if v is None else v) for k, v in form.initial.items() if k in form.fields}
    data.update(api_key_env="DJANGO_SECRET_KEY", params=json.dumps(judge.params or {}), temperature="0")
    response = client.post(f"/admin/judging/judge/{judge.pk}/change/", data)
    assert response.status_code == 200 and "holds a secret of evalsite itself" in response.content.decode()
    judge.refresh_from_db()
    assert judge.api_key_env == "OPENAI_API_KEY"


def test_the_chatbot_page_refuses_app_secrets_in_the_key_and_in_headers(researcher):
    client = client_for(researcher)
    base = {"max_concurrent": 2, "requests_per_minute": 0}
    key = client.post("/corpus/chatbots/new/", {"kind": "litellm", "model": "openai/x", "api_key_env": "DATABASE_URL", **base})
    header = client.post("/corpus/chatbots/new/", {
        "kind": "http", "api_base": "http://127.0.0.1:9/chat",
        "http_headers": json.dumps({"Authorization": "Bearer ${DJANGO_SECRET_KEY}"}), **base,
    })
    host = client.post("/corpus/chatbots/new/", {"kind": "litellm", "model": "openai/x", "api_base": "https://attacker.example/v1", **base})
    assert key.status_code == header.status_code == host.status_code == 400
    assert "DATABASE_URL" in key.content.decode() and "DJANGO_SECRET_KEY" in header.content.decode()
    assert "attacker.example" in host.content.decode()
    assert not Target.objects.exists()


def test_a_simulation_batch_cannot_hand_the_secret_key_to_its_user_agent(researcher, fake_llm, monkeypatch):
    monkeypatch.setenv("TEST_SIM_API_KEY", "sk-x")
    persona_set = builtin_personas_load()
    target = Target.objects.create(shared=True, code="T-OK", kind="litellm", model="openai/bot", api_base=fake_llm.base_url,
                                   api_key_env="TEST_SIM_API_KEY", system_prompt="hi")
    response = api(researcher).post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]),
        "user_agent": {"model": "openai/u", "api_base": fake_llm.base_url, "api_key_env": "DJANGO_SECRET_KEY"},
    }, format="json")
    assert response.status_code == 400 and "DJANGO_SECRET_KEY" in json.dumps(response.json())
    assert fake_llm.calls_total == 0


def test_a_chatbot_stored_before_the_rule_cannot_be_simulated(researcher, fake_llm):
    persona_set = builtin_personas_load()
    # An unlisted loopback address: were the rule broken, the call would stay on this machine.
    target = Target.objects.create(shared=True, code="T-OLD", kind="litellm", model="openai/bot", api_base="http://127.0.0.2:9/v1",
                                   api_key_env="DATABASE_URL", system_prompt="hi")
    response = api(researcher).post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]),
        "user_agent": {"model": "openai/u", "api_base": fake_llm.base_url, "api_key_env": "OPENAI_API_KEY"},
    }, format="json")
    body = json.dumps(response.json())
    assert response.status_code == 400 and "DATABASE_URL" in body and "127.0.0.2" in body


@pytest.mark.parametrize("key_env", ["DJANGO_SECRET_KEY", "DATABASE_URL"])
def test_the_llm_client_refuses_at_call_time_and_sends_nothing(fake_llm, monkeypatch, key_env):
    monkeypatch.setenv(key_env, "the-secret-value")
    with pytest.raises(LLMError) as caught:
        chat(ModelSpec(model="openai/x", api_base=fake_llm.base_url, api_key_env=key_env), [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    assert caught.value.kind == "auth" and key_env in str(caught.value)
    assert fake_llm.calls_total == 0


def test_the_llm_client_refuses_a_host_nobody_approved(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    with pytest.raises(LLMError, match="127.0.0.2"):  # not on the list, and on this machine should the rule break
        chat(ModelSpec(model="openai/x", api_base="http://127.0.0.2:9/v1"), [{"role": "user", "content": "hi"}], retry=NO_RETRY)


def test_the_http_chatbot_client_refuses_app_secrets_in_headers(fake_llm, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-secret-value")
    with pytest.raises(LLMError, match="DJANGO_SECRET_KEY"):
        http_chat(
            url=fake_llm.base_url + "/chat/completions", headers={"Authorization": "Bearer ${DJANGO_SECRET_KEY}"},
            request_template={"messages": "{{messages}}"}, response_path="choices.0.message.content",
            messages=[{"role": "user", "content": "hi"}], model_label="bot", params={}, retry=NO_RETRY,
        )
    assert fake_llm.calls_total == 0


def test_allowed_names_pass(monkeypatch):
    from core.secrets_policy import destination_problems

    assert destination_problems(api_base="https://api.openai.com/v1", key_env="OPENAI_API_KEY") == []
    assert destination_problems(api_base="http://127.0.0.1:8765/v1", key_env="OFFLINE_MODEL_API_KEY", header_envs=["BOT_API_TOKEN"]) == []
    assert destination_problems(key_env="EVALSITE_API_KEY")  # ends right, but an app variable: never
    assert destination_problems(api_base="https://user:pw@api.openai.com/v1")  # credentials in the URL


@pytest.mark.parametrize("params", [
    {"aws_secret_access_key": "os.environ/DJANGO_SECRET_KEY"},
    {"extra_headers": {"X-Leak": "os.environ/DATABASE_URL"}},
    {"aws_bedrock_runtime_endpoint": "http://attacker.example"},
])
def test_parameters_may_not_read_the_environment_or_redirect_the_call(researcher, amhart, fake_llm, params):
    response = api(researcher).post("/api/v1/judges/", {
        "name": "p", "instrument": amhart.pk, "model": "bedrock/anthropic.claude-x", "params": params,
    }, format="json")
    assert response.status_code == 400, response.content
    with pytest.raises(LLMError):
        chat(ModelSpec(model="openai/x", api_base=fake_llm.base_url, params=params), [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    assert fake_llm.calls_total == 0

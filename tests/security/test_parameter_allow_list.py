"""Finding 2: secret-reading parameters got through ("oidc/env/DJANGO_SECRET_KEY" and the like).

The extra parameters of a chatbot, a judge and a user-agent are documented generation
parameters only (``core.llm_params.GENERATION_PARAMS``, one list); anything else is refused at
every entry point (judge API and page, chatbot page and API, batch API, both commands, the
admin) and again at call time, whatever its value. Values that read like a secret reference are
refused too: the prefixes are read from the installed litellm's own source, so a release that
resolves a new kind fails this test until the list names it.
"""

from __future__ import annotations

import inspect
import json
import re

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from corpus.instruments.services import builtin_instruments_load
from corpus.models import Target
from corpus.personas.services import builtin_personas_load
from judging.judges import judge_create
from judging.models import Judge
from simulation.llm import LLMError, ModelSpec, chat
from simulation.llm.client import NO_RETRY
from simulation.models import SimulationBatch
from tests.conftest import client_for

pytestmark = pytest.mark.django_db
THE_ISSUE = {"azure_ad_token": "oidc/env/DJANGO_SECRET_KEY"}
SECRET = "the-django-secret-key-value-0123456789"


def litellm_secret_prefixes() -> list[str]:
    """Return every prefix the installed litellm resolves to a secret, read from its source."""
    import litellm.secret_managers.main as managers
    from litellm.llms.base_llm.auth import identity_source

    source = inspect.getsource(managers.get_secret)
    prefixes = {"os.environ/", managers.GOOGLE_OIDC_SECRET_PREFIX, *managers.LOCAL_OIDC_SECRET_PREFIXES}
    prefixes |= set(re.findall(r'startswith\("([^"]+/)"\)', source))
    providers = set(managers._OIDC_PROVIDERS) | set(re.findall(r'oidc_provider == "([a-z0-9_]+)"', source))
    prefixes |= {f"oidc/{provider}/" for provider in providers}
    prefixes |= set(identity_source._POINTER_REF_PREFIXES)
    return sorted(prefixes)


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def amhart():  # type: ignore[no-untyped-def]
    return builtin_instruments_load()[0]


def test_the_enumeration_found_litellms_prefixes():
    from core.llm_params import SECRET_REFERENCE_PREFIXES

    found = litellm_secret_prefixes()
    assert {"os.environ/", "oidc/env/", "oidc/file/", "oidc/google/", "oidc/github/", "oidc/azure/"} <= set(found)
    assert all(prefix.startswith(SECRET_REFERENCE_PREFIXES) for prefix in found), "a prefix litellm resolves is missing"


@pytest.mark.parametrize("prefix", litellm_secret_prefixes())
def test_every_secret_reading_prefix_is_refused_whatever_the_parameter(prefix):
    from core.llm_params import is_secret_reference
    from core.secrets_policy import params_problems

    reference = prefix + "DJANGO_SECRET_KEY"
    assert is_secret_reference(reference) and is_secret_reference(" " + reference.upper())
    # In a parameter that is allowed (a stop sequence) and in one that is not.
    assert any("secret" in p for p in params_problems({"stop": [reference]}))
    assert params_problems({"azure_ad_token": reference})


@pytest.mark.parametrize("prefix", litellm_secret_prefixes())
def test_every_prefix_is_refused_at_call_time_and_nothing_is_sent(prefix, fake_llm, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", SECRET)
    for params in ({"stop": [prefix + "DJANGO_SECRET_KEY"]}, {"azure_ad_token": prefix + "DJANGO_SECRET_KEY"}):
        with pytest.raises(LLMError) as caught:
            chat(ModelSpec(model="azure/x", api_base=fake_llm.base_url, params=params), [{"role": "user", "content": "hi"}], retry=NO_RETRY)
        assert caught.value.kind == "auth" and SECRET not in str(caught.value)
    assert fake_llm.calls_total == 0


def test_only_generation_parameters_pass():
    from core.llm_params import GENERATION_PARAMS
    from core.secrets_policy import params_problems

    ok = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 256, "seed": 7, "stop": ["\n\n"], "reasoning_effort": "low",
          "thinking": {"type": "enabled", "budget_tokens": 1024}, "logit_bias": {"50256": -100}}
    assert params_problems(ok) == []
    assert set(ok) <= set(GENERATION_PARAMS)
    # Credentials, endpoints, regions, identity providers, headers: refused whatever the value.
    for name in ("api_key", "azure_ad_token", "azure_client_id", "azure_tenant_id", "aws_access_key_id",
                 "aws_secret_access_key", "aws_session_token", "aws_web_identity_token", "aws_role_name",
                 "aws_region_name", "aws_sts_endpoint", "aws_bedrock_runtime_endpoint", "vertex_credentials",
                 "vertex_project", "vertex_location", "api_version", "extra_headers", "headers", "base_url",
                 "client_secret", "user", "tools", "metadata", "proxy"):
        assert params_problems({name: "harmless"}), name
    assert params_problems({"temperature": "os.environ/X"}) and params_problems({"max_tokens": 1.5})
    assert params_problems({"thinking": {"type": "enabled", "api_key": "x"}})


def test_every_other_litellm_parameter_is_refused():
    """Every keyword litellm.completion knows but GENERATION_PARAMS does not name is refused."""
    from litellm import completion

    from core.llm_params import GENERATION_PARAMS
    from core.secrets_policy import params_problems

    names = set(inspect.signature(completion).parameters) - {"args", "kwargs"}
    assert len(names) > 30
    for name in sorted(names - set(GENERATION_PARAMS)):
        assert params_problems({name: 1}), name


def test_the_judge_api_and_page_refuse_the_issues_example(researcher, amhart):
    response = api(researcher).post("/api/v1/judges/", {
        "name": "j", "instrument": amhart.pk, "model": "azure/gpt-4o", "params": THE_ISSUE,
    }, format="json")
    assert response.status_code == 400 and "azure_ad_token" in response.json()["detail"]
    page = client_for(researcher).post("/judging/judges/new/", {
        "name": "x", "instrument": amhart.pk, "model": "azure/x", "params": json.dumps(THE_ISSUE),
        "format_retries": 2, "timeout_seconds": 120, "max_concurrent": 8, "requests_per_minute": 0,
    })
    assert page.status_code == 400 and "azure_ad_token" in page.content.decode()
    assert not Judge.objects.exists()


def test_the_chatbot_page_and_api_refuse_it(researcher):
    page = client_for(researcher).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "azure/x", "params": json.dumps(THE_ISSUE), "max_concurrent": 2, "requests_per_minute": 0,
    })
    assert page.status_code == 400 and "azure_ad_token" in page.content.decode()
    # The API lists chatbots but does not create them.
    response = api(researcher).post("/api/v1/targets/", {"kind": "litellm", "model": "azure/x", "params": THE_ISSUE}, format="json")
    assert response.status_code == 405, response.content
    assert not Target.objects.exists()


def test_the_batch_api_refuses_it_for_the_user_agent(researcher, fake_llm):
    persona_set = builtin_personas_load()
    target = Target.objects.create(shared=True, code="T-OK", kind="litellm", model="openai/bot", api_base=fake_llm.base_url, system_prompt="hi")
    response = api(researcher).post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]),
        "user_agent": {"model": "azure/u", "api_base": fake_llm.base_url, "params": THE_ISSUE},
    }, format="json")
    assert response.status_code == 400 and "azure_ad_token" in json.dumps(response.json())
    assert not SimulationBatch.objects.exists() and fake_llm.calls_total == 0


def test_both_commands_refuse_it(amhart, fake_llm):
    with pytest.raises(CommandError, match="azure_ad_token"):
        call_command("judge", "create", "--name", "y", "--instrument", str(amhart.pk), "--model", "azure/x",
                     "--params", json.dumps(THE_ISSUE))
    persona_set = builtin_personas_load()
    Target.objects.create(shared=True, code="T-OK", kind="litellm", model="openai/bot", api_base=fake_llm.base_url, system_prompt="hi")
    with pytest.raises(CommandError, match="azure_ad_token"):
        call_command("simulate", "--persona-set", str(persona_set.pk), "--targets", "T-OK", "--user-model", "azure/u",
                     "--user-api-base", fake_llm.base_url, "--user-params", json.dumps(THE_ISSUE))
    assert not Judge.objects.exists() and not SimulationBatch.objects.exists()


def test_the_admin_refuses_it_on_judges_and_chatbots(admin_user, amhart):
    judge = judge_create(name="j", instrument=amhart, model="azure/x")
    client = client_for(admin_user)
    page = client.get(f"/admin/judging/judge/{judge.pk}/change/")
    form = page.context["adminform"].form
    data = {k: ("" if v is None else v) for k, v in form.initial.items() if k in form.fields}
    data.update(params=json.dumps(THE_ISSUE), temperature="")
    response = client.post(f"/admin/judging/judge/{judge.pk}/change/", data)
    assert response.status_code == 200 and "azure_ad_token" in response.content.decode()
    judge.refresh_from_db()
    assert judge.params == {}
    target = Target.objects.create(shared=True, code="T-A", kind="litellm", model="azure/x", system_prompt="hi")
    page = client.get(f"/admin/corpus/target/{target.pk}/change/")
    form = page.context["adminform"].form
    data = {k: ("" if v is None else v) for k, v in form.initial.items() if k in form.fields}
    data.update(params=json.dumps(THE_ISSUE), http_headers="{}", request_template="{}")
    response = client.post(f"/admin/corpus/target/{target.pk}/change/", data)
    assert response.status_code == 200 and "azure_ad_token" in response.content.decode()
    target.refresh_from_db()
    assert target.params == {}


def test_a_row_stored_before_the_rule_sends_nothing(fake_llm, monkeypatch):
    """Azure would have sent the resolved secret as the bearer token to the base URL."""
    monkeypatch.setenv("DJANGO_SECRET_KEY", SECRET)
    with pytest.raises(LLMError, match="azure_ad_token"):
        chat(ModelSpec(model="azure/x", api_base=fake_llm.base_url, params=THE_ISSUE), [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    assert fake_llm.calls_total == 0

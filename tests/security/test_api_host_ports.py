"""Finding 3: the allowed localhost was a port scanner and a proxy.

The allow-list names host *and* port; this machine's ports are allowed only once an
administrator approves one (the test settings' loopback entries are switched off here, so the
production default is what is tested). Launch-check errors say what failed in the app's own
words: no remote body, nothing derived from a key, and the same words for a closed port and a
port that hangs up. ``Host`` and hop-by-hop headers cannot be set on an HTTP chatbot.
"""

from __future__ import annotations

import base64
import json
import socket
import threading

import pytest
from rest_framework.test import APIClient

from core.models import AllowedApiHost
from corpus.models import Target
from corpus.personas.services import builtin_personas_load
from simulation.http_target import http_chat
from simulation.llm import LLMError, ModelSpec, chat
from simulation.llm.client import NO_RETRY
from simulation.models import SimulationBatch
from tests.conftest import client_for
from tests.support.fake_llm import raw
from tests.support.loops import run_closing

pytestmark = pytest.mark.django_db
KEY = "sk-port-scan-test-key-5d2e8f1a"
KEY_B64 = base64.b64encode(KEY.encode()).decode()
HTTP_BOT = {"kind": "http", "http_headers": "{}", "request_template": json.dumps({"messages": "{{messages}}"}),
            "response_path": "reply", "max_concurrent": 2, "requests_per_minute": 0}


@pytest.fixture
def production_hosts(settings):  # type: ignore[no-untyped-def]
    """The allow-list as it is in production: no loopback entry from the test settings."""
    settings.EVALSITE_API_HOSTS_EXTRA = []
    return settings


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("base", [
    "http://127.0.0.1:6379/", "http://localhost:5432/chat", "http://[::1]:6379/", "http://0.0.0.0:11211/",  # not a service location: ports that must be refused
    "http://127.0.0.2:8765/v1", "http://127.0.0.1/v1",
])
def test_this_machines_ports_are_refused_without_an_administrator(production_hosts, researcher, base):
    response = client_for(researcher).post("/corpus/chatbots/new/", {**HTTP_BOT, "api_base": base})
    assert response.status_code == 400
    text = response.content.decode()
    assert "port on this server" in text and "administrator" in text
    assert not Target.objects.exists()


def test_a_listed_host_is_allowed_on_its_own_port_only(production_hosts):
    from core.secrets_policy import api_base_problem

    assert api_base_problem("https://api.openai.com/v1") is None
    assert api_base_problem("https://api.openai.com:6379/v1")
    assert api_base_problem("http://api.anthropic.com:22/")
    assert api_base_problem("https://myres.openai.azure.com/openai") is None
    assert api_base_problem("https://myres.openai.azure.com:8443/openai")


def test_an_administrator_approves_one_port_and_only_that_port(production_hosts, admin_user, researcher):
    response = client_for(admin_user).post("/corpus/chatbots/new/", {
        "kind": "litellm", "model": "openai/smollm2", "api_base": "http://127.0.0.1:8765/v1", "max_concurrent": 1,
        "requests_per_minute": 0,
    })
    assert response.status_code == 302
    assert list(AllowedApiHost.objects.values_list("host", flat=True)) == ["127.0.0.1:8765"]
    ok = client_for(researcher).post("/corpus/chatbots/new/", {**HTTP_BOT, "api_base": "http://127.0.0.1:8765/chat"})
    other = client_for(researcher).post("/corpus/chatbots/new/", {**HTTP_BOT, "api_base": "http://127.0.0.1:8766/chat"})  # another port
    assert ok.status_code == 302 and other.status_code == 400


def test_the_admin_form_takes_host_and_port_and_suggests_local_model_servers(admin_user):
    client = client_for(admin_user)
    page = client.get("/admin/core/allowedapihost/add/").content.decode()
    assert "localhost:11434 (Ollama)" in page and "127.0.0.1:8765" in page
    for bad in ("http://127.0.0.1:8765/", "localhost:99999", "*", "*:*", "a b"):
        response = client.post("/admin/core/allowedapihost/add/", {"host": bad, "note": ""})
        assert response.status_code == 200 and "errorlist" in response.content.decode(), bad
    response = client.post("/admin/core/allowedapihost/add/", {"host": "LocalHost:11434", "note": "ollama"})
    assert response.status_code == 302
    assert AllowedApiHost.objects.get().host == "localhost:11434"


def test_the_call_time_check_refuses_an_unapproved_port_and_sends_nothing(production_hosts, fake_llm, monkeypatch):
    monkeypatch.setenv("PORT_TEST_API_KEY", KEY)
    with pytest.raises(LLMError, match="port on this server"):
        chat(ModelSpec(model="openai/x", api_base=fake_llm.base_url, api_key_env="PORT_TEST_API_KEY"),
             [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    with pytest.raises(LLMError, match="port on this server"):
        http_chat(url=fake_llm.base_url + "/chat/completions", headers={}, request_template={"messages": "{{messages}}"},
                  response_path="choices.0.message.content", messages=[{"role": "user", "content": "hi"}],
                  model_label="bot", params={}, retry=NO_RETRY)
    assert fake_llm.calls_total == 0
    AllowedApiHost.objects.create(host=f"127.0.0.1:{fake_llm.port}")
    chat(ModelSpec(model="openai/x", api_base=fake_llm.base_url, api_key_env="PORT_TEST_API_KEY"),
         [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    assert fake_llm.calls_total == 1


def test_a_providers_own_endpoint_on_this_machine_is_refused_request_by_request(production_hosts):
    """ollama/ without a base URL goes to localhost:11434: not approved, so not even connected to."""
    with pytest.raises(LLMError) as caught:
        chat(ModelSpec(model="ollama/llama3"), [{"role": "user", "content": "hi"}], retry=NO_RETRY)
    assert caught.value.kind == "refused" and "localhost:11434" in str(caught.value)


def _batch_launch(researcher, fake_llm, target):  # type: ignore[no-untyped-def]
    persona_set = builtin_personas_load()
    response = api(researcher).post("/api/v1/simulation-batches/", {
        "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.code], "exchanges": 1,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:1]),
        "user_agent": {"model": "openai/u", "api_base": fake_llm.base_url, "api_key_env": "PORT_TEST_API_KEY"},
    }, format="json")
    assert response.status_code == 400, response.content
    assert not SimulationBatch.objects.exists()
    return next(c for c in response.json()["preflight"] if c["used_by"] == f"chatbot {target.code}")


def _assert_own_words(check: dict, *forbidden: str) -> None:
    text = json.dumps(check)
    for word in (KEY, KEY_B64, *forbidden):
        assert word not in text, word


def test_launch_check_errors_never_echo_the_remote_body(researcher, fake_llm, monkeypatch, settings):
    settings.EVALSITE_PREFLIGHT = True
    monkeypatch.setenv("PORT_TEST_API_KEY", KEY)
    echo = {"error": {"message": f"REMOTE-BODY your key is {KEY_B64}", "type": "invalid_request_error"}}
    fake_llm.script("bot", [raw(401, echo)])
    litellm_bot = Target.objects.create(shared=True, code="T-LLM", kind="litellm", model="openai/bot", api_base=fake_llm.base_url,
                                        api_key_env="PORT_TEST_API_KEY", system_prompt="hi")
    check = _batch_launch(researcher, fake_llm, litellm_bot)
    assert not check["ok"] and "HTTP 401" in check["problem"]
    _assert_own_words(check, "REMOTE-BODY", "invalid_request_error")
    http_bot = Target.objects.create(shared=True, code="T-HTTP", kind="http", model="bot", api_base=fake_llm.base_url + "/chat/completions",
                                     http_headers={"Authorization": "Bearer ${PORT_TEST_API_KEY}"},
                                     request_template={"model": "bot", "messages": "{{messages}}"}, response_path="reply")
    check = _batch_launch(researcher, fake_llm, http_bot)
    assert not check["ok"] and "HTTP 401" in check["problem"]
    _assert_own_words(check, "REMOTE-BODY")


class _HangUp:
    """A port that accepts a connection and closes it at once (a service that is not HTTP)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_and_a_port_that_hangs_up_read_the_same(researcher, fake_llm, monkeypatch, settings):
    settings.EVALSITE_PREFLIGHT = True
    monkeypatch.setenv("PORT_TEST_API_KEY", KEY)
    hang_up = _HangUp()
    problems = []
    for code, port in (("T-CLOSED", _free_port()), ("T-HANGUP", hang_up.port)):
        for kind, model in (("http", "bot"), ("litellm", "openai/bot")):
            target = Target.objects.create(shared=True, code=f"{code}-{kind}", kind=kind, model=model, api_base=f"http://127.0.0.1:{port}/v1",
                                           api_key_env="PORT_TEST_API_KEY", system_prompt="hi", timeout_seconds=5,
                                           request_template={"messages": "{{messages}}"}, response_path="reply")
            check = _batch_launch(researcher, fake_llm, target)
            problems.append((kind, check["problem"]))
    hang_up.sock.close()
    by_kind = {kind: {p for k, p in problems if k == kind} for kind in ("http", "litellm")}
    assert by_kind["http"] == {"the endpoint could not be reached"}, problems
    assert by_kind["litellm"] == {"the endpoint could not be reached"}, problems


@pytest.mark.parametrize("header", ["Host", "host", "Connection", "Transfer-Encoding", "Proxy-Authorization", "TE", "Upgrade"])
def test_host_and_hop_by_hop_headers_cannot_be_set(researcher, header):
    response = client_for(researcher).post("/corpus/chatbots/new/", {
        **HTTP_BOT, "api_base": "https://api.openai.com/v1/chat", "http_headers": json.dumps({header: "redis.internal"}),
    })
    assert response.status_code == 400 and "cannot be set" in response.content.decode()
    assert not Target.objects.exists()


def test_a_host_header_stored_before_the_rule_is_not_sent(fake_llm):
    with pytest.raises(LLMError, match="cannot be set"):
        http_chat(url=fake_llm.base_url + "/chat/completions", headers={"Host": "redis.internal"},
                  request_template={"messages": "{{messages}}"}, response_path="choices.0.message.content",
                  messages=[{"role": "user", "content": "hi"}], model_label="bot", params={}, retry=NO_RETRY)
    assert fake_llm.calls_total == 0


def test_the_admin_refuses_a_host_header_on_a_chatbot(admin_user):
    target = Target.objects.create(shared=True, code="T-A", kind="http", api_base="https://api.openai.com/v1/chat", system_prompt="")
    client = client_for(admin_user)
    page = client.get(f"/admin/corpus/target/{target.pk}/change/")
    form = page.context["adminform"].form
    data = {k: ("" if v is None else v) for k, v in form.initial.items() if k in form.fields}
    data.update(params="{}", http_headers=json.dumps({"Host": "redis.internal"}), request_template="{}")
    response = client.post(f"/admin/corpus/target/{target.pk}/change/", data)
    assert response.status_code == 200 and "cannot be set" in response.content.decode()
    target.refresh_from_db()
    assert target.http_headers == {}


@pytest.mark.django_db(transaction=True)
def test_an_approved_port_is_allowed_from_a_workers_event_loop_too(production_hosts, fake_llm, monkeypatch):
    """The engine calls from an event loop, where the ORM may not run: the approvals are read aside."""

    from core import api_hosts
    from simulation.llm import achat

    monkeypatch.setenv("PORT_TEST_API_KEY", KEY)
    spec = ModelSpec(model="openai/x", api_base=fake_llm.base_url, api_key_env="PORT_TEST_API_KEY")
    api_hosts.forget_snapshot()
    with pytest.raises(LLMError, match="port on this server"):
        run_closing(achat(spec, [{"role": "user", "content": "hi"}], retry=NO_RETRY))
    AllowedApiHost.objects.create(host=f"127.0.0.1:{fake_llm.port}")  # saving it drops this process's snapshot
    result = run_closing(achat(spec, [{"role": "user", "content": "hi"}], retry=NO_RETRY))
    assert result.content and fake_llm.calls_total == 1

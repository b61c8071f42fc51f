"""A custom HTTP chatbot endpoint as the target, against a tiny local server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from corpus.models import Target
from corpus.personas.services import builtin_personas_load
from corpus.targets.http_config import header_problems
from simulation.batches import simulation_batch_create
from simulation.errors import SimulationError
from simulation.http_target import extract, fill
from simulation.models import SimulationRun
from simulation.tasks import simulation_run_task
from tests.simulation.sim_setup import amhart_spec, simulation_environment, transcript  # noqa: F401

pytestmark = pytest.mark.django_db
BOT_TOKEN = "bot-token-0123456789-secret"


class TinyBot:
    """Answers POST /chat with {"reply": ...}; can fail the first N requests with 503."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first = 0
        bot = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                bot.requests.append({"headers": dict(self.headers), "body": body})
                if self.headers.get("X-Api-Key") != BOT_TOKEN:
                    status, payload = 401, {"error": "bad key"}
                elif len(bot.requests) <= bot.fail_first:
                    status, payload = 503, {"error": "busy"}
                else:
                    last = body["messages"][-1]["content"]
                    status, payload = 200, {"data": {"reply": f"bot heard {len(body['messages'])}: {last[:20]}"}}
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/chat"


@pytest.fixture
def tiny_bot(monkeypatch: pytest.MonkeyPatch) -> Iterator[TinyBot]:
    monkeypatch.setenv("TINY_BOT_API_TOKEN", BOT_TOKEN)
    bot = TinyBot()
    yield bot
    bot.server.shutdown()
    bot.server.server_close()


def http_target(bot: TinyBot, **extra: Any) -> Target:
    fields = {
        "code": "T-HTTP",
        "kind": Target.Kind.HTTP,
        "model": "tiny-bot",
        "api_base": bot.url,
        "http_headers": {"X-Api-Key": "${TINY_BOT_API_TOKEN}"},
        "request_template": {"messages": "{{messages}}", "session": "conv-{{conversation_id}}"},
        "response_path": "data.reply",
        "system_prompt": "Be kind.",
        "timeout_seconds": 5,
    }
    fields.update(extra)
    return Target.objects.create(**fields)


def test_an_http_chatbot_gets_the_history_through_its_template_and_answers_by_its_path(fake_llm, tiny_bot):
    tiny_bot.fail_first = 1
    persona_set = builtin_personas_load()
    target = http_target(tiny_bot)
    spec = amhart_spec(fake_llm, persona_set, [target], persona_ids=(persona_set.personas.first().pk,), exchanges=2)
    batch = simulation_batch_create(spec=spec, dispatch=False)
    run = batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE, run.error
    messages = transcript(run.conversation)
    assert [r for _, r, _ in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[1][2].startswith("bot heard 2: Hi, my name is Maya")
    last = tiny_bot.requests[-1]["body"]
    assert last["messages"][0] == {"role": "system", "content": "Be kind."}
    assert [m["content"] for m in last["messages"][1:]] == [c for _, _, c in messages[:3]]
    assert last["session"] == f"conv-{run.conversation.code}"
    meta = run.conversation.messages.get(turn_index=1).meta
    assert meta["requested_model"] == "tiny-bot" and meta["attempts"] == 2 and meta["side"] == "chatbot"
    assert run.conversation.integrity_ok is True
    assert BOT_TOKEN not in json.dumps([m.meta for m in run.conversation.messages.all()])


def test_a_missing_key_variable_fails_the_run_with_a_clear_error(fake_llm, tiny_bot, monkeypatch):
    monkeypatch.delenv("TINY_BOT_API_TOKEN")
    persona_set = builtin_personas_load()
    spec = amhart_spec(fake_llm, persona_set, [http_target(tiny_bot)], persona_ids=(persona_set.personas.first().pk,), exchanges=1)
    run = simulation_batch_create(spec=spec, dispatch=False).runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.FAILED
    assert run.error_kind == "auth" and "TINY_BOT_API_TOKEN is not set" in run.error


def test_a_literal_credential_in_a_header_is_refused(fake_llm, tiny_bot):
    persona_set = builtin_personas_load()
    target = http_target(tiny_bot, http_headers={"Authorization": "Bearer abc123"})
    with pytest.raises(SimulationError, match="credentials must come from an environment variable"):
        simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target]), dispatch=False)
    assert header_problems({"Authorization": "Bearer ${BOT}", "Accept": "application/json"}) == []


def test_request_templates_and_response_paths():
    fields = {"messages": [{"role": "user", "content": "hi"}], "last_message": "hi", "conversation_id": "C-1"}
    template = {"input": {"messages": "{{messages}}", "text": "say: {{last_message}}"}, "id": "{{ conversation_id }}"}
    assert fill(template, fields) == {"input": {"messages": fields["messages"], "text": "say: hi"}, "id": "C-1"}
    reply = {"choices": [{"message": {"content": "hello"}}]}
    assert extract(reply, "choices.0.message.content") == "hello"
    assert extract({"reply": "yo"}, "reply") == "yo"
    assert extract(reply, "choices.3.message") is None

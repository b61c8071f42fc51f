"""Whole batches through Celery (eager) and litellm's real HTTP path to the fake server."""

from __future__ import annotations

import pytest

from corpus.models import Conversation
from corpus.personas.services import builtin_personas_load, personas_import
from simulation.batches import simulation_batch_create
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from tests.simulation.sim_setup import (
    KEY_ENV,
    SECRET,
    USER_MODEL,
    amhart_spec,
    make_target,
    simulation_environment,  # noqa: F401
    transcript,
    user_agent,
)

pytestmark = pytest.mark.django_db


def test_an_amhart_batch_runs_every_persona_with_the_card_first_and_a_clean_record(
    fake_llm, django_capture_on_commit_callbacks
):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    with django_capture_on_commit_callbacks(execute=True):
        batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target]))

    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.FINISHED
    assert batch.turns == 6 and batch.exchanges == 3
    runs = list(batch.runs.select_related("persona", "conversation"))
    assert len(runs) == 8
    assert {r.status for r in runs} == {SimulationRun.Status.DONE}
    for run in runs:
        conversation = run.conversation
        messages = transcript(conversation)
        assert [i for i, _, _ in messages] == list(range(6))
        assert [role for _, role, _ in messages] == ["user", "assistant"] * 3
        assert messages[0][2] == run.persona.opening_message
        assert conversation.integrity_ok is True, conversation.integrity_flags
        assert conversation.source == Conversation.Source.SIMULATED
        assert conversation.message_count == 6
        assert conversation.metadata["batch_id"] == batch.pk
        assert conversation.metadata["prompts"]["persona_system"]["key"].startswith("personaset-amhart")
        metas = list(conversation.messages.order_by("turn_index").values_list("meta", flat=True))
        assert metas[0] == {"side": "persona_card", "source": "opening_message"}
        for meta in metas[1:]:
            assert {"model", "params", "latency_ms", "prompt_tokens", "completion_tokens", "cost_usd"} <= set(meta)
            assert meta["params"] == {"temperature": 1.0}
        assert metas[1]["requested_model"] == "openai/chatbot" and metas[2]["requested_model"] == USER_MODEL
        assert run.calls == 5 and run.prompt_tokens > 0
    # 8 conversations x (3 chatbot + 2 user-agent) calls, nothing twice.
    assert fake_llm.calls("chatbot") == 24 and fake_llm.calls("persona-agent") == 16


def test_both_sides_get_the_full_history_and_the_user_agent_sees_roles_swapped(fake_llm, django_capture_on_commit_callbacks):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    spec = amhart_spec(fake_llm, persona_set, [target], persona_ids=(persona_set.personas.first().pk,))
    with django_capture_on_commit_callbacks(execute=True):
        batch = simulation_batch_create(spec=spec)
    conversation = batch.runs.get().conversation
    messages = transcript(conversation)
    chatbot_requests = [r for r in fake_llm.requests if r.model == "chatbot"]
    agent_requests = [r for r in fake_llm.requests if r.model == "persona-agent"]
    last_chatbot = chatbot_requests[-1].messages
    assert last_chatbot[0] == {"role": "system", "content": target.system_prompt}
    assert [(m["role"], m["content"]) for m in last_chatbot[1:]] == [(r, c) for _, r, c in messages[:5]]
    last_agent = agent_requests[-1].messages
    assert last_agent[0]["role"] == "system" and "Maya" in last_agent[0]["content"]
    assert "{" not in last_agent[0]["content"]
    kickoff = PromptTemplate.objects.get(key="evalsite-kickoff")
    assert last_agent[1] == {"role": "user", "content": kickoff.text}
    swapped = [(m["role"], m["content"]) for m in last_agent[2:]]
    assert swapped == [("assistant" if r == "user" else "user", c) for _, r, c in messages[:4]]
    # The key went to the server in the header and nowhere into the database.
    assert chatbot_requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(conversation.metadata) and SECRET not in str(batch.config)
    assert KEY_ENV in str(batch.config)


VERA_TSV_FIXTURE = "tests/fixtures/vera/personas_small.tsv"


def _vera_set():  # type: ignore[no-untyped-def]
    from pathlib import Path

    text = Path(VERA_TSV_FIXTURE).read_text(encoding="utf-8")
    return personas_import(text=text, file="personas_small.tsv").persona_set


def test_a_vera_batch_counts_messages_prefixes_the_reminder_and_stops_at_the_end_marker(
    fake_llm, django_capture_on_commit_callbacks
):
    persona_set = _vera_set()
    persona = persona_set.personas.order_by("position").first()
    target = make_target(fake_llm)
    fake_llm.script("persona-agent", ["I can't sleep and work is falling apart.", "yeah maybe. thanks <END>"])
    spec = amhart_spec(
        fake_llm, persona_set, [target], protocol=SimulationBatch.Protocol.VERA_MH, exchanges=None,
        turns=10, end_marker="<END>", persona_ids=(persona.pk,),
    )
    with django_capture_on_commit_callbacks(execute=True):
        batch = simulation_batch_create(spec=spec)
    run = batch.runs.get()
    assert run.status == SimulationRun.Status.DONE and run.ended_early
    messages = transcript(run.conversation)
    assert [role for _, role, _ in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[2][2] == "yeah maybe. thanks"  # the marker is not part of the transcript
    assert run.conversation.integrity_ok is True, run.conversation.integrity_flags
    assert run.conversation.metadata["ended_early"] is True
    reminder = batch.reminder_template
    agent = [r for r in fake_llm.requests if r.model == "persona-agent"][-1].messages
    system = agent[0]["content"]
    assert persona.profile["Background"][:40] in system
    assert "<END>" in system  # the end marker reaches the user-agent through {end_marker}
    chatbot_turn = agent[-1]
    assert chatbot_turn["role"] == "user"
    assert chatbot_turn["content"].startswith(reminder.text.split("{chatbot_message}")[0].strip())
    assert chatbot_turn["content"].endswith(messages[1][2])


def test_vera_turns_must_leave_the_chatbot_the_last_word(fake_llm):
    from simulation.errors import SimulationError

    persona_set = _vera_set()
    target = make_target(fake_llm)
    spec = amhart_spec(fake_llm, persona_set, [target], protocol=SimulationBatch.Protocol.VERA_MH, exchanges=None, turns=7)
    with pytest.raises(SimulationError, match="turns must be even"):
        simulation_batch_create(spec=spec)
    assert not SimulationBatch.objects.exists()


def test_a_word_cap_cuts_long_user_messages_and_records_it(fake_llm, django_capture_on_commit_callbacks):
    persona_set = _vera_set()
    target = make_target(fake_llm)
    fake_llm.script("persona-agent", ["one two three four five six seven eight nine ten"])
    spec = amhart_spec(
        fake_llm, persona_set, [target], protocol=SimulationBatch.Protocol.VERA_MH, exchanges=None, turns=2,
        word_cap=4, persona_ids=(persona_set.personas.first().pk,),
    )
    with django_capture_on_commit_callbacks(execute=True):
        batch = simulation_batch_create(spec=spec)
    message = batch.runs.get().conversation.messages.get(turn_index=0)
    assert message.content == "one two three four"
    assert message.meta["truncated_from_words"] == 10


def test_identical_texts_from_two_batches_get_distinct_content_hashes(fake_llm, django_capture_on_commit_callbacks):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    fake_llm.script("chatbot", ["Same reply every time."])
    fake_llm.script("persona-agent", ["Same question every time."])
    spec = amhart_spec(fake_llm, persona_set, [target], exchanges=2, persona_ids=(persona_set.personas.first().pk,), repetitions=2)
    with django_capture_on_commit_callbacks(execute=True):
        first = simulation_batch_create(spec=spec)
        second = simulation_batch_create(spec=spec)
    conversations = Conversation.objects.filter(metadata__batch_id__in=[first.pk, second.pk])
    assert conversations.count() == 4
    texts = {tuple(c.messages.values_list("content", flat=True)) for c in conversations}
    assert len(texts) == 1
    assert len({c.content_hash for c in conversations}) == 4
    assert {c.run_index for c in conversations} == {1, 2}
    assert user_agent(fake_llm).model == USER_MODEL

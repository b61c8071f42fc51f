"""Issue 19, honest states: a running conversation is "running", time left in minutes, counts before Start."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.templatetags.time_format import time_left_text
from corpus.models import Conversation, Message
from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from simulation.selectors import batch_progress
from tests.conftest import client_for
from tests.simulation.sim_setup import (  # noqa: F401
    KEY_ENV,
    amhart_spec,
    make_target,
    shared,
    simulation_environment,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(fake_llm):  # type: ignore[no-untyped-def]
    persona_set = builtin_personas_load()
    return shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [make_target(fake_llm)]), dispatch=False))


def _start(run: SimulationRun, messages: int, *, at: timezone.datetime | None = None) -> Conversation:
    """Put a run in the state a worker leaves it mid-conversation (as ``run_state`` claims it)."""
    conversation = Conversation.objects.create(
        code=f"SIM-{run.pk}", persona_id=run.persona_id, target_id=run.target_id, source=Conversation.Source.SIMULATED,
        integrity_ok=False, integrity_flags=[{"code": "incomplete", "message": "the simulation has not finished"}],
        content_hash=hashlib.sha256(f"run-{run.pk}".encode()).hexdigest(),
    )
    for turn in range(messages):
        Message.objects.create(conversation=conversation, turn_index=turn, role="user" if turn % 2 == 0 else "assistant",
                               content=f"message {turn}")
    if at is not None:
        Message.objects.filter(conversation=conversation).update(created_at=at)
    SimulationRun.objects.filter(pk=run.pk).update(status=SimulationRun.Status.RUNNING, conversation=conversation,
                                                   messages_done=messages, started_at=timezone.now())
    return conversation


def test_a_conversation_still_running_reads_running_not_flagged(researcher, batch):
    run = batch.runs.order_by("id").first()
    _start(run, 2)
    progress = batch_progress(batch)
    assert progress.flagged == 0  # an unfinished conversation is not yet checked, so not flagged
    body = client_for(researcher).get(reverse("simulation:batch-progress", args=[batch.code])).content.decode()
    row = body.split(f"<code>SIM-{run.pk}</code>")[1].split("</tr>")[0]
    assert "flagged" not in row and "running" in row
    assert 'class="bad">flagged' not in body


def test_a_finished_conversation_that_failed_a_check_is_still_flagged(researcher, batch):
    run = batch.runs.order_by("id").first()
    conversation = _start(run, 2)
    Conversation.objects.filter(pk=conversation.pk).update(integrity_flags=[{"code": "empty_message", "message": "x"}])
    SimulationRun.objects.filter(pk=run.pk).update(status=SimulationRun.Status.DONE)
    assert batch_progress(batch).flagged == 1
    body = client_for(researcher).get(reverse("simulation:batch-progress", args=[batch.code])).content.decode()
    assert 'class="bad">flagged' in body


@pytest.mark.parametrize(("seconds", "text"), [
    (20, "less than a minute left"),
    (75, "about 1 minute left"),
    (372, "about 6 minutes left"),
    (2072, "about 35 minutes left"),
    (4 * 3600 + 20 * 60, "about 4 h 20 min left"),
])
def test_time_left_reads_in_minutes(seconds, text):
    assert time_left_text(seconds) == text


def test_time_left_comes_from_the_recent_pace_not_the_whole_batch(researcher, batch):
    """A batch that waited 30 minutes for a worker, then ran 6 messages a minute: about 6 minutes left."""
    now = timezone.now()
    SimulationBatch.objects.filter(pk=batch.pk).update(started_at=now - timedelta(minutes=35), turns=6)
    runs = list(batch.runs.order_by("id"))
    # Four conversations fully done in the last five minutes (24 messages: 4.8 a minute), the rest queued.
    for run in runs[:4]:
        _start(run, 6, at=now - timedelta(minutes=2))
        SimulationRun.objects.filter(pk=run.pk).update(status=SimulationRun.Status.DONE)
    batch.refresh_from_db()
    progress = batch_progress(batch)
    # 4 queued conversations x 6 messages = 24 messages at 24 per 5 minutes: about 5 minutes.
    assert progress.eta_seconds is not None and 4 * 60 <= progress.eta_seconds <= 6 * 60
    body = client_for(researcher).get(reverse("simulation:batch-progress", args=[batch.code])).content.decode()
    assert "about 5 minutes left" in body and " s left" not in body


def _form(persona_set, target, **extra):  # type: ignore[no-untyped-def]
    data = {"protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.pk], "repetitions": 3,
            "exchanges": 4, "first_speaker": "user", "user_model": "openai/persona-agent"}
    data.update(extra)
    return data


def test_before_start_the_batch_form_counts_conversations_and_calls(researcher, fake_llm, settings):
    settings.EVALSITE_PREFLIGHT = True
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    client = client_for(researcher)
    page = client.get(reverse("simulation:batch-create")).content.decode()
    assert reverse("simulation:batch-count") in page and 'id="launch-counts"' in page
    body = client.get(reverse("simulation:batch-count"), _form(persona_set, target)).content.decode()
    # 8 personas x 1 chatbot x 3 repetitions; AMHART: 4 exchanges = 8 messages, the opening card is no call.
    assert "24 conversations" in body
    assert "168 LLM calls" in body and "7 per conversation" in body
    assert "2 launch-check calls" in body  # the user-agent and the chatbot answer once first
    vera = client.get(reverse("simulation:batch-count"), _form(persona_set, target, protocol="vera-mh", turns=10)).content.decode()
    assert "24 conversations" in vera and "240 LLM calls" in vera


def test_the_count_says_what_is_missing_instead_of_guessing(researcher, fake_llm):
    persona_set = builtin_personas_load()
    body = client_for(researcher).get(reverse("simulation:batch-count"), {"persona_set": persona_set.pk}).content.decode()
    assert "Choose one or more chatbots" in body and "conversations" not in body.split("Choose")[0]


def test_the_count_is_for_researchers_only(coordinator, outsider, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    for user in (coordinator, outsider):
        assert client_for(user).get(reverse("simulation:batch-count"), _form(persona_set, target)).status_code == 404


def test_whole_numbers_are_counted(researcher, batch):
    body = client_for(researcher).get(reverse("simulation:batch-progress", args=[batch.code])).content.decode()
    assert ".0 " not in body.replace("0.0000", "")

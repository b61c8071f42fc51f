"""Faults: retries, provider errors, cancel and resume, re-run tasks, crashes and leases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.models import Message
from corpus.personas.services import builtin_personas_load
from simulation import run_state, simulate
from simulation.batches import (
    simulation_batch_cancel,
    simulation_batch_create,
    simulation_batch_resume,
)
from simulation.llm.engine import db
from simulation.models import SimulationBatch, SimulationRun
from simulation.run_checks import conversation_check_integrity
from simulation.tasks import simulation_run_task
from tests.simulation.sim_setup import (
    SECRET,
    amhart_spec,
    make_target,
    simulation_environment,  # noqa: F401
    transcript,
)
from tests.support.fake_llm import empty_content, http_429, http_500

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_run_batch(fake_llm):  # type: ignore[no-untyped-def]
    """Return a planned (not dispatched) AMHART batch of one conversation of 3 exchanges."""
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    spec = amhart_spec(fake_llm, persona_set, [target], persona_ids=(persona_set.personas.first().pk,))
    return simulation_batch_create(spec=spec, dispatch=False)


def _contiguous(run: SimulationRun) -> list[int]:
    return list(Message.objects.filter(conversation=run.conversation).order_by("turn_index").values_list("turn_index", flat=True))


def test_errors_are_retried_and_the_conversation_completes(fake_llm, one_run_batch):
    fake_llm.script("chatbot", [http_500(), http_429(retry_after=0.01), "First reply.", "Second.", "Third."])
    run = one_run_batch.runs.get()
    assert simulation_run_task.delay(run.pk).get() == "done"
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE
    assert _contiguous(run) == list(range(6))
    first_reply = run.conversation.messages.get(turn_index=1)
    assert first_reply.content == "First reply."
    assert first_reply.meta["attempts"] == 3
    assert run.conversation.integrity_ok is True


def test_retries_run_out_the_run_fails_with_its_error_and_the_conversation_is_flagged(fake_llm, one_run_batch):
    fake_llm.script("chatbot", ["Hello there.", http_500()])
    run = one_run_batch.runs.get()
    assert simulation_run_task.delay(run.pk).get() == "failed"
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.FAILED
    assert run.error_kind == "server_error"
    assert "after 3 attempt(s)" in run.error and SECRET not in run.error
    # The messages before the failure are kept, and the conversation is excluded from scoring.
    assert _contiguous(run) == [0, 1, 2]
    conversation = run.conversation
    codes = [f["code"] for f in conversation.integrity_flags]
    assert conversation.integrity_ok is False
    assert codes[0] == "simulation_failed" and "wrong_length" in codes and "wrong_last_speaker" in codes
    one_run_batch.refresh_from_db()
    # The chatbot did not answer: the batch waits for it (core.outages), it is not finished.
    assert one_run_batch.status == SimulationBatch.Status.RUNNING


def test_an_empty_reply_after_every_retry_fails_the_run_and_flags_it(fake_llm, one_run_batch):
    fake_llm.script("chatbot", [empty_content()])
    run = one_run_batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.FAILED and run.error_kind == "empty"
    assert fake_llm.calls("chatbot") == 3
    assert run.conversation.integrity_ok is False
    assert {f["code"] for f in run.conversation.integrity_flags} >= {"simulation_failed", "wrong_length"}


def test_a_user_agent_sliding_into_the_counsellor_role_is_flagged(fake_llm, one_run_batch):
    fake_llm.script("persona-agent", ["As an AI, I'm here to support you. You should try:\n1. Breathing\n2. A walk"])
    run = one_run_batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE
    flags = [f for f in run.conversation.integrity_flags if f["code"] == "role_slide"]
    assert [f["turn"] for f in flags] == [2, 4]
    assert "speaks as an AI" in flags[0]["message"] and "numbered advice list" in flags[0]["message"]
    assert run.conversation.integrity_ok is False


def test_the_role_slide_check_can_be_switched_off_per_batch(fake_llm):
    persona_set = builtin_personas_load()
    fake_llm.script("persona-agent", ["I'm here to support you."])
    spec = amhart_spec(
        fake_llm, persona_set, [make_target(fake_llm)], persona_ids=(persona_set.personas.first().pk,),
        role_slide_check=False,
    )
    batch = simulation_batch_create(spec=spec, dispatch=False)
    run = batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.conversation.integrity_ok is True


def test_a_recorded_model_that_does_not_match_the_cell_is_flagged(fake_llm, one_run_batch):
    run = one_run_batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    message = Message.objects.get(conversation=run.conversation_id, turn_index=3)
    Message.objects.filter(pk=message.pk).update(meta={**message.meta, "requested_model": "openai/other"})
    conversation = conversation_check_integrity(conversation_id=run.conversation_id)
    assert conversation.integrity_ok is False
    assert [f["message"] for f in conversation.integrity_flags] == [
        "recorded chatbot model does not match the assigned cell"
    ]


def test_running_a_finished_task_again_changes_nothing(fake_llm, one_run_batch):
    run = one_run_batch.runs.get()
    assert simulation_run_task.delay(run.pk).get() == "done"
    calls = fake_llm.calls_total
    assert simulation_run_task.delay(run.pk).get() == "skipped"
    assert fake_llm.calls_total == calls
    run.refresh_from_db()
    assert _contiguous(run) == list(range(6)) and run.attempts == 1


class Crash(BaseException):
    """Stands in for SIGKILL: nothing after it runs, no handler sees it."""


def test_a_crashed_executor_is_resumed_after_its_last_saved_message_without_duplicates(fake_llm, one_run_batch, monkeypatch):
    real_chat = simulate.achat
    calls = {"n": 0}

    async def crashing_chat(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise Crash()
        return await real_chat(*args, **kwargs)

    run = one_run_batch.runs.get()
    monkeypatch.setattr(simulate, "achat", crashing_chat)
    with pytest.raises(Crash):  # an executor on another machine: only its lease can tell it is gone
        simulate.simulation_run_execute(run_id=run.pk, owner="otherhost:4242:first:abc")
    monkeypatch.setattr(simulate, "achat", real_chat)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.RUNNING and _contiguous(run) == [0, 1, 2]
    saved = transcript(run.conversation)

    # While the dead executor's lease is live, a second delivery waits instead of writing.
    outcome = simulate.simulation_run_execute(run_id=run.pk, owner=run_state.new_owner("second"))
    assert outcome.status == "busy" and outcome.retry_in > 0
    SimulationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    outcome = simulate.simulation_run_execute(run_id=run.pk, owner=run_state.new_owner("third"))
    assert outcome.status == "done"
    run.refresh_from_db()
    assert _contiguous(run) == list(range(6))
    assert transcript(run.conversation)[:3] == saved
    assert run.attempts == 2 and run.messages_done == 6
    assert run.conversation.integrity_ok is True


def test_an_executor_that_lost_its_lease_writes_nothing_more(fake_llm, one_run_batch):
    run = one_run_batch.runs.get()
    stale = run_state.simulation_run_claim(run_id=run.pk, owner="old-owner")
    SimulationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert simulate.simulation_run_execute(run_id=run.pk).status == "done"
    with pytest.raises(run_state.LeaseLost):
        run_state.save_message(stale, "user", "a late duplicate", {}, None)
    run.refresh_from_db()
    assert _contiguous(run) == list(range(6))


def test_a_cancelled_batch_stops_mid_conversation_and_resumes_after_the_last_saved_message(
    fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    persona_set = builtin_personas_load()
    spec = amhart_spec(fake_llm, persona_set, [make_target(fake_llm)], persona_ids=tuple(persona_set.personas.values_list("pk", flat=True)[:2]))
    batch = simulation_batch_create(spec=spec, dispatch=False)
    first, second = batch.runs.order_by("id")
    real_chat = simulate.achat
    calls = {"n": 0}

    async def cancelling_chat(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        result = await real_chat(*args, **kwargs)
        if calls["n"] == 2:  # a researcher presses Cancel while this call is in flight
            await db(simulation_batch_cancel, batch_id=batch.pk)
        return result

    monkeypatch.setattr(simulate, "achat", cancelling_chat)
    assert simulation_run_task.delay(first.pk).get() == "lost"
    assert simulation_run_task.delay(second.pk).get() == "skipped"
    monkeypatch.setattr(simulate, "achat", real_chat)
    first.refresh_from_db()
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.CANCELLED
    assert first.status == SimulationRun.Status.CANCELLED and _contiguous(first) == [0, 1]
    assert second.conversation_id is None

    with django_capture_on_commit_callbacks(execute=True):
        simulation_batch_resume(batch_id=batch.pk)
    batch.refresh_from_db()
    first.refresh_from_db()
    second.refresh_from_db()
    assert batch.status == SimulationBatch.Status.FINISHED
    assert first.status == second.status == SimulationRun.Status.DONE
    assert _contiguous(first) == _contiguous(second) == list(range(6))
    assert first.conversation.integrity_ok is True


def test_resume_can_retry_failed_conversations(fake_llm, one_run_batch, django_capture_on_commit_callbacks):
    fake_llm.script("chatbot", ["Hello there.", http_500(), http_500(), http_500(), "Back again.", "Bye."])
    run = one_run_batch.runs.get()
    simulation_run_task.delay(run.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        simulation_batch_resume(batch_id=one_run_batch.pk)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.FAILED  # failed runs stay failed unless asked
    with django_capture_on_commit_callbacks(execute=True):
        simulation_batch_resume(batch_id=one_run_batch.pk, include_failed=True)
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE and run.error == ""
    assert _contiguous(run) == list(range(6))
    assert run.conversation.integrity_ok is True


def test_calls_go_through_the_shared_limiters_of_the_target_and_the_user_agent(fake_llm, monkeypatch):
    from simulation.llm import LocalRateLimiter

    persona_set = builtin_personas_load()
    target = make_target(fake_llm, max_concurrent=2, requests_per_minute=30)
    spec = amhart_spec(fake_llm, persona_set, [target], persona_ids=(persona_set.personas.first().pk,))
    batch = simulation_batch_create(spec=spec, dispatch=False)
    asked: list[tuple[str, int, int]] = []
    limiters: dict[str, LocalRateLimiter] = {}

    def recording_limiter_for(name, max_concurrent, rpm, **kwargs):  # type: ignore[no-untyped-def]
        asked.append((name, max_concurrent, rpm))
        return limiters.setdefault(name, LocalRateLimiter(max_concurrent, rpm))

    monkeypatch.setattr(simulate, "limiter_for", recording_limiter_for)
    simulation_run_task.delay(batch.runs.get().pk)
    assert ("simulation-target", 2, 30) in asked
    assert ("simulation-user-agent", batch.user_max_concurrent, 0) in asked
    # Every call started and released its slot in the target's budget (model @ endpoint).
    state = limiters["simulation-target"]._keys[f"openai/chatbot@{fake_llm.base_url}"]
    assert state.in_flight == 0 and len(state.starts) == 3

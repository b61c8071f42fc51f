"""A cancelled batch stops every conversation before its next call, as the page says."""

from __future__ import annotations

import asyncio
import time

import pytest

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_cancel, simulation_batch_create
from simulation.llm.engine import db, run_jobs
from simulation.models import SimulationRun
from simulation.simulate import simulation_run_job
from tests.integration.harness import Gate
from tests.simulation.sim_setup import (
    amhart_spec,
    make_target,
    simulation_environment,  # noqa: F401
)

pytestmark = pytest.mark.django_db


def test_conversations_waiting_for_the_chatbots_slot_make_no_call_after_a_cancel(fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm, max_concurrent=1)  # one call at a time to this chatbot
    personas = tuple(persona_set.personas.values_list("pk", flat=True)[:3])
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target], persona_ids=personas), dispatch=False)
    fake_llm.script("chatbot", ["A reply."])
    fake_llm.set_latency(0.2)
    seen: dict[str, int] = {}

    async def cancel() -> None:
        while fake_llm.in_flight < 1:  # one conversation calls the chatbot, two wait for the slot
            await asyncio.sleep(0.005)
        await db(simulation_batch_cancel, batch_id=batch.pk)
        seen["at_cancel"] = fake_llm.calls_total

    ids = list(batch.runs.values_list("pk", flat=True))
    assert len(ids) == 3
    outcomes = run_jobs([*(lambda pk=pk: simulation_run_job(run_id=pk) for pk in ids), cancel])

    assert seen["at_cancel"] == 1 and fake_llm.calls_total == 1
    assert [o.status for o in outcomes[:3]] == ["lost"] * 3
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.CANCELLED}


@pytest.mark.parametrize("path", ["litellm", "direct"])
def test_no_call_reaches_a_chatbot_after_the_cancel_is_recorded(fake_llm, path, monkeypatch):
    """16 conversations at C=8 (two chatbots, four slots each) and the first call's reply held.

    The conversations that took a slot wait while the first call to the endpoint builds the
    shared HTTP client (it is held at the server): they had passed every check made before
    that wait. Cancel is recorded, then the held reply is let go: none of them may send.
    """
    # litellm (its first call to an endpoint goes alone while it builds the shared client), or the
    # openai SDK directly (simulation.llm.direct: every slot holder sends at once, before the cancel).
    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "1" if path == "direct" else "0")
    persona_set = builtin_personas_load()
    targets = [make_target(fake_llm, code=f"T-BOT{n}", model=f"openai/chatbot{n}", max_concurrent=4) for n in (1, 2)]
    personas = tuple(persona_set.personas.values_list("pk", flat=True)[:8])
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, targets, persona_ids=personas), dispatch=False)
    held = Gate("A reply.", free=0)
    for n in (1, 2):
        fake_llm.script(f"chatbot{n}", [held])
    seen: dict[str, float] = {}

    async def cancel() -> None:
        while fake_llm.in_flight < 1:  # the first call is at the server, its reply held
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)  # the other slot holders reach the wait behind it (only makes the old race certain)
        await db(simulation_batch_cancel, batch_id=batch.pk)
        seen["cancelled_at"] = time.time()  # the cancel is committed
        held.open()

    ids = list(batch.runs.values_list("pk", flat=True))
    assert len(ids) == 16
    outcomes = run_jobs([*(lambda pk=pk: simulation_run_job(run_id=pk) for pk in ids), cancel])

    late = [r.received_at - seen["cancelled_at"] for r in fake_llm.requests if r.received_at > seen["cancelled_at"]]
    assert late == []
    if path == "litellm":
        assert fake_llm.calls_total == 1  # the call in flight at the cancel, not one more
    else:  # the calls in flight at the cancel (one per slot at most), not one more
        assert 1 <= fake_llm.calls_total <= 8
    assert [o.status for o in outcomes[:16]] == ["lost"] * 16
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.CANCELLED}

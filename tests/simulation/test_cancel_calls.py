"""A cancelled batch stops every conversation before its next call, as the page says."""

from __future__ import annotations

import asyncio

import pytest

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_cancel, simulation_batch_create
from simulation.llm.engine import db, run_jobs
from simulation.models import SimulationRun
from simulation.simulate import simulation_run_job
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

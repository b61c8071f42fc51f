"""A batch started while the task queue is down: its runs fail at once (retryable), never wait "queued"."""

from __future__ import annotations

import pytest

from core.enqueue import BrokerUnavailable
from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from simulation.selectors import batch_error_groups
from tests.simulation.sim_setup import KEY_ENV, amhart_spec, make_target, simulation_environment  # noqa: F401


@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_runs_were_not_queued_fails_them_with_what_to_do(fake_llm, broker_down):
    persona_set = builtin_personas_load()
    with pytest.raises(BrokerUnavailable, match="task queue does not answer"):
        simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [make_target(fake_llm)]))
    batch = SimulationBatch.objects.get()
    runs = batch.runs.all()
    assert runs.exists()
    assert set(runs.values_list("status", "error_kind")) == {(SimulationRun.Status.FAILED, "queue")}
    assert batch.status == SimulationBatch.Status.FINISHED  # not "running" with nothing running
    group = batch_error_groups(batch)[0]
    assert group.kind == "queue" and "Redis" in group.hint  # resume with the failed ones once the queue answers

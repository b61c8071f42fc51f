"""Simulation runs survive a lost message or a gone executor: the sweeper (core.recovery)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from core import recovery
from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import SimulationRun
from tests.simulation.sim_setup import amhart_spec, make_target, simulation_environment  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_run_batch(fake_llm):  # type: ignore[no-untyped-def]
    """Return a planned batch of one conversation whose message was never sent (dispatch off)."""
    persona_set = builtin_personas_load()
    spec = amhart_spec(fake_llm, persona_set, [make_target(fake_llm)], persona_ids=(persona_set.personas.first().pk,))
    return simulation_batch_create(spec=spec, dispatch=False)


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_queued_run_whose_message_was_lost_is_dispatched_again_past_the_threshold(
    fake_llm, one_run_batch, django_capture_on_commit_callbacks
):
    """Defect 1: after a Redis restart without persistence, queued runs waited for ever."""
    run = one_run_batch.runs.get()
    assert run.status == SimulationRun.Status.QUEUED  # planned, its message never delivered
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched.get("simulation runs", 0) == 0  # queued just now
    SimulationRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - timedelta(seconds=31))
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched["simulation runs"] == 1
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE and run.attempts == 1


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_run_whose_executor_is_gone_is_resumed_by_a_living_worker(
    fake_llm, one_run_batch, django_capture_on_commit_callbacks
):
    """Defect 2: living workers took back only judge results, not a dead worker's conversations."""
    run = one_run_batch.runs.get()
    SimulationRun.objects.filter(pk=run.pk).update(
        status=SimulationRun.Status.RUNNING, lease_owner="otherhost:7:gone:abc", attempts=1,
        lease_expires_at=timezone.now() - timedelta(seconds=1), started_at=timezone.now() - timedelta(seconds=5),
        queued_at=timezone.now() - timedelta(seconds=10),
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().lost["simulation runs"] == 1
    run.refresh_from_db()
    assert run.status == SimulationRun.Status.DONE and run.attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_sweep_that_cannot_reach_the_broker_leaves_the_run_queued_for_the_next_sweep(broker_down, fake_llm, one_run_batch):
    """Defect 4: a broker blip during a sweep failed the runs it was sending again ("not queued")."""
    run = one_run_batch.runs.get()
    SimulationRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - timedelta(minutes=5))

    report = recovery.sweep()  # the broker refuses: logged, never raised

    run.refresh_from_db()
    assert report.redispatched.get("simulation runs", 0) == 0
    assert run.status == SimulationRun.Status.QUEUED and run.error == ""
    assert run.queued_at is None  # the next sweep sends it first

"""`manage.py simulate`: start a batch inline with a progress bar, show, cancel and resume it."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from corpus.personas.services import builtin_personas_load
from simulation.models import SimulationBatch, SimulationRun
from tests.simulation.sim_setup import KEY_ENV, make_target, simulation_environment  # noqa: F401


def _simulate(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("simulate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_simulate_inline_runs_the_batch_in_process_and_reports(fake_llm):
    builtin_personas_load()
    make_target(fake_llm, code="T-CLI")
    out, err = _simulate(
        "--persona-set", "amhart-adolescent", "--personas", "amhart-f-anx-mod,amhart-m-dep-sev",
        "--targets", "T-CLI", "--user-model", "openai/persona-agent", "--user-api-base", fake_llm.base_url,
        "--user-api-key-env", KEY_ENV, "--user-params", '{"temperature": 1.0}', "--exchanges", "2",
        "--repetitions", "2", "--inline", "--threads", "1",  # in-memory SQLite: one writer thread
    )
    batch = SimulationBatch.objects.get()
    assert batch.status == SimulationBatch.Status.FINISHED
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.DONE}
    assert "Started " + batch.code in out and "[" + "#" * 30 + "] 4/4" in out
    assert f"{batch.code}: finished · 4 done, 0 failed" in out and err == ""


@pytest.mark.django_db
def test_simulate_cancel_status_and_bad_input(fake_llm):
    builtin_personas_load()
    make_target(fake_llm, code="T-CLI")
    common = ["--persona-set", "amhart-adolescent", "--targets", "T-CLI", "--user-model", "openai/persona-agent"]
    out, _ = _simulate(*common, "--exchanges", "1")
    batch = SimulationBatch.objects.get()
    out, _ = _simulate("--cancel", batch.code)
    assert f"Cancelled {batch.code}" in out
    out, _ = _simulate("--status", batch.code)
    assert "cancelled · 0 done, 0 failed, 8 cancelled" in out
    with pytest.raises(CommandError, match="unknown chatbot"):
        _simulate("--persona-set", "amhart-adolescent", "--targets", "T-NOPE", "--user-model", "x/y")
    with pytest.raises(CommandError, match="turns must be even"):
        _simulate(*common, "--protocol", "vera-mh", "--turns", "5")


@pytest.mark.django_db(transaction=True)
def test_simulate_wait_follows_the_workers_until_the_batch_is_done(fake_llm):
    # Celery is eager here: the tasks run as the batch is committed, then --wait reports.
    builtin_personas_load()
    make_target(fake_llm, code="T-CLI")
    out, _ = _simulate(
        "--persona-set", "amhart-adolescent", "--personas", "amhart-f-anx-mod", "--targets", "T-CLI",
        "--user-model", "openai/persona-agent", "--user-api-base", fake_llm.base_url, "--user-api-key-env", KEY_ENV,
        "--exchanges", "1", "--wait",
    )
    assert "] 1/1 · 0 running · 0 failed · 0 flagged" in out and ": finished · 1 done" in out

"""Launch checks also when a batch is resumed: the page, the API and the command refuse to resume
into a refusal, naming the model, and check only the models the resumed runs would call."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_cancel, simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from simulation.preflight import batch_resume_preflight
from tests.conftest import client_for
from tests.simulation.sim_setup import KEY_ENV, amhart_spec, make_target, simulation_environment  # noqa: F401

pytestmark = pytest.mark.django_db
UNSET = "TEST_RESUME_UNSET_API_KEY"


@pytest.fixture
def checks_on(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.EVALSITE_PREFLIGHT = True
    monkeypatch.delenv(UNSET, raising=False)


@pytest.fixture
def cancelled(fake_llm, checks_on, researcher):  # type: ignore[no-untyped-def]
    """A cancelled batch of two chatbots: T-BOT (key set) and T-NOKEY (its key variable unset)."""
    persona_set = builtin_personas_load()
    targets = [make_target(fake_llm), make_target(fake_llm, code="T-NOKEY", model="openai/other", api_key_env=UNSET)]
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, targets), dispatch=False, created_by=researcher)
    simulation_batch_cancel(batch_id=batch.pk)
    return batch


def statuses(batch):  # type: ignore[no-untyped-def]
    return set(batch.runs.values_list("status", flat=True))


def test_the_page_refuses_to_resume_into_a_refusal(researcher, cancelled):
    response = client_for(researcher).post(reverse("simulation:batch-resume", args=[cancelled.code]), {"include_failed": "1"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Launch check failed: nothing was resumed" in html
    # Issue 30, finding 7: which variables the server lacks is for administrators only.
    assert "chatbot T-NOKEY" in html and "provider is not configured on this server" in html and UNSET not in html
    assert 'name="include_failed" value="1" checked' in html  # the choice is kept for the next try
    cancelled.refresh_from_db()
    assert cancelled.status == SimulationBatch.Status.CANCELLED and statuses(cancelled) == {SimulationRun.Status.CANCELLED}


def test_an_administrator_reads_which_key_variable_is_missing(admin_user, cancelled):
    response = client_for(admin_user).post(reverse("simulation:batch-resume", args=[cancelled.code]), {"include_failed": "1"})
    html = response.content.decode()
    assert response.status_code == 400 and f"the key variable {UNSET} is not set" in html and "set the key variable" in html


def test_only_the_models_of_the_runs_to_resume_are_checked(researcher, cancelled, fake_llm):
    # T-NOKEY's conversations are done: resuming runs only T-BOT's, which answers.
    cancelled.runs.filter(target__code="T-NOKEY").update(status=SimulationRun.Status.DONE)
    report = batch_resume_preflight(cancelled)
    assert report.ok and {c.used_by for c in report.checks} == {"user-agent", "chatbot T-BOT"}
    # Their failed conversations matter once failed ones are retried too.
    cancelled.runs.filter(target__code="T-NOKEY").update(status=SimulationRun.Status.FAILED)
    assert batch_resume_preflight(cancelled).ok
    refused = batch_resume_preflight(cancelled, include_failed=True)
    assert [c.used_by for c in refused.failed] == ["chatbot T-NOKEY"]
    response = client_for(researcher).post(reverse("simulation:batch-resume", args=[cancelled.code]))
    assert response.status_code == 302
    cancelled.refresh_from_db()
    assert cancelled.status == SimulationBatch.Status.RUNNING
    assert SimulationRun.Status.FAILED in statuses(cancelled)  # not retried


def test_a_batch_with_nothing_left_to_run_needs_no_call(cancelled, fake_llm):
    cancelled.runs.update(status=SimulationRun.Status.DONE)
    before = fake_llm.calls_total
    assert batch_resume_preflight(cancelled, include_failed=True).checks == []
    assert fake_llm.calls_total == before


def test_the_api_refuses_with_the_checks(researcher, cancelled):
    response = client_for(researcher).post(f"/api/v1/simulation-batches/{cancelled.code}/resume/", {"include_failed": False},
                                           content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("the launch check failed, nothing was resumed")
    failed = [c for c in body["preflight"] if not c["ok"]]
    assert [c["used_by"] for c in failed] == ["chatbot T-NOKEY"] and failed[0]["kind"] == "auth" and failed[0]["hint"]
    cancelled.refresh_from_db()
    assert cancelled.status == SimulationBatch.Status.CANCELLED


def test_the_command_refuses_and_says_what_to_do(cancelled, capsys):
    with pytest.raises(CommandError, match="nothing was resumed"):
        call_command("simulate", "--resume", cancelled.code)
    assert "chatbot T-NOKEY" in capsys.readouterr().err
    cancelled.refresh_from_db()
    assert cancelled.status == SimulationBatch.Status.CANCELLED


def test_once_the_key_is_set_the_batch_resumes(researcher, cancelled, monkeypatch):
    monkeypatch.setenv(UNSET, "sk-now-set-0123456789")
    response = client_for(researcher).post(reverse("simulation:batch-resume", args=[cancelled.code]))
    assert response.status_code == 302
    cancelled.refresh_from_db()
    assert cancelled.status == SimulationBatch.Status.RUNNING

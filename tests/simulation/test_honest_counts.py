"""Issue 22, small lies and gaps: a batch's honest state in the API and its list, calls with failed attempts."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.simulate import simulation_runs_execute_inline
from tests.conftest import client_for
from tests.simulation.sim_setup import amhart_spec, make_target, simulation_environment  # noqa: F401
from tests.support.fake_llm import http_400, http_500

pytestmark = pytest.mark.django_db
BASE = "/api/v1/simulation-batches/"


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _run_batch(fake_llm, persona_set, targets, researcher):  # type: ignore[no-untyped-def]
    spec = amhart_spec(fake_llm, persona_set, targets, exchanges=1, persona_ids=tuple(persona_set.personas.values_list("pk", flat=True)[:2]))
    batch = simulation_batch_create(spec=spec, dispatch=False, created_by=researcher)
    simulation_runs_execute_inline(run_ids=list(batch.runs.values_list("pk", flat=True)), threads=4)
    return batch


def test_a_batch_whose_every_conversation_failed_is_failed_in_the_api_and_its_list(researcher, fake_llm):
    persona_set = builtin_personas_load()
    fake_llm.script("broken-bot", [http_400("the chatbot refuses every request")])
    batch = _run_batch(fake_llm, persona_set, [make_target(fake_llm, code="T-BROKEN", model="openai/broken-bot")], researcher)
    client = _api(researcher)
    detail = client.get(f"{BASE}{batch.code}/").json()
    assert detail["progress"]["failed"] == 2 and detail["progress"]["done"] == 0
    assert detail["status"] == "finished"  # no longer going; what it is, is the state
    assert (detail["state"], detail["state_label"]) == ("failed", "Failed")
    assert detail["progress"]["state"] == "failed"
    listed = {b["code"]: b for b in client.get(BASE).json()["results"]}
    assert (listed[batch.code]["state"], listed[batch.code]["state_label"]) == ("failed", "Failed")
    page = client_for(researcher).get(reverse("simulation:batch-list")).content.decode()
    assert '<strong class="bad">Failed</strong>' in page


def test_a_batch_with_some_failures_is_finished_with_failures_and_a_clean_one_finished(researcher, fake_llm):
    persona_set = builtin_personas_load()
    fake_llm.script("broken-bot", [http_400("the chatbot refuses every request")])
    broken = make_target(fake_llm, code="T-BROKEN", model="openai/broken-bot")
    mixed = _run_batch(fake_llm, persona_set, [make_target(fake_llm), broken], researcher)
    clean = _run_batch(fake_llm, persona_set, [make_target(fake_llm, code="T-OK")], researcher)
    client = _api(researcher)
    listed = {b["code"]: b for b in client.get(BASE).json()["results"]}
    assert (listed[mixed.code]["state"], listed[mixed.code]["state_label"]) == ("partial", "Finished with failures")
    assert client.get(f"{BASE}{mixed.code}/").json()["state"] == "partial"
    assert (listed[clean.code]["state"], listed[clean.code]["state_label"]) == ("finished", "Finished")
    assert client.get(f"{BASE}{clean.code}/").json()["state"] == "finished"
    schema = client.get("/api/schema/").content.decode()
    assert "finished with failures" in schema  # the state is documented in the API reference


def test_a_cancelled_and_a_running_batch_say_so(researcher, fake_llm):
    persona_set = builtin_personas_load()
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [make_target(fake_llm)]), dispatch=False,
                                    created_by=researcher)
    client = _api(researcher)
    assert [b["state"] for b in client.get(BASE).json()["results"]] == ["running"]
    client.post(f"{BASE}{batch.code}/cancel/")
    assert client.get(f"{BASE}{batch.code}/").json()["state"] == "cancelled"
    assert [b["state"] for b in client.get(BASE).json()["results"]] == ["cancelled"]


def test_calls_count_every_http_request_failed_attempts_included(researcher, fake_llm):
    """A chatbot that fails once, answers, then fails for good (3 attempts): 6 requests, 4 of them failed."""
    persona_set = builtin_personas_load()
    # AMHART, 2 exchanges: the opening card (no call), the chatbot, the user-agent, the chatbot.
    fake_llm.script("flaky-bot", [http_500(), "I hear you.", http_500()])
    spec = amhart_spec(fake_llm, persona_set, [make_target(fake_llm, code="T-FLAKY", model="openai/flaky-bot")],
                       exchanges=2, persona_ids=tuple(persona_set.personas.values_list("pk", flat=True)[:1]))
    batch = simulation_batch_create(spec=spec, dispatch=False, created_by=researcher)
    simulation_runs_execute_inline(run_ids=list(batch.runs.values_list("pk", flat=True)))
    run = batch.runs.get()
    assert run.status == "failed" and fake_llm.calls_total == 6
    assert (run.calls, run.failed_calls) == (6, 4)  # 2 + 1 + 3 requests; 1 + 0 + 3 failed
    progress = _api(researcher).get(f"{BASE}{batch.code}/progress/").json()
    assert (progress["calls"], progress["failed_calls"]) == (6, 4)
    runs = _api(researcher).get(f"{BASE}{batch.code}/runs/").json()["results"]
    assert (runs[0]["calls"], runs[0]["failed_calls"]) == (6, 4)
    page = client_for(researcher).get(reverse("simulation:batch-detail", args=[batch.code])).content.decode()
    assert "6 <small class=\"muted\">4 of them failed attempts</small>" in page

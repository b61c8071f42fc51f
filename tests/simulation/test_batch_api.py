"""The batch API: create, list, detail with progress, runs, cancel, resume; access rules."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import PromptTemplate, SimulationBatch
from tests.simulation.sim_setup import (  # noqa: F401
    KEY_ENV,
    SECRET,
    amhart_spec,
    make_target,
    shared,
    simulation_environment,
)

pytestmark = pytest.mark.django_db
BASE = "/api/v1/simulation-batches/"


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _payload(fake_llm, persona_set, target, **extra):  # type: ignore[no-untyped-def]
    payload = {
        "name": "api pilot",
        "protocol": "amhart",
        "persona_set": persona_set.pk,
        "personas": list(persona_set.personas.values_list("pk", flat=True)[:2]),
        "targets": [target.code],
        "repetitions": 1,
        "user_agent": {"model": "openai/persona-agent", "api_base": fake_llm.base_url, "api_key_env": KEY_ENV, "params": {"temperature": 1.0}},
        "exchanges": 2,
    }
    payload.update(extra)
    return payload


def test_a_researcher_creates_a_batch_and_reads_its_progress_and_runs(researcher, fake_llm, django_capture_on_commit_callbacks):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    client = api(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(BASE, _payload(fake_llm, persona_set, target), format="json")
    assert response.status_code == 201, response.json()
    code = response.json()["code"]
    detail = client.get(f"{BASE}{code}/").json()
    assert detail["status"] == "finished" and detail["targets"] == [target.code]
    assert detail["progress"]["done"] == 2 and detail["progress"]["messages"] == 8
    assert detail["persona_template"]["key"].startswith("personaset-amhart")
    assert detail["user_api_key_env"] == KEY_ENV and SECRET not in str(detail)
    runs = client.get(f"{BASE}{code}/runs/").json()["results"]
    assert [r["status"] for r in runs] == ["done", "done"] and all(r["conversation"] for r in runs)
    assert client.get(f"{BASE}{code}/progress/").json()["percent"] == 100
    listed = client.get(BASE).json()["results"]
    assert [(b["code"], b["runs_done"], b["runs_total"]) for b in listed] == [(code, 2, 2)]


def test_service_problems_answer_400_and_store_nothing(researcher, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    payload = _payload(fake_llm, persona_set, target, user_agent={"model": "openai/x", "params": {"api_key": "sk-nope"}})
    response = api(researcher).post(BASE, payload, format="json")
    assert response.status_code == 400
    assert "params may not set api_key" in response.json()["detail"]
    assert not SimulationBatch.objects.exists()


def test_cancel_then_resume_through_the_api(researcher, fake_llm, django_capture_on_commit_callbacks):
    persona_set = builtin_personas_load()
    batch = simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [make_target(fake_llm)], exchanges=1), dispatch=False,
                                    created_by=researcher)
    client = api(researcher)
    assert client.post(f"{BASE}{batch.code}/cancel/").json()["status"] == "cancelled"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{BASE}{batch.code}/resume/", {"include_failed": False}, format="json")
    assert response.status_code == 200
    assert client.get(f"{BASE}{batch.code}/").json()["status"] == "finished"
    assert client.post(f"{BASE}{batch.code}/cancel/").status_code == 409


def test_coordinators_read_and_cannot_write(coordinator, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    batch = shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target]), dispatch=False))
    client = api(coordinator)
    assert client.get(f"{BASE}{batch.code}/").status_code == 200
    assert client.post(BASE, _payload(fake_llm, persona_set, target), format="json").status_code == 403
    assert client.post(f"{BASE}{batch.code}/cancel/").status_code == 403


@pytest.mark.parametrize("who", ["clinician", "outsider"])
def test_clinicians_and_outsiders_get_403_everywhere(who, request, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    batch = shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target]), dispatch=False))
    client = api(request.getfixturevalue(who))
    for url in (BASE, f"{BASE}{batch.code}/", f"{BASE}{batch.code}/runs/", f"{BASE}{batch.code}/progress/", "/api/v1/simulation-prompts/"):
        assert client.get(url).status_code == 403, url
    for url in (BASE, f"{BASE}{batch.code}/cancel/", f"{BASE}{batch.code}/resume/", "/api/v1/simulation-prompts/"):
        assert client.post(url, {}, format="json").status_code == 403, url


def test_prompt_templates_through_the_api(researcher):
    client = api(researcher)
    names = [t["key"] for t in client.get("/api/v1/simulation-prompts/").json()["results"]]
    assert "evalsite-vera-persona" in names
    body = {"kind": "persona_system", "key": "team-vera", "text": "You are {name}. {Background}"}
    first = client.post("/api/v1/simulation-prompts/", body, format="json")
    again = client.post("/api/v1/simulation-prompts/", body, format="json")
    assert first.status_code == 201 and again.status_code == 200 and first.json()["id"] == again.json()["id"]
    assert first.json()["placeholders"] == ["name", "Background"]
    assert client.put(f"/api/v1/simulation-prompts/{first.json()['id']}/", body, format="json").status_code == 405
    assert PromptTemplate.objects.filter(key="team-vera").count() == 1

"""The judging API: judges, prompts, runs with progress and warnings, label exports."""

from __future__ import annotations

import csv
import io

from judging.models import Judge, JudgeRun, PromptTemplate
from tests.conftest import client_for

from .conftest import KEY_ENV, checklist_reply


def test_a_researcher_creates_judges_and_a_run_by_names_over_the_api(fake, researcher, amhart, conversations, django_capture_on_commit_callbacks):
    client = client_for(researcher)
    for name, provider in (("gpt", ""), ("gpt-mini", "")):
        response = client.post(
            "/api/v1/judges/",
            {"name": name, "instrument": amhart.pk, "model": f"openai/{name}", "provider": provider,
             "api_base": fake.base_url, "api_key_env": KEY_ENV, "reasoning_effort": "low"},
            content_type="application/json",
        )
        assert response.status_code == 201, response.json()
        assert response.json()["provider"] == "openai" and response.json()["mode"] == "checklist"
        fake.script(name, [checklist_reply()])

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/v1/judge-runs/",
            {"judges": ["gpt", str(Judge.objects.get(name="gpt-mini").pk)], "codes": [c.code for c in conversations]},
            content_type="application/json",
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert [j["name"] for j in body["judges"]] == ["gpt", "gpt-mini"]
    assert len(body["warnings"]) == 1 and "'openai'" in body["warnings"][0]
    assert fake.requests[0].body["reasoning_effort"] == "low"

    progress = client.get(f"/api/v1/judge-runs/{body['id']}/progress/").json()
    assert progress["status"] == "completed" and progress["progress"] == 1.0
    assert (progress["n_total"], progress["n_done"], progress["n_calls"]) == (4, 4, 4)
    assert progress["warnings"] == body["warnings"]

    export = client.get(f"/api/v1/judge-runs/{body['id']}/labels/?as=long")
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert len(rows) == 4 * 14
    assert client.get(f"/api/v1/judge-runs/{body['id']}/labels/?as=nonsense").status_code == 400
    listed = client.get("/api/v1/judge-runs/").json()
    assert listed["count"] == 1


def test_refusals_are_400_or_409_with_the_reason(fake, researcher, amhart, make_judge):
    client = client_for(researcher)
    make_judge("gpt", amhart)
    duplicate = client.post("/api/v1/judges/", {"name": "gpt", "instrument": amhart.pk, "model": "openai/gpt"}, content_type="application/json")
    assert duplicate.status_code == 409
    with_key = client.post(
        "/api/v1/judges/",
        {"name": "other", "instrument": amhart.pk, "model": "openai/x", "params": {"api_key": "sk-123"}},
        content_type="application/json",
    )
    assert with_key.status_code == 400 and "api_key" in with_key.json()["detail"]
    unknown = client.post("/api/v1/judge-runs/", {"judges": ["nobody"], "codes": ["C-X"]}, content_type="application/json")
    assert unknown.status_code == 400
    assert not JudgeRun.objects.exists()


def test_prompt_templates_are_versioned_over_the_api(researcher):
    client = client_for(researcher)
    payload = {
        "key": "terse",
        "name": "Terse checklist",
        "mode": "checklist",
        "system_template": "Judge {instrument}.",
        "user_template": "{transcript}\n{items}",
        "retry_template": "Fix: {error}",
    }
    first = client.post("/api/v1/judge-prompts/", payload, content_type="application/json")
    again = client.post("/api/v1/judge-prompts/", payload, content_type="application/json")
    changed = client.post("/api/v1/judge-prompts/", {**payload, "system_template": "Judge {instrument} strictly."}, content_type="application/json")
    assert (first.status_code, again.status_code, changed.status_code) == (201, 200, 201)
    assert (first.json()["version"], again.json()["id"], changed.json()["version"]) == (1, first.json()["id"], 2)
    bad = client.post("/api/v1/judge-prompts/", {**payload, "key": "bad", "user_template": "{items} {transcrpt}"}, content_type="application/json")
    assert bad.status_code == 400 and "{transcrpt}" in bad.json()["detail"]
    assert PromptTemplate.objects.filter(key="terse").count() == 2

"""The batch pages: who may see and do what, the form, live progress, a fixed query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_create
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from tests.conftest import client_for
from tests.simulation.sim_setup import (  # noqa: F401
    KEY_ENV,
    amhart_spec,
    make_target,
    shared,
    simulation_environment,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(fake_llm, researcher):  # type: ignore[no-untyped-def]
    persona_set = builtin_personas_load()
    # Started by the researcher (only its creator or an admin cancels and resumes it).
    return shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [make_target(fake_llm)]), dispatch=False,
                                   created_by=researcher))


def _post_form(client, fake_llm, persona_set, target, **extra):  # type: ignore[no-untyped-def]
    data = {
        "name": "pilot", "protocol": "amhart", "persona_set": persona_set.pk, "targets": [target.pk],
        "repetitions": 2, "user_model": "openai/persona-agent", "user_api_base": fake_llm.base_url,
        "user_api_key_env": KEY_ENV, "user_params": '{"temperature": 1.0}', "user_max_concurrent": 4,
        "user_requests_per_minute": 0, "exchanges": 2, "first_speaker": "user", "role_slide_check": "on",
    }
    data.update(extra)
    return client.post(reverse("simulation:batch-create"), data)


def test_a_researcher_starts_a_batch_from_the_form_and_lands_on_its_page(researcher, fake_llm, django_capture_on_commit_callbacks):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    client = client_for(researcher)
    assert client.get(reverse("simulation:batch-create")).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = _post_form(client, fake_llm, persona_set, target)
    batch = SimulationBatch.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("simulation:batch-detail", args=[batch.code])
    assert batch.created_by == researcher and batch.runs.count() == 16
    assert batch.status == SimulationBatch.Status.FINISHED
    page = client.get(response["Location"])
    body = page.content.decode()
    assert "Finished: all 16 conversations done" in body
    assert batch.persona_template.key in body and "evalsite-kickoff" in body
    assert 'hx-trigger="every 3s"' not in body  # a finished batch stops polling


def test_form_problems_are_shown_and_nothing_starts(researcher, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    response = _post_form(client_for(researcher), fake_llm, persona_set, target, first_speaker="chatbot")
    assert response.status_code == 400
    assert "the persona speaks first" in response.content.decode()
    assert not SimulationBatch.objects.exists()


def test_a_running_batch_page_polls_its_progress(researcher, batch):
    client = client_for(researcher)
    body = client.get(reverse("simulation:batch-detail", args=[batch.code])).content.decode()
    assert 'hx-trigger="every 3s"' in body and reverse("simulation:batch-progress", args=[batch.code]) in body
    partial = client.get(reverse("simulation:batch-progress", args=[batch.code]), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    text = partial.content.decode()
    assert text.lstrip().startswith('<section id="batch-progress"') and "0 of 8 finished" in text


def test_the_batch_page_costs_the_same_queries_for_8_or_80_conversations(researcher, fake_llm):
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    small = shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target]), dispatch=False))
    large = shared(simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target], repetitions=10), dispatch=False))
    for run in SimulationRun.objects.filter(batch=large)[:5]:
        SimulationRun.objects.filter(pk=run.pk).update(status=SimulationRun.Status.FAILED, error="boom")
    client = client_for(researcher)
    counts = []
    for b in (small, large):
        url = reverse("simulation:batch-detail", args=[b.code])
        client.get(url)  # warm the session and the role cache
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    assert counts[0] <= 14


def test_coordinators_read_but_cannot_start_cancel_or_resume(coordinator, batch):
    client = client_for(coordinator)
    assert client.get(reverse("simulation:batch-list")).status_code == 200
    assert client.get(reverse("simulation:batch-detail", args=[batch.code])).status_code == 200
    assert client.get(reverse("simulation:batch-create")).status_code == 404
    assert client.post(reverse("simulation:batch-cancel", args=[batch.code])).status_code == 404
    assert client.post(reverse("simulation:batch-resume", args=[batch.code])).status_code == 404
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.RUNNING


@pytest.mark.parametrize("who", ["clinician", "outsider"])
def test_clinicians_and_outsiders_see_no_simulation_page(who, request, batch):
    client = client_for(request.getfixturevalue(who))
    for url in (
        reverse("simulation:batch-list"),
        reverse("simulation:batch-create"),
        reverse("simulation:batch-detail", args=[batch.code]),
        reverse("simulation:batch-progress", args=[batch.code]),
        reverse("simulation:prompt-template-list"),
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("simulation:batch-cancel", args=[batch.code])).status_code == 404


def test_a_researcher_cancels_and_resumes_from_the_page(researcher, batch, django_capture_on_commit_callbacks):
    client = client_for(researcher)
    client.post(reverse("simulation:batch-cancel", args=[batch.code]))
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.CANCELLED
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.CANCELLED}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("simulation:batch-resume", args=[batch.code]))
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.FINISHED
    assert set(batch.runs.values_list("status", flat=True)) == {SimulationRun.Status.DONE}


def test_prompt_templates_are_listed_and_a_new_text_becomes_a_new_version(researcher):
    client = client_for(researcher)
    assert "evalsite-vera-reminder" in client.get(reverse("simulation:prompt-template-list")).content.decode()
    data = {"kind": "reminder", "key": "my-reminder", "name": "Mine", "text": "Stay the user.\n\n{chatbot_message}"}
    client.post(reverse("simulation:prompt-template-create"), data)
    client.post(reverse("simulation:prompt-template-create"), {**data, "text": "Stay the user!"})
    client.post(reverse("simulation:prompt-template-create"), {**data, "text": "Stay the user!"})
    versions = list(PromptTemplate.objects.filter(key="my-reminder").values_list("version", "text"))
    assert sorted(versions) == [(1, "Stay the user.\n\n{chatbot_message}"), (2, "Stay the user!")]
    template = PromptTemplate.objects.get(key="my-reminder", version=1)
    template.text = "changed"
    with pytest.raises(ValueError, match="immutable"):
        template.save()


def test_the_navigation_offers_simulations_to_researchers(researcher):
    body = client_for(researcher).get(reverse("simulation:batch-list")).content.decode()
    assert f'href="{reverse("simulation:batch-list")}"' in body

"""Launch checks refuse a batch or a judge run that cannot work; failed jobs read as failed."""

from __future__ import annotations

import json

import pytest

from corpus.instruments.services import builtin_instruments_load
from corpus.personas.services import builtin_personas_load
from judging.models import Judge, JudgeRun
from judging.services import judge_create
from simulation.batch_spec import UserAgent
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch
from simulation.simulate import simulation_run_execute
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD
from tests.factories import ConversationFactory
from tests.simulation.sim_setup import KEY_ENV, SECRET, amhart_spec, make_target
from tests.support.fake_llm import FakeLLM, http_400

pytestmark = pytest.mark.django_db(transaction=True)
UNSET = "TEST_UNSET_API_KEY"


@pytest.fixture
def fake(monkeypatch, settings):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv(UNSET, raising=False)
    settings.EVALSITE_PREFLIGHT = True
    settings.SIMULATION_RETRY = {"max_attempts": 1, "base_delay": 0.01, "max_delay": 0.02}
    with FakeLLM() as server:
        yield server


def test_a_batch_whose_key_is_unset_is_refused_and_a_failed_batch_reads_failed(page, researcher, fake):
    persona_set = builtin_personas_load()
    target = make_target(fake)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/corpus/simulations/new/")
    page.select_option("#id_protocol", "amhart")
    page.select_option("#id_persona_set", str(persona_set.pk))
    page.check(f"input[name=targets][value='{target.pk}']")
    page.fill("#id_user_model", "openai/persona-agent")
    page.fill("#id_user_api_base", fake.base_url)
    page.fill("#id_user_api_key_env", UNSET)
    page.click("button:has-text('Start the batch')", timeout=60_000)  # the first call imports litellm
    page.wait_for_selector(".preflight")
    check = page.locator(".preflight").inner_text()
    assert "Launch check failed: nothing was started" in check
    assert "provider is not configured on this server" in check and UNSET not in check  # names: administrators only
    assert "chatbot T-BOT" in check and "answered" in check  # the chatbot itself was fine
    assert not SimulationBatch.objects.exists()
    screenshot(page, "batch-launch-refused")

    # The same mistake made without the check (a command run with EVALSITE_PREFLIGHT=0): every
    # conversation fails for real, and the page says so instead of "16 of 16 finished (100%)".
    unset_agent = UserAgent(model="openai/persona-agent", api_base=fake.base_url, api_key_env=UNSET)
    spec = amhart_spec(fake, persona_set, [target], user_agent=unset_agent, exchanges=2)
    batch = simulation_batch_create(spec=spec, dispatch=False)
    SimulationBatch.objects.filter(pk=batch.pk).update(shared=True)  # made by no one: the shared library (issue 30)
    for run_id in batch.runs.values_list("pk", flat=True):
        simulation_run_execute(run_id=run_id)  # what the worker's task does
    batch.refresh_from_db()
    page.goto(f"/corpus/simulations/{batch.code}/")
    n = batch.runs.count()
    assert batch.runs.filter(status="failed").count() == n
    state = page.locator(".job-state")
    assert state.inner_text() == f"Failed: all {n} conversations failed"
    assert "state-failed" in state.get_attribute("class")
    groups = page.locator(".error-groups").inner_text()
    assert f"auth\t{n}" in groups and "set the key variable" in groups
    assert page.locator("td:has-text('see above')").count() == n  # the message once, not on every row
    assert "unknown" not in page.locator(".progress-counts").inner_text() or batch.runs.filter(calls__gt=0).exists()
    screenshot(page, "batch-failed")


def test_a_judge_that_refuses_temperature_is_refused_then_cloned_without_it(page, researcher, fake, settings):
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    conversation = ConversationFactory()

    def refuses_temperature(body):  # type: ignore[no-untyped-def]
        if "temperature" in body:
            return http_400("Unsupported value: 'temperature' does not support 0 with this model.")
        items = body.get("response_format", {}).get("json_schema", {}).get("schema", {}).get("properties", {}).get("items")
        if not items:
            return json.dumps({"reply": "OK"})
        return json.dumps({"items": {k: {"label": "yes", "rationale": "r", "evidence": []} for k in items["properties"]}})

    fake.script("strict-judge", [refuses_temperature])
    judge = judge_create(name="strict-judge", instrument=amhart, model="openai/strict-judge", api_base=fake.base_url,
                         api_key_env=KEY_ENV, temperature=0.0)
    log_in(page, researcher.username, PASSWORD)
    page.goto("/judging/runs/new/")
    page.check(f"input[name=judges][value='{judge.pk}']")
    page.fill("#id_codes", conversation.code)
    page.click("button:has-text('Start run')", timeout=60_000)
    page.wait_for_selector(".preflight")
    check = page.locator(".preflight").inner_text()
    assert "judge strict-judge" in check and "bad_request" in check and "temperature" in check
    assert "Clone a judge into a new version" in check
    assert not JudgeRun.objects.exists()
    screenshot(page, "judge-run-launch-refused")

    page.goto(f"/judging/judges/{judge.pk}/")
    page.click("text=Clone into a new version")
    assert page.locator("#id_name").input_value() == "strict-judge v2"
    assert page.locator("#id_model").input_value() == "openai/strict-judge"
    assert page.locator("#id_temperature").input_value() == "0.0"
    page.fill("#id_temperature", "")
    screenshot(page, "judge-clone-form")
    page.click("button:has-text('Create the new version')")
    page.wait_for_selector("text=created as a new version of strict-judge")
    clone = Judge.objects.get(name="strict-judge v2")
    assert clone.temperature is None and clone.cloned_from == judge and "temperature" not in clone.call_params()
    judge.refresh_from_db()
    assert judge.temperature == 0.0  # the original (and its runs) stay as they were

    page.goto("/judging/runs/new/")
    page.check(f"input[name=judges][value='{clone.pk}']")
    page.fill("#id_codes", conversation.code)
    page.click("button:has-text('Start run')")
    page.wait_for_selector("#run-progress")
    run = JudgeRun.objects.get()
    assert list(run.judges.all()) == [clone]

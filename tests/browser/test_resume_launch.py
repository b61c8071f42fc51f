"""Resuming a batch runs the launch check first: a refusal is shown on the batch page, nothing resumes."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from corpus.personas.services import builtin_personas_load
from simulation.batch_spec import UserAgent
from simulation.batches import simulation_batch_cancel, simulation_batch_create
from simulation.models import SimulationBatch
from tests.browser.conftest import log_in, screenshot
from tests.conftest import PASSWORD
from tests.simulation.sim_setup import KEY_ENV, SECRET, amhart_spec, make_target
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.django_db(transaction=True)
LATER = "TEST_LATER_API_KEY"


@pytest.fixture
def fake(monkeypatch, settings):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv(LATER, raising=False)
    settings.EVALSITE_PREFLIGHT = True
    settings.SIMULATION_RETRY = {"max_attempts": 1, "base_delay": 0.01, "max_delay": 0.02}
    with FakeLLM() as server:
        yield server


def test_a_batch_resumed_with_an_unset_key_is_refused_on_its_page(page, researcher, fake, monkeypatch):
    persona_set = builtin_personas_load()
    personas = tuple(persona_set.personas.order_by("position").values_list("pk", flat=True)[:2])
    agent = UserAgent(model="openai/persona-agent", api_base=fake.base_url, api_key_env=LATER)
    spec = amhart_spec(fake, persona_set, [make_target(fake)], user_agent=agent, persona_ids=personas, exchanges=2)
    batch = simulation_batch_create(spec=spec, dispatch=False, created_by=researcher)  # its creator resumes it
    simulation_batch_cancel(batch_id=batch.pk)

    log_in(page, researcher.username, PASSWORD)
    page.goto(f"/corpus/simulations/{batch.code}/")
    page.click("button:has-text('Resume')", timeout=60_000)  # the first call imports litellm
    page.wait_for_selector(".preflight")
    check = page.locator(".preflight")
    expect(check.locator("h2")).to_have_text("Launch check failed: nothing was resumed")
    expect(check).to_contain_text("provider is not configured on this server")  # the variable's name: administrators only
    expect(check).not_to_contain_text(LATER)
    expect(check).to_contain_text("chatbot T-BOT")  # checked and answered
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.CANCELLED
    screenshot(page, "batch-resume-refused")

    monkeypatch.setenv(LATER, "sk-set-now-0123456789")  # the server's environment is this process's
    page.click("button:has-text('Resume')")
    expect(page.locator(".messages")).to_contain_text("resumed")
    batch.refresh_from_db()
    assert batch.status != SimulationBatch.Status.CANCELLED

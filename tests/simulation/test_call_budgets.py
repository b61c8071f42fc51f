"""Issue 22: timeouts and retry budgets per chatbot and user-agent, validated; the default rides out a minute."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from core import call_budget
from corpus.errors import CorpusError
from corpus.personas.services import builtin_personas_load
from corpus.targets.services import target_create
from simulation.batches import simulation_batch_create
from simulation.llm import DEFAULT_RETRY, ModelSpec, RetryPolicy, achat
from simulation.llm.engine import Engine
from simulation.models import SimulationBatch
from simulation.simulate import simulation_runs_execute_inline
from tests.simulation.sim_setup import (  # noqa: F401
    KEY_ENV,
    amhart_spec,
    make_target,
    simulation_environment,
    user_agent,
)
from tests.support.fake_llm import http_429, http_500, timeout

pytestmark = pytest.mark.django_db
HELLO = [{"role": "user", "content": "Hello"}]


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


# -- the default budget ---------------------------------------------------------------------------


def test_the_default_budget_waits_at_least_a_minute_before_a_call_fails():
    """It used to be 5 attempts with full jitter: 0 to 7.5 s of waiting, a few seconds of outage."""
    assert DEFAULT_RETRY.max_attempts == call_budget.DEFAULT_ATTEMPTS == 8
    ride = DEFAULT_RETRY.rides_out()
    assert (ride.least, ride.most) == (60.0, 120.0)
    for _ in range(200):  # whatever the jitter draws
        waited = sum(DEFAULT_RETRY.delay(n) for n in range(1, DEFAULT_RETRY.max_attempts))
        assert 60.0 <= waited <= 120.0


def _outage(fake, model: str, seconds: float) -> None:  # type: ignore[no-untyped-def]
    """Answer 500 to every request for ``seconds`` from the first one, then normally."""
    began: list[float] = []

    def reply(body):  # type: ignore[no-untyped-def]
        began[:] = began or [time.monotonic()]
        return http_500() if time.monotonic() < began[0] + seconds else "back again"

    fake.script(model, [reply])


def _spec(fake) -> ModelSpec:  # type: ignore[no-untyped-def]
    return ModelSpec(model="openai/outage-bot", api_base=fake.base_url, api_key_env=KEY_ENV, timeout=5)


def test_the_default_budget_shape_rides_out_an_outage_of_its_length(fake_llm):
    """The default budget scaled down 30 times (2 s of outage for 60 s) gets through; the old one did not."""
    scale = 30.0
    scaled = RetryPolicy(DEFAULT_RETRY.max_attempts, DEFAULT_RETRY.base_delay / scale, DEFAULT_RETRY.max_delay / scale)
    assert scaled.rides_out().least == pytest.approx(60.0 / scale)
    _outage(fake_llm, "outage-bot", 1.8)
    result = Engine().run_one(lambda: achat(_spec(fake_llm), HELLO, retry=scaled))
    assert result.content == "back again" and result.attempts > 1
    # The old default (5 attempts, full jitter from 0.5 s), scaled alike, gives up within the same outage.
    old = RetryPolicy(5, 0.5 / scale, 30.0 / scale)
    assert old.rides_out().most < 1.8
    _outage(fake_llm, "outage-bot", 1.8)
    with pytest.raises(Exception, match="server_error after 5 attempt"):
        Engine().run_one(lambda: achat(_spec(fake_llm), HELLO, retry=old))


def test_a_retry_after_longer_than_the_budget_is_honoured(fake_llm):
    fake_llm.script("outage-bot", [http_429(retry_after=1.0), "after the wait"])
    started = time.monotonic()
    result = Engine().run_one(lambda: achat(_spec(fake_llm), HELLO, retry=RetryPolicy(3, 0.01, 1.0)))
    assert result.content == "after the wait" and time.monotonic() - started >= 1.0


# -- chatbots ------------------------------------------------------------------------------------


def test_a_chatbots_timeout_and_retry_budget_are_in_the_targets_api(researcher, fake_llm):
    target = target_create(kind="litellm", model="openai/chatbot", api_base=fake_llm.base_url, api_key_env=KEY_ENV,
                           timeout_seconds=20, retry_attempts=4, retry_base_delay=1.5, retry_max_delay=10, actor=researcher)
    listed = {t["code"]: t for t in _api(researcher).get("/api/v1/targets/").json()["results"]}
    got = listed[target.code]
    assert (got["timeout_seconds"], got["retry_attempts"], got["retry_base_delay"], got["retry_max_delay"]) == (20.0, 4, 1.5, 10.0)
    default = target_create(kind="litellm", model="openai/other", api_base=fake_llm.base_url, actor=researcher)
    assert (default.timeout_seconds, default.retry_attempts, default.retry_base_delay, default.retry_max_delay) == (60.0, 8, 2.0, 30.0)


@pytest.mark.parametrize(("field", "value", "words"), [
    ("timeout_seconds", 0, "timeout must be between"),
    ("retry_attempts", 0, "attempts must be between 1 and 20"),
    ("retry_attempts", 50, "attempts must be between 1 and 20"),
    ("retry_base_delay", -1, "first wait must be between"),
    ("retry_max_delay", 0.5, "may not be shorter than the first"),
])
def test_a_chatbots_budget_is_validated_field_by_field(researcher, fake_llm, field, value, words):
    with pytest.raises(CorpusError) as caught:
        target_create(kind="litellm", model="openai/chatbot", api_base=fake_llm.base_url, actor=researcher, **{field: value})
    assert any(words in problem for problem in caught.value.fields[field])


def test_the_chatbot_form_takes_the_budget_and_refuses_a_bad_one(researcher, fake_llm):
    from django.urls import reverse

    from tests.conftest import client_for

    client = client_for(researcher)
    form = {"kind": "litellm", "model": "openai/chatbot", "api_base": fake_llm.base_url, "params": "{}",
            "max_concurrent": 4, "requests_per_minute": 0, "code": "T-FORM"}
    page = client.get(reverse("corpus:target-create")).content.decode()
    assert 'name="retry_attempts"' in page and 'name="timeout_seconds"' in page
    bad = client.post(reverse("corpus:target-create"), {**form, "retry_base_delay": 5, "retry_max_delay": 1})
    assert bad.status_code == 400 and "may not be shorter than the first" in bad.content.decode()
    client.post(reverse("corpus:target-create"), {**form, "timeout_seconds": 15, "retry_attempts": 3})
    from corpus.models import Target

    saved = Target.objects.get(code="T-FORM")
    assert (saved.timeout_seconds, saved.retry_attempts, saved.retry_base_delay) == (15.0, 3, 2.0)


def test_a_chatbots_own_budget_decides_its_attempts(researcher, fake_llm, settings):
    settings.SIMULATION_RETRY = None  # no override: each side keeps its own budget
    persona_set = builtin_personas_load()
    fake_llm.script("down-bot", [http_500()])
    target = make_target(fake_llm, code="T-DOWN", model="openai/down-bot", retry_attempts=4, retry_base_delay=0.01, retry_max_delay=0.02)
    spec = amhart_spec(fake_llm, persona_set, [target], exchanges=1,
                       persona_ids=tuple(persona_set.personas.values_list("pk", flat=True)[:1]))
    batch = simulation_batch_create(spec=spec, dispatch=False)
    simulation_runs_execute_inline(run_ids=list(batch.runs.values_list("pk", flat=True)))
    run = batch.runs.get()
    assert run.status == "failed" and "after 4 attempt(s)" in run.error
    assert fake_llm.calls("down-bot") == 4


# -- the user-agent ------------------------------------------------------------------------------


def test_the_user_agents_timeout_and_budget_are_set_through_the_api_and_used(researcher, fake_llm, settings):
    settings.SIMULATION_RETRY = None
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    fake_llm.script("slow-agent", [timeout(3.0)])  # answers after 3 s: past a 1 s timeout
    payload = {
        "protocol": "amhart", "persona_set": persona_set.pk, "personas": [persona_set.personas.first().pk],
        "targets": [target.code], "repetitions": 1, "exchanges": 2,
        "user_agent": {"model": "openai/slow-agent", "api_base": fake_llm.base_url, "api_key_env": KEY_ENV,
                       "timeout_seconds": 1, "retry_attempts": 2, "retry_base_delay": 0.01, "retry_max_delay": 0.02},
    }
    client = _api(researcher)
    response = client.post("/api/v1/simulation-batches/", payload, format="json")
    assert response.status_code == 201, response.json()
    detail = response.json()
    assert (detail["user_timeout_seconds"], detail["user_retry_attempts"], detail["user_retry_max_delay"]) == (1.0, 2, 0.02)
    batch = SimulationBatch.objects.get(code=detail["code"])
    assert batch.config["user_agent"]["timeout_seconds"] == 1.0
    started = time.monotonic()
    simulation_runs_execute_inline(run_ids=list(batch.runs.values_list("pk", flat=True)))
    run = batch.runs.get()
    assert run.status == "failed" and run.error_kind == "timeout" and "after 2 attempt(s)" in run.error
    assert time.monotonic() - started < 6  # two attempts of 1 s, not the default 60 s each
    for change, words in (({"retry_attempts": 0}, "greater than or equal to 1"),
                          ({"retry_base_delay": 3, "retry_max_delay": 1}, "may not be shorter than the first")):
        refused = client.post("/api/v1/simulation-batches/", dict(payload, user_agent={**payload["user_agent"], **change}), format="json")
        assert refused.status_code == 400 and words in str(refused.json()["user_agent"])


def test_the_batch_service_refuses_a_bad_user_agent_budget(fake_llm):
    from simulation.errors import SimulationError

    persona_set = builtin_personas_load()
    spec = amhart_spec(fake_llm, persona_set, [make_target(fake_llm)], user_agent=user_agent(fake_llm, timeout_seconds=0))
    with pytest.raises(SimulationError, match="user-agent: the timeout must be between"):
        simulation_batch_create(spec=spec, dispatch=False)

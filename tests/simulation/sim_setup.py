"""Shared set-up for the simulation batch tests: targets on the fake server, batch specs."""

from __future__ import annotations

from typing import Any

import pytest

from corpus.models import Conversation, Message, PersonaSet, Target
from simulation.batch_spec import BatchSpec, UserAgent
from simulation.models import SimulationBatch
from tests.support.fake_llm import FakeLLM

KEY_ENV = "TEST_SIM_API_KEY"
SECRET = "sk-sim-0123456789-never-stored"
USER_MODEL = "openai/persona-agent"
FAST_RETRY = {"max_attempts": 3, "base_delay": 0.01, "max_delay": 0.02}


@pytest.fixture(autouse=True)
def simulation_environment(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """Put the fake key in the environment and make retries fast."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    settings.SIMULATION_RETRY = FAST_RETRY


def make_target(fake: FakeLLM, code: str = "T-BOT", model: str = "openai/chatbot", **extra: Any) -> Target:
    fields: dict[str, Any] = {
        "kind": Target.Kind.LITELLM,
        "model": model,
        "api_base": fake.base_url,
        "api_key_env": KEY_ENV,
        "params": {"temperature": 1.0},
        "system_prompt": "You are a supportive assistant.",
        "timeout_seconds": 5,
        "shared": True,  # the test library: every researcher may simulate with it (issue 30)
    }
    fields.update(extra)
    return Target.objects.create(code=code, **fields)


def user_agent(fake: FakeLLM, model: str = USER_MODEL, **extra: Any) -> UserAgent:
    return UserAgent(
        model=model, api_base=fake.base_url, api_key_env=KEY_ENV, params={"temperature": 1.0}, **extra
    )


def amhart_spec(fake: FakeLLM, persona_set: PersonaSet, targets: list[Target], **extra: Any) -> BatchSpec:
    fields: dict[str, Any] = {
        "protocol": SimulationBatch.Protocol.AMHART,
        "persona_set_id": persona_set.pk,
        "target_ids": tuple(t.pk for t in targets),
        "user_agent": user_agent(fake),
        "exchanges": 3,
    }
    fields.update(extra)
    return BatchSpec(**fields)


def transcript(conversation: Conversation) -> list[tuple[int, str, str]]:
    return list(
        Message.objects.filter(conversation=conversation)
        .order_by("turn_index")
        .values_list("turn_index", "role", "content")
    )


def shared(obj: Any) -> Any:
    """Mark a batch (or run, chatbot, ...) shared: the tests whose other users read it (issue 30)."""
    type(obj).objects.filter(pk=obj.pk).update(shared=True)
    obj.shared = True
    return obj

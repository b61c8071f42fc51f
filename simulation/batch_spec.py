"""What a researcher asks of a simulation batch, checked and planned before anything is stored.

``batch_plan`` validates a ``BatchSpec`` (every problem at once) and returns the unsaved batch
with its personas and chatbots; ``simulation.batches`` stores it and queues its runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from core import call_budget
from core.call_budget import budget_problems
from core.secrets_policy import destination_problems, header_env_names
from corpus.models import Persona, PersonaSet, Target
from corpus.targets.http_config import header_problems, template_problems
from simulation.errors import SimulationError
from simulation.llm import ModelSpec
from simulation.models import PromptTemplate, SimulationBatch
from simulation.prompts import (
    DEFAULTS,
    TemplateError,
    prompt_template_create,
    prompt_template_latest,
    prompt_templates_ensure_builtin,
)
from simulation.run_state import template_values

MAX_RUNS = 20_000
Protocol = SimulationBatch.Protocol
Kind = PromptTemplate.Kind


@dataclass(frozen=True)
class UserAgent:
    """The model that plays the persona: litellm string, endpoint, key variable, parameters."""

    model: str
    api_base: str = ""
    api_key_env: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    max_concurrent: int = 8
    requests_per_minute: int = 0
    # Per call: one attempt's timeout and the retry budget (core.call_budget).
    timeout_seconds: float = 60.0
    retry_attempts: int = call_budget.DEFAULT_ATTEMPTS
    retry_base_delay: float = call_budget.DEFAULT_BASE_DELAY
    retry_max_delay: float = call_budget.DEFAULT_MAX_DELAY


@dataclass(frozen=True)
class BatchSpec:
    """What a researcher asks for; the form, the API and the command all build one."""

    protocol: str
    persona_set_id: int
    target_ids: tuple[int, ...]
    user_agent: UserAgent
    persona_ids: tuple[int, ...] = ()  # empty: every persona of the set
    repetitions: int = 1
    exchanges: int | None = None  # AMHART: user/chatbot pairs (default 10)
    turns: int | None = None  # VERA-MH: messages, the chatbot speaking last (default 20)
    first_speaker: str = SimulationBatch.Speaker.USER
    word_cap: int | None = None
    end_marker: str = ""
    role_slide_check: bool = True
    persona_template_id: int | None = None
    reminder_template_id: int | None = None
    kickoff_template_id: int | None = None
    name: str = ""


class _Problems(list[str]):
    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.append(message)


def _turns(spec: BatchSpec, problems: _Problems) -> tuple[int, int | None]:
    """Return (messages per conversation, exchange pairs or None)."""
    chatbot_first = spec.first_speaker == SimulationBatch.Speaker.CHATBOT
    if spec.protocol == Protocol.AMHART:
        problems.check(not chatbot_first, "AMHART conversations open with the persona's card: the persona speaks first")
        exchanges = spec.exchanges or (spec.turns // 2 if spec.turns else 10)
        problems.check(1 <= exchanges <= 200, "exchanges must be between 1 and 200")
        return 2 * exchanges, exchanges
    turns = spec.turns or (2 * spec.exchanges if spec.exchanges else 20)
    problems.check(1 <= turns <= 400, "turns must be between 1 and 400")
    # Turns count messages and the chatbot speaks last: the parity follows who opens.
    problems.check(
        turns % 2 == (1 if chatbot_first else 0),
        f"with the {'chatbot' if chatbot_first else 'persona'} speaking first and the chatbot last, "
        f"turns must be {'odd' if chatbot_first else 'even'} (got {turns})",
    )
    return turns, None


def _template(template_id: int | None, kind: str, protocol: str, problems: _Problems) -> PromptTemplate | None:
    if template_id is not None:
        template = PromptTemplate.objects.filter(pk=template_id).first()
        if template is None:
            problems.append(f"no prompt template {template_id}")
        elif template.kind != kind:
            problems.append(f"template {template} is a {template.kind} template, not {kind}")
        return template
    key = DEFAULTS.get((protocol, kind))
    return prompt_template_latest(key) if key else None


def _persona_template(spec: BatchSpec, persona_set: PersonaSet, problems: _Problems) -> PromptTemplate | None:
    if spec.persona_template_id is None and spec.protocol == Protocol.AMHART and persona_set.system_prompt:
        # The AMHART persona set carries its own agent prompt: store it as a template so every
        # conversation references the exact text, like any other template.
        template, _ = prompt_template_create(
            kind=Kind.PERSONA_SYSTEM,
            key=f"personaset-{persona_set.key}-v{persona_set.version}"[:80],
            text=persona_set.system_prompt,
            name=f"System prompt of {persona_set}",
            description="Copied from the persona set when a batch first used it.",
        )
        return template
    return _template(spec.persona_template_id, Kind.PERSONA_SYSTEM, spec.protocol, problems)


def _check_targets(targets: list[Target], spec: BatchSpec, problems: _Problems) -> None:
    for target in targets:
        if target.kind == Target.Kind.DEMO:
            problems.append(f"chatbot {target.code} is a demo target with no live model")
        problems.extend(destination_problems(
            api_base=target.api_base, key_env=target.api_key_env, params=target.params, label=f"chatbot {target.code}",
            header_envs=header_env_names(target.http_headers) if target.kind == Target.Kind.HTTP else (),
        ))
        if target.kind == Target.Kind.HTTP:
            problems.check(bool(target.api_base), f"chatbot {target.code}: an HTTP target needs its URL in api_base")
            problems.extend(f"chatbot {target.code}: {p}" for p in header_problems(target.http_headers or {}))
            problems.extend(f"chatbot {target.code}: {p}" for p in template_problems(target.request_template or {}))
        if spec.first_speaker == SimulationBatch.Speaker.CHATBOT and target.kind != Target.Kind.HTTP:
            problems.check(
                bool(target.system_prompt),
                f"chatbot {target.code} has no system prompt, so it cannot open the conversation",
            )


def _check_templates(batch: SimulationBatch, personas: Iterable[Persona], problems: _Problems) -> None:
    for persona in personas:
        values = template_values(batch, persona)
        for template in (batch.persona_template, batch.reminder_template, batch.kickoff_template):
            if template is None:
                continue
            from simulation.prompts import render

            try:
                render(template.text, values)
            except TemplateError as exc:
                problems.append(f"template {template} for persona {persona.key}: {exc}")


def _config(batch: SimulationBatch, targets: list[Target], personas: list[Persona]) -> dict[str, Any]:
    """Return the snapshot of everything the batch runs with (never a key, only its variable)."""
    return {
        "protocol": batch.protocol,
        "persona_set": {"id": batch.persona_set_id, "key": batch.persona_set.key, "version": batch.persona_set.version},
        "personas": [p.key for p in personas],
        "targets": [
            {
                "code": t.code, "kind": t.kind, "model": t.model, "api_base": t.api_base, "params": t.params,
                "system_prompt_sha256": hashlib.sha256(t.system_prompt.encode()).hexdigest(),
                "max_concurrent": t.max_concurrent, "requests_per_minute": t.requests_per_minute,
                "timeout_seconds": t.timeout_seconds, "retry_attempts": t.retry_attempts,
                "retry_base_delay": t.retry_base_delay, "retry_max_delay": t.retry_max_delay,
            }
            for t in targets
        ],
        "repetitions": batch.repetitions,
        "user_agent": {
            "model": batch.user_model, "api_base": batch.user_api_base, "api_key_env": batch.user_api_key_env,
            "params": batch.user_params, "max_concurrent": batch.user_max_concurrent,
            "requests_per_minute": batch.user_requests_per_minute,
            "timeout_seconds": batch.user_timeout_seconds, "retry_attempts": batch.user_retry_attempts,
            "retry_base_delay": batch.user_retry_base_delay, "retry_max_delay": batch.user_retry_max_delay,
        },
        "turns": batch.turns, "exchanges": batch.exchanges, "first_speaker": batch.first_speaker,
        "word_cap": batch.word_cap, "end_marker": batch.end_marker, "role_slide_check": batch.role_slide_check,
        "prompts": {
            kind: (t.reference() if t is not None else None)
            for kind, t in (
                ("persona_system", batch.persona_template),
                ("reminder", batch.reminder_template),
                ("kickoff", batch.kickoff_template),
            )
        },
    }


def batch_plan(
    spec: BatchSpec, created_by: AbstractBaseUser | None = None
) -> tuple[SimulationBatch, list[Persona], list[Target]]:
    """Validate ``spec`` and return the unsaved batch, its personas and its chatbots.

    Raises ``SimulationError`` listing every problem.
    """
    prompt_templates_ensure_builtin()
    problems = _Problems()
    problems.check(spec.protocol in Protocol.values, f"unknown protocol '{spec.protocol}'")
    problems.check(spec.first_speaker in SimulationBatch.Speaker.values, f"unknown first speaker '{spec.first_speaker}'")
    persona_set = PersonaSet.objects.filter(pk=spec.persona_set_id).first()
    if persona_set is None:
        raise SimulationError(f"no persona set {spec.persona_set_id}")
    personas = list(persona_set.personas.order_by("position", "key"))
    if spec.persona_ids:
        chosen = set(spec.persona_ids)
        problems.check(chosen <= {p.pk for p in personas}, "some chosen personas are not in the persona set")
        personas = [p for p in personas if p.pk in chosen]
    problems.check(bool(personas), "choose at least one persona")
    targets = list(Target.objects.filter(pk__in=spec.target_ids).order_by("code"))
    problems.check(bool(targets) and len(targets) == len(set(spec.target_ids)), "choose one or more existing chatbots")
    _check_targets(targets, spec, problems)
    problems.check(1 <= spec.repetitions <= 1000, "repetitions must be between 1 and 1000")
    runs = len(personas) * len(targets) * spec.repetitions
    problems.check(runs <= MAX_RUNS, f"{runs} conversations is more than one batch may hold ({MAX_RUNS})")
    problems.check(bool(spec.user_agent.model.strip()), "the user-agent model is required")
    # The secrets policy, for the user-agent as asked and for each chatbot as stored.
    problems.extend(destination_problems(
        api_base=spec.user_agent.api_base, key_env=spec.user_agent.api_key_env, params=dict(spec.user_agent.params),
        actor=created_by, label="user-agent",
    ))
    try:
        ModelSpec(model=spec.user_agent.model, params=spec.user_agent.params)
    except ValueError as exc:
        problems.append(f"user-agent parameters: {exc}")
    ua = spec.user_agent
    for found in budget_problems(
        timeout_seconds=ua.timeout_seconds, retry_attempts=ua.retry_attempts,
        retry_base_delay=ua.retry_base_delay, retry_max_delay=ua.retry_max_delay,
    ).values():
        problems.extend(f"user-agent: {problem}" for problem in found)
    problems.check(spec.word_cap is None or spec.word_cap >= 1, "the word cap must be at least 1")
    if spec.protocol == Protocol.AMHART:
        missing = [p.key for p in personas if not p.opening_message.strip()]
        problems.check(not missing, f"AMHART personas need an opening message: {', '.join(missing)}")
    turns, exchanges = _turns(spec, problems) if spec.protocol in Protocol.values else (0, None)
    persona_template = _persona_template(spec, persona_set, problems)
    problems.check(persona_template is not None, "choose a persona (user-agent) prompt template")
    reminder = _template(spec.reminder_template_id, Kind.REMINDER, spec.protocol, problems)
    if spec.protocol == Protocol.VERA_MH:
        problems.check(reminder is not None, "VERA-MH batches need a reminder template")
    kickoff = _template(spec.kickoff_template_id, Kind.KICKOFF, spec.protocol, problems)
    problems.check(kickoff is not None, "choose a kickoff template")
    if problems:
        raise SimulationError("; ".join(problems))
    user = created_by if getattr(created_by, "pk", None) else None
    now = timezone.now()
    ua = spec.user_agent
    batch = SimulationBatch(
        name=spec.name.strip(), protocol=spec.protocol, persona_set=persona_set,
        repetitions=spec.repetitions, user_model=ua.model.strip(), user_api_base=ua.api_base,
        user_api_key_env=ua.api_key_env, user_params=dict(ua.params), user_max_concurrent=ua.max_concurrent,
        user_requests_per_minute=ua.requests_per_minute, user_timeout_seconds=ua.timeout_seconds,
        user_retry_attempts=ua.retry_attempts, user_retry_base_delay=ua.retry_base_delay,
        user_retry_max_delay=ua.retry_max_delay, exchanges=exchanges, turns=turns,
        first_speaker=spec.first_speaker, word_cap=spec.word_cap, end_marker=spec.end_marker.strip(),
        role_slide_check=spec.role_slide_check, persona_template=persona_template,
        reminder_template=reminder, kickoff_template=kickoff, created_by=user, started_at=now,
    )
    _check_templates(batch, personas, problems)
    if problems:
        raise SimulationError("; ".join(problems))
    batch.config = _config(batch, targets, personas)
    return batch, personas, targets

"""Simulation batches: create (plan every run and queue them, a group per task), cancel, resume, recover.

Every planned conversation is a ``SimulationRun`` row created with the batch; the Celery task
``simulation_runs_task`` executes a group of runs together (``simulate.simulation_run_job``
each). Queueing the same run twice is harmless: the claim lets one executor write at a time.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core import call_budget
from core.call_budget import budget_problems
from core.codes import new_code
from core.enqueue import enqueue_groups_on_commit
from core.recovery import recovery_seconds
from core.secrets_policy import api_host_approve, destination_problems, header_env_names
from corpus.models import Persona, PersonaSet, Target
from corpus.targets.http_config import header_problems, template_problems
from simulation.errors import SimulationError
from simulation.llm import ModelSpec
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.prompts import (
    DEFAULTS,
    TemplateError,
    prompt_template_create,
    prompt_template_latest,
    prompt_templates_ensure_builtin,
)
from simulation.run_state import batch_maybe_finish, holder_gone, template_values

logger = logging.getLogger("simulation.batches")
MAX_RUNS = 20_000
# The Celery task that executes one run (simulation.tasks); queued by name, see core.enqueue.
SIMULATION_RUNS_TASK = "simulation.tasks.simulation_runs_task"
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


@transaction.atomic
def simulation_batch_create(
    *, spec: BatchSpec, created_by: AbstractBaseUser | None = None, dispatch: bool = True
) -> SimulationBatch:
    """Validate ``spec``, store the batch and one run per cell x repetition, queue the runs.

    Raises ``SimulationError`` listing every problem; nothing is stored then.
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
        code=_batch_code(), name=spec.name.strip(), protocol=spec.protocol, persona_set=persona_set,
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
    api_host_approve(url=ua.api_base, actor=created_by, note="set on a simulation batch's user-agent")
    batch.config = _config(batch, targets, personas)
    batch.save()
    batch.personas.set(personas)
    batch.targets.set(targets)
    SimulationRun.objects.bulk_create(
        SimulationRun(batch=batch, persona=p, target=t, repetition=r, queued_at=now)
        for p in personas
        for t in targets
        for r in range(1, spec.repetitions + 1)
    )
    if dispatch:
        _enqueue(list(batch.runs.values_list("pk", flat=True)))
    return batch


def _batch_code() -> str:
    while True:
        code = new_code("B-", 5)
        if not SimulationBatch.objects.filter(code=code).exists():
            return code


def _enqueue(run_ids: list[int], *, again: bool = False) -> None:
    """Queue the runs, a group per message, after the surrounding transaction commits."""
    on_failure = _not_queued_again if again else _not_queued
    enqueue_groups_on_commit(SIMULATION_RUNS_TASK, run_ids, on_failure=on_failure)


def _not_queued_again(run_ids: list[int], cause: str) -> None:
    """A sweep could not send runs again (the broker is away): they keep their state for the next sweep."""
    logger.warning("could not queue %d simulation run(s) again (%s); the next sweep will", len(run_ids), cause)
    SimulationRun.objects.filter(pk__in=run_ids).update(queued_at=None)


def _not_queued(run_ids: list[int], cause: str) -> None:
    """Fail the runs whose task the broker refused (resuming with the failed ones queues them again)."""
    error = f"not queued: the task queue did not answer ({cause})"
    with transaction.atomic():
        SimulationRun.objects.filter(pk__in=run_ids, status=SimulationRun.Status.QUEUED).update(
            status=SimulationRun.Status.FAILED, error=error[:2000], error_kind="queue",
            finished_at=timezone.now(), lease_owner="", lease_expires_at=None,
        )
    for batch_id in set(SimulationRun.objects.filter(pk__in=run_ids).values_list("batch_id", flat=True)):
        batch_maybe_finish(batch_id=batch_id)


def _locked_batch(batch_id: int) -> SimulationBatch:
    try:
        return SimulationBatch.objects.select_for_update().get(pk=batch_id)
    except SimulationBatch.DoesNotExist as exc:
        raise SimulationError(f"no simulation batch {batch_id}") from exc


@transaction.atomic
def simulation_batch_cancel(*, batch_id: int) -> SimulationBatch:
    """Stop a batch: queued runs will not start, running ones stop before their next call."""
    batch = _locked_batch(batch_id)
    if batch.status == SimulationBatch.Status.FINISHED:
        raise SimulationError("the batch has already finished", ) from None
    now = timezone.now()
    batch.status = SimulationBatch.Status.CANCELLED
    batch.cancelled_at = now
    batch.save(update_fields=["status", "cancelled_at"])
    batch.runs.filter(status__in=SimulationRun.ACTIVE).update(
        status=SimulationRun.Status.CANCELLED, lease_owner="", lease_expires_at=None, finished_at=now
    )
    return batch


@transaction.atomic
def simulation_batch_resume(
    *, batch_id: int, include_failed: bool = False, dispatch: bool = True
) -> SimulationBatch:
    """Restart a batch: cancelled (and optionally failed) runs continue after their last message.

    Stalled runs (running, but their executor's lease has expired) are queued again too.
    ``dispatch=False`` leaves the queueing to the caller (``simulate --inline``).
    """
    batch = _locked_batch(batch_id)
    now = timezone.now()
    statuses = [SimulationRun.Status.CANCELLED] + ([SimulationRun.Status.FAILED] if include_failed else [])
    batch.runs.filter(status__in=statuses).update(
        status=SimulationRun.Status.QUEUED, lease_owner="", lease_expires_at=None,
        error="", error_kind="", finished_at=None, queued_at=now,
    )
    batch.status = SimulationBatch.Status.RUNNING
    batch.cancelled_at = None
    batch.finished_at = None
    batch.save(update_fields=["status", "cancelled_at", "finished_at"])
    queued = list(batch.runs.filter(status=SimulationRun.Status.QUEUED).values_list("pk", flat=True))
    stalled = _stalled(batch.runs.filter(status=SimulationRun.Status.RUNNING))
    if dispatch:
        batch.runs.filter(pk__in=queued + stalled).update(queued_at=now)
        _enqueue(queued + stalled)
    if not queued and not batch.runs.filter(status=SimulationRun.Status.RUNNING).exists():
        transaction.on_commit(lambda: _finish_if_idle(batch.pk))
    return batch


def _finish_if_idle(batch_id: int) -> None:
    from simulation.run_state import batch_maybe_finish

    batch_maybe_finish(batch_id=batch_id)


def _stalled(runs: Any) -> list[int]:
    """Return the ids of running runs whose executor is gone (``holder_gone``)."""
    now = timezone.now()
    return [
        pk
        for pk, owner, expires in runs.values_list("pk", "lease_owner", "lease_expires_at")
        if holder_gone(owner or "", expires, now)
    ]


def simulation_runs_recover_lost(now: Any = None) -> int:
    """Queue again the running runs of running batches whose executor is gone (once per threshold).

    The new executor resumes after the last saved message (the claim takes the run over).
    """
    runs = SimulationRun.objects.filter(status=SimulationRun.Status.RUNNING, batch__status=SimulationBatch.Status.RUNNING)
    again = timezone.now() - timedelta(seconds=recovery_seconds())
    ids = []
    with transaction.atomic():
        for pk in _stalled(runs):
            # Fenced: a run queued again since it was claimed waits a threshold before the next
            # time, and of two workers sweeping at once only one queues it.
            fresh = Q(queued_at__isnull=True) | Q(queued_at__lt=F("started_at")) | Q(queued_at__lt=again)
            if SimulationRun.objects.filter(fresh, pk=pk, status=SimulationRun.Status.RUNNING).update(queued_at=timezone.now()):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def _unclaimed() -> Any:
    return SimulationRun.objects.filter(status=SimulationRun.Status.QUEUED, batch__status=SimulationBatch.Status.RUNNING)


def simulation_runs_unclaimed() -> int:
    """Count the queued runs of running batches (each should have a message queued)."""
    return _unclaimed().count()


def simulation_runs_redispatch(cutoff: Any, limit: int | None) -> int:
    """Queue again up to ``limit`` queued runs last queued before ``cutoff``, oldest first."""
    candidates = _unclaimed().filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True)).order_by("queued_at", "pk")
    pairs = list(candidates.values_list("pk", "queued_at")[: limit if limit is not None else None])
    now = timezone.now()
    ids = []
    with transaction.atomic():
        for pk, queued in pairs:
            if SimulationRun.objects.filter(pk=pk, status=SimulationRun.Status.QUEUED, queued_at=queued).update(queued_at=now):
                ids.append(pk)
        _enqueue(ids, again=True)
    return len(ids)


def simulation_runs_recover(*, batch_id: int | None = None) -> int:
    """Queue again at once every lost run: executor gone, or queued past the threshold unclaimed."""
    now = timezone.now()
    if batch_id is None:
        return simulation_runs_recover_lost(now) + simulation_runs_redispatch(
            now - timedelta(seconds=recovery_seconds()), None
        )
    with transaction.atomic():
        ids = _stalled(SimulationRun.objects.filter(batch_id=batch_id, status=SimulationRun.Status.RUNNING))
        _enqueue(ids)
    return len(ids)

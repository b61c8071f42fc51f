"""Writes for prompt templates and judges."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from core import call_budget
from core.call_budget import budget_problems
from core.secrets_policy import api_host_approve, destination_problems
from corpus.models import Instrument, InstrumentKind
from judging import prompts
from judging.errors import JudgingError
from judging.guidance import guidance_clean
from judging.models import Judge, JudgeMode, PromptTemplate, ReasoningEffort
from simulation.llm.client import RESERVED_PARAMS

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# Parameters with their own judge field (so the value is checked and shown once).
OWN_FIELDS = frozenset({"temperature", "reasoning_effort"})
# litellm provider prefixes that name the same company's API.
PROVIDER_ALIASES = {"azure": "openai", "azure_ai": "openai", "vertex_ai": "google", "gemini": "google"}


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if getattr(user, "pk", None) else None


def provider_from_model(model: str) -> str:
    """Return the provider label of a litellm model string: its prefix, or a guess by name."""
    model = model.strip()
    if "/" in model:
        prefix = model.split("/", 1)[0].lower()
        return PROVIDER_ALIASES.get(prefix, prefix)
    name = model.lower()
    for needle, provider in (
        ("gpt", "openai"),
        ("o1", "openai"),
        ("o3", "openai"),
        ("o4", "openai"),
        ("claude", "anthropic"),
        ("gemini", "google"),
        ("mistral", "mistral"),
        ("llama", "meta"),
    ):
        if name.startswith(needle):
            return provider
    return "unknown"


@transaction.atomic
def prompt_create(
    *,
    key: str,
    name: str,
    mode: str,
    system_template: str,
    user_template: str,
    retry_template: str,
    description: str = "",
    created_by: AbstractBaseUser | None = None,
    is_builtin: bool = False,
) -> tuple[PromptTemplate, bool]:
    """Store a template set as the next version of ``key``; return an identical one if stored."""
    problems = prompts.template_problems(
        mode=mode, system=system_template, user=user_template, retry=retry_template
    )
    if problems:
        raise JudgingError("; ".join(problems))
    digest = prompts.content_hash(
        mode=mode, system=system_template, user=user_template, retry=retry_template
    )
    existing = PromptTemplate.objects.filter(key=key, content_hash=digest).first()
    if existing is not None:
        return existing, False
    if PromptTemplate.objects.filter(key=key).exclude(mode=mode).exists():
        raise JudgingError(f"prompt '{key}' is a template for another mode; choose another key")
    version = (PromptTemplate.objects.filter(key=key).aggregate(v=Max("version"))["v"] or 0) + 1
    prompt = PromptTemplate.objects.create(
        key=key,
        version=version,
        name=name,
        mode=mode,
        description=description,
        system_template=system_template,
        user_template=user_template,
        retry_template=retry_template,
        content_hash=digest,
        is_builtin=is_builtin,
        created_by=_user(created_by),
    )
    return prompt, True


def prompt_default(*, mode: str) -> PromptTemplate:
    """Return the team-written default prompt of a mode, storing it on first use."""
    if mode not in prompts.DEFAULTS:
        raise JudgingError(f"unknown judge mode '{mode}'")
    spec = prompts.DEFAULTS[mode]
    prompt, _ = prompt_create(
        key=spec["key"],
        name=spec["name"],
        mode=mode,
        description=spec["description"],
        system_template=spec["system_template"],
        user_template=spec["user_template"],
        retry_template=spec["retry_template"],
        is_builtin=True,
    )
    return prompt


def mode_for_instrument(instrument: Instrument) -> str:
    """Return the judge mode an instrument needs; refuse rating sections."""
    if instrument.kind == InstrumentKind.CHECKLIST:
        return JudgeMode.CHECKLIST
    if instrument.kind == InstrumentKind.FLOW:
        return JudgeMode.FLOW
    raise JudgingError(f"'{instrument}' is a rating section: judges answer checklists and question flows")


def _check_params(params: dict[str, Any]) -> None:
    if not isinstance(params, dict):
        raise JudgingError("parameters must be a JSON object")
    clashing = sorted((RESERVED_PARAMS | {"api_key"}) & set(params))
    if clashing:
        raise JudgingError(f"parameters may not set {', '.join(clashing)} (the key stays in the environment)")
    own = sorted(OWN_FIELDS & set(params))
    if own:
        raise JudgingError(f"set {', '.join(own)} with its own field, not in the parameters")


@transaction.atomic
def judge_create(
    *,
    name: str,
    instrument: Instrument,
    model: str,
    provider: str = "",
    api_base: str = "",
    api_key_env: str = "",
    temperature: float | None = None,
    reasoning_effort: str = "",
    params: dict[str, Any] | None = None,
    prompt: PromptTemplate | None = None,
    structured_output: bool = True,
    format_retries: int = 2,
    timeout_seconds: int = 120,
    retry_attempts: int = call_budget.DEFAULT_ATTEMPTS,
    retry_base_delay: float = call_budget.DEFAULT_BASE_DELAY,
    retry_max_delay: float = call_budget.DEFAULT_MAX_DELAY,
    max_concurrent: int = 8,
    requests_per_minute: int = 0,
    notes: str = "",
    item_guidance: dict[str, str] | None = None,
    created_by: AbstractBaseUser | None = None,
    cloned_from: Judge | None = None,
) -> Judge:
    """Create a judge for an instrument; the mode follows the instrument's kind.

    ``cloned_from``: the judge this one is a new version of (its runs keep the old one).
    ``item_guidance``: edited item instructions {item key: text} (``judging.guidance``); every
    key must name an item (a question or dimension of a flow) of the instrument.
    """
    name, model = name.strip(), model.strip()
    if not name or not model:
        raise JudgingError("a judge needs a name and a litellm model string")
    if Judge.objects.filter(name=name).exists():
        raise JudgingError(f"a judge named '{name}' exists already", status=409)
    mode = mode_for_instrument(instrument)
    if api_key_env and not ENV_NAME.match(api_key_env):
        # Refuses pasted keys ("sk-...") too: only a variable's name is ever stored.
        raise JudgingError("api_key_env must be the NAME of an environment variable, e.g. OPENAI_API_KEY")
    # The secrets policy: an allowed key variable, a host on the list (or an administrator's).
    refused = destination_problems(api_base=api_base, key_env=api_key_env, params=params, actor=created_by)
    if refused:
        raise JudgingError("; ".join(refused))
    if reasoning_effort not in ReasoningEffort.values:
        raise JudgingError(f"reasoning effort must be one of {', '.join(v for v in ReasoningEffort.values if v)}")
    params = dict(params or {})
    _check_params(params)
    if prompt is None:
        prompt = prompt_default(mode=mode)
    elif prompt.mode != mode:
        raise JudgingError(f"prompt {prompt} is for {prompt.mode} judges, this judge is a {mode} judge")
    if format_retries > 5:
        raise JudgingError("at most 5 format retries")
    budget = {
        "timeout_seconds": timeout_seconds, "retry_attempts": retry_attempts,
        "retry_base_delay": retry_base_delay, "retry_max_delay": retry_max_delay,
    }
    refused_budget = [problem for found in budget_problems(**budget).values() for problem in found]
    if refused_budget:
        raise JudgingError("; ".join(refused_budget))
    guidance = guidance_clean(instrument, item_guidance)
    api_host_approve(url=api_base, actor=created_by, note=f"set on judge {name}")
    return Judge.objects.create(
        name=name,
        mode=mode,
        instrument=instrument,
        model=model,
        provider=(provider.strip().lower() or provider_from_model(model))[:60],
        api_base=api_base.strip(),
        api_key_env=api_key_env.strip(),
        temperature=temperature,
        reasoning_effort=reasoning_effort,
        params=params,
        prompt=prompt,
        structured_output=True if mode == JudgeMode.CHECKLIST else structured_output,
        format_retries=format_retries,
        **budget,
        max_concurrent=max_concurrent,
        requests_per_minute=requests_per_minute,
        notes=notes,
        item_guidance=guidance,
        cloned_from=cloned_from,
        created_by=_user(created_by),
    )


def judge_clone_initial(judge: Judge) -> dict[str, Any]:
    """Return a judge's settings as the starting point of its next version (a free name)."""
    base = re.sub(r"\s+v\d+$", "", judge.name)
    n = 2
    while Judge.objects.filter(name=f"{base} v{n}").exists():
        n += 1
    return {
        "name": f"{base} v{n}", "instrument": judge.instrument, "model": judge.model, "provider": judge.provider,
        "api_base": judge.api_base, "api_key_env": judge.api_key_env, "temperature": judge.temperature,
        "reasoning_effort": judge.reasoning_effort, "params": judge.params, "prompt": judge.prompt,
        "structured_output": judge.structured_output, "format_retries": judge.format_retries,
        "timeout_seconds": judge.timeout_seconds, "retry_attempts": judge.retry_attempts,
        "retry_base_delay": judge.retry_base_delay, "retry_max_delay": judge.retry_max_delay,
        "max_concurrent": judge.max_concurrent,
        "requests_per_minute": judge.requests_per_minute, "notes": judge.notes,
        "item_guidance": dict(judge.item_guidance or {}),
    }


def judge_snapshot(judge: Judge, *, position: int) -> dict[str, Any]:
    """Return what a run keeps of a judge: everything that decides its calls, never a key."""
    return {
        "name": judge.name,
        "position": position,
        "mode": judge.mode,
        "provider": judge.provider,
        "model": judge.model,
        "api_base": judge.api_base,
        "api_key_env": judge.api_key_env,
        "params": judge.call_params(),
        "prompt_id": judge.prompt_id,
        "prompt": str(judge.prompt),
        "prompt_hash": judge.prompt.content_hash,
        "structured_output": judge.structured_output,
        "format_retries": judge.format_retries,
        "timeout_seconds": judge.timeout_seconds,
        "retry_attempts": judge.retry_attempts,
        "retry_base_delay": judge.retry_base_delay,
        "retry_max_delay": judge.retry_max_delay,
        "max_concurrent": judge.max_concurrent,
        "requests_per_minute": judge.requests_per_minute,
        "item_guidance": dict(judge.item_guidance or {}),
    }

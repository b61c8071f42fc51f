"""Launch checks: before a simulation batch or a judge run starts, every model must answer.

For each distinct model the check (1) looks for its key variable in this process's environment
(the named variable, or the provider's usual one that litellm would read), then (2) makes one
small call through the same ``simulation.llm.chat`` path and parameters the run will use. A
model that fails either is reported with the reason and a fix hint, and the run is not started:
sixteen conversations failing on an unset variable become one clear refusal instead.

The fix hints (``FIX_HINTS``) are also what the pages show next to failed runs, per error kind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings

from simulation.llm import LLMError, ModelSpec, RetryPolicy, chat

PROMPT = [{"role": "user", "content": "This is a connection check. Reply with the single word OK."}]
# One retry: a transient 5xx or 429 should not block a launch, a wrong key or parameter should.
PREFLIGHT_RETRY = RetryPolicy(max_attempts=2, base_delay=0.5, max_delay=2.0)

FIX_HINTS: dict[str, str] = {
    "auth": "The key is missing or refused: set the key variable in the environment of the web server and of "
    "every worker (then restart them), or correct the variable name.",
    "bad_request": "The provider refused the request as sent: check the model name and the parameters; some models "
    "refuse a temperature, a response format or max_tokens. Clone a judge into a new version without the "
    "refused setting, or change the batch parameters.",
    "rate_limited": "The provider is limiting the request rate: lower the requests per minute or the concurrent "
    "calls, or wait, then retry.",
    "timeout": "Calls took too long: check that the endpoint answers, raise the timeout or lower the concurrency.",
    "server_error": "The endpoint failed or could not be reached: check the API base URL and the provider's "
    "status, then retry.",
    "redirect": "The endpoint answered with a redirect, which evalsite never follows (a redirect could carry the key "
    "and the conversation to another host): set the base URL to the address the provider documents.",
    "refused": "The call would have gone to a host or port that is not allowed: an administrator approves it in "
    "Admin > Allowed API hosts (a model server on this machine: its port, e.g. localhost:11434).",
    "empty": "The model answered with no text: check the model and its parameters (a token limit too low for a "
    "reasoning model gives empty replies).",
    "invalid_output": "The judge's replies did not follow the output schema even after the format retries: try "
    "structured output, more format retries, or another model.",
    "unparseable_answer": "The judge's answer could not be read as one of the options: check the prompt's "
    "output format and the judge's structured output setting.",
    "protocol": "The conversation broke the protocol (for example the user-agent left its role): see the "
    "conversation and the integrity checks.",
    "internal": "An error inside evalsite: see the worker log; retrying will fail the same way until it is fixed.",
    "lost": "The worker doing this was lost: resume, and it continues after the last saved message.",
    "queue": "The task queue did not answer when this was started, so it never reached a worker: check that "
    "Redis answers (REDIS_URL) or that var/broker/ is writable (`manage.py status`), then retry or resume "
    "with the failed ones.",
}
GENERIC_HINT = "See the error message; fix the cause, then retry the failed ones."


def fix_hint(kind: str) -> str:
    """Return what to do about a failure of this kind."""
    return FIX_HINTS.get(kind or "", GENERIC_HINT)


@dataclass(frozen=True)
class ErrorGroup:
    """Failed jobs of one kind: how many, one example message, and what to do."""

    kind: str
    count: int
    example: str
    hint: str


def error_groups(failed: Any) -> list[ErrorGroup]:
    """Group failed jobs (a queryset with ``error_kind`` and ``error``) by kind, most frequent first (two queries)."""
    from django.db.models import Count

    counts = list(failed.values_list("error_kind").annotate(n=Count("id")).order_by("-n", "error_kind"))
    examples: dict[str, str] = {}
    for kind, error in failed.exclude(error="").order_by("id").values_list("error_kind", "error")[:500]:
        examples.setdefault(kind, error)
    return [ErrorGroup(kind or "other", n, examples.get(kind, ""), fix_hint(kind)) for kind, n in counts]


@dataclass(frozen=True)
class ModelCheck:
    """The result of checking one model: who uses it, and what went wrong (if anything)."""

    used_by: str  # "user-agent", "chatbot T-1", "judge gpt-judge"
    model: str
    ok: bool
    kind: str = ""
    problem: str = ""
    # The problem names environment variables of the server: said to administrators only (a
    # researcher could otherwise learn which providers' keys the server holds, name by name).
    names_variables: bool = False

    def seen_by(self, user: Any) -> ModelCheck:
        """Return the check as ``user`` may read it: variable names for administrators only."""
        from core.secrets_policy import is_admin

        if not self.names_variables or is_admin(user):
            return self
        return replace(self, problem=NOT_CONFIGURED, names_variables=False)

    @property
    def hint(self) -> str:
        return fix_hint(self.kind) if not self.ok else ""

    def as_dict(self) -> dict[str, Any]:
        return {"used_by": self.used_by, "model": self.model, "ok": self.ok, "kind": self.kind,
                "problem": self.problem, "hint": self.hint}


NOT_CONFIGURED = (
    "this model's provider is not configured on this server (no key is set for it); "
    "an administrator can see which key is missing"
)


@dataclass(frozen=True)
class PreflightReport:
    checks: list[ModelCheck]

    def seen_by(self, user: Any) -> PreflightReport:
        """Return the report as ``user`` may read it (see ``ModelCheck.seen_by``)."""
        return PreflightReport([check.seen_by(user) for check in self.checks])

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[ModelCheck]:
        return [c for c in self.checks if not c.ok]

    def message(self, refused: str = "nothing was started") -> str:
        """Return the refusal in one paragraph: each failed model with its reason."""
        return f"the launch check failed, {refused}: " + "; ".join(
            f"{c.used_by} ({c.model}): {c.problem}" for c in self.failed
        )


def enabled() -> bool:
    """Return whether launch checks run (``EVALSITE_PREFLIGHT``, on by default)."""
    return bool(getattr(settings, "EVALSITE_PREFLIGHT", True))


def _missing_key(spec: ModelSpec) -> str:
    if spec.api_key_env:
        return "" if os.environ.get(spec.api_key_env) else (
            f"the key variable {spec.api_key_env} is not set in the server's environment"
        )
    if spec.api_base:
        return ""  # a self-hosted endpoint may need no key at all: the call below decides
    from simulation.llm.client import _litellm

    try:
        found = _litellm().validate_environment(model=spec.model)
    except Exception:  # an unknown provider: let the call report it
        return ""
    missing = [k for k in found.get("missing_keys", []) if k]
    if found.get("keys_in_environment") is False and missing:
        return f"the provider's key variable {', '.join(missing)} is not set in the server's environment"
    return ""


def in_our_words(exc: LLMError, timeout: float) -> str:
    """Say what failed from the error's kind and status only: never the remote body or the library's text.

    A launch check is the quickest way to make the server call an address and show what came
    back: the remote body (or an error text that quotes it) could echo a key, encoded or not, or
    tell an open port from a closed one. The status and our own words say enough to act on.
    """
    status = exc.status_code
    http = f" (HTTP {status})" if status else ""
    if exc.kind == "timeout":
        return f"no answer within {timeout:g} seconds"
    if exc.kind == "server_error":
        return f"the endpoint answered with an error{http}" if status else "the endpoint could not be reached"
    if exc.kind == "rate_limited":
        return "the endpoint is limiting requests (HTTP 429)"
    if exc.kind == "auth":
        return f"the endpoint refused the key{http}" if status else "no usable key was found for this model"
    if exc.kind == "bad_request":
        return f"the endpoint refused the request as sent{http}" if status else "the request could not be made as configured"
    if exc.kind == "empty":
        return "the reply had no text"
    if exc.kind == "redirect":
        return f"the endpoint answered with a redirect{http}, which is never followed"
    if exc.kind == "refused":
        return "the call would have gone to a host or port that is not on the list of allowed API hosts"
    return f"the call failed{http}"


def check_model(used_by: str, spec: ModelSpec, *, response_format: dict[str, Any] | None = None) -> ModelCheck:
    """Check one model: the secrets policy, its key variable, then one small call as the run would make it."""
    from core.secrets_policy import destination_problems

    refused = destination_problems(api_base=spec.api_base, key_env=spec.api_key_env, params=spec.params)
    if refused:  # our own words about the chatbot's own settings: said as they are
        return ModelCheck(used_by, spec.model, False, "auth", "refused by the secrets policy: " + "; ".join(refused))
    missing = _missing_key(spec)
    if missing:
        return ModelCheck(used_by, spec.model, False, "auth", missing, names_variables=True)
    quick = replace(spec, timeout=min(spec.timeout, float(getattr(settings, "EVALSITE_PREFLIGHT_TIMEOUT", 30))))
    try:
        chat(quick, PROMPT, response_format=response_format, retry=PREFLIGHT_RETRY)
    except LLMError as exc:
        return ModelCheck(used_by, spec.model, False, exc.kind, in_our_words(exc, quick.timeout))
    return ModelCheck(used_by, spec.model, True)


def preflight(models: Sequence[tuple[str, ModelSpec, dict[str, Any] | None]]) -> PreflightReport:
    """Check every distinct model (same model, endpoint, key and parameters: checked once), in parallel."""
    distinct: dict[tuple, tuple[str, ModelSpec, dict[str, Any] | None]] = {}
    for used_by, spec, response_format in models:
        key = (spec.model, spec.api_base, spec.api_key_env, repr(sorted(spec.params.items())), bool(response_format))
        if key in distinct:
            first = distinct[key]
            distinct[key] = (f"{first[0]}, {used_by}", first[1], first[2])
        else:
            distinct[key] = (used_by, spec, response_format)
    if not distinct:
        return PreflightReport([])
    with ThreadPoolExecutor(max_workers=min(8, len(distinct))) as pool:
        checks = list(pool.map(lambda args: check_model(args[0], args[1], response_format=args[2]), distinct.values()))
    return PreflightReport(checks)


def _check_http_target(target: Any) -> ModelCheck:
    """Check an HTTP chatbot with one small request through its own client."""
    from core.secrets_policy import destination_problems, header_env_names
    from corpus.targets.http_config import header_problems
    from simulation.http_target import http_chat

    used_by, label = f"chatbot {target.code}", target.model or target.api_base
    refused = destination_problems(api_base=target.api_base, header_envs=header_env_names(target.http_headers))
    refused += header_problems(target.http_headers or {})
    if refused:
        return ModelCheck(used_by, label, False, "auth", "refused by the secrets policy: " + "; ".join(refused))
    unset = [name for name in header_env_names(target.http_headers) if not os.environ.get(name)]
    if unset:
        return ModelCheck(used_by, label, False, "auth", f"the key variable {', '.join(unset)} is not set in the server's environment",
                          names_variables=True)
    timeout = min(float(target.timeout_seconds), float(getattr(settings, "EVALSITE_PREFLIGHT_TIMEOUT", 30)))
    try:
        http_chat(
            url=target.api_base, headers=target.http_headers, request_template=target.request_template,
            response_path=target.response_path or "reply", messages=PROMPT, model_label=target.model or target.code,
            params=target.params, conversation_id="preflight", timeout=timeout, retry=PREFLIGHT_RETRY,
        )
    except LLMError as exc:
        return ModelCheck(used_by, label, False, exc.kind, in_our_words(exc, timeout))
    return ModelCheck(used_by, label, True)


def batch_preflight(spec: Any) -> PreflightReport:
    """Check the user-agent model and every chosen chatbot of a batch spec (``batch_spec.BatchSpec``)."""
    from corpus.models import Target

    ua = spec.user_agent
    agent = ModelSpec(model=ua.model.strip(), api_base=ua.api_base, api_key_env=ua.api_key_env, params=ua.params)
    return _agent_and_chatbots(agent, Target.objects.filter(pk__in=spec.target_ids).order_by("code"))


def batch_resume_preflight(batch: Any, *, include_failed: bool = False) -> PreflightReport:
    """Check what a resumed batch would call: its user-agent and the chatbots of the runs it would run.

    Those are the cancelled, queued and running (possibly stalled) runs, and the failed ones
    when they are retried too. A batch with nothing left to run needs no check.
    """
    from corpus.models import Target
    from simulation.models import SimulationRun

    Status = SimulationRun.Status
    statuses = [Status.CANCELLED, Status.QUEUED, Status.RUNNING] + ([Status.FAILED] if include_failed else [])
    runs = batch.runs.filter(status__in=statuses)
    if not runs.exists():
        return PreflightReport([])
    agent = ModelSpec(model=batch.user_model.strip(), api_base=batch.user_api_base,
                      api_key_env=batch.user_api_key_env, params=batch.user_params)
    return _agent_and_chatbots(agent, Target.objects.filter(pk__in=runs.values("target_id")).order_by("code"))


def _agent_and_chatbots(agent: ModelSpec, targets: Any) -> PreflightReport:
    from corpus.models import Target
    from simulation.simulate import target_spec

    models: list[tuple[str, ModelSpec, dict[str, Any] | None]] = []
    if agent.model:
        models.append(("user-agent", agent, None))
    http: list[Any] = []
    for target in targets:
        if target.kind == Target.Kind.HTTP:
            http.append(target)
        elif target.kind != Target.Kind.DEMO:
            models.append((f"chatbot {target.code}", target_spec(target), None))
    report = preflight(models)
    return PreflightReport(report.checks + [_check_http_target(t) for t in http])

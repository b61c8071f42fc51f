"""Call a chatbot behind a custom HTTP endpoint (Target.kind ``http``).

The request body is the target's JSON ``request_template`` with fields filled in: a string that
is exactly ``"{{messages}}"`` becomes the message list itself, ``{{field}}`` inside a longer
string is replaced by text. Fields: ``messages`` (list of {role, content}, system prompt first
when set), ``history`` (the same without the system prompt), ``last_message``,
``system_prompt``, ``conversation_id``, ``model``, ``params``. Header values name environment
variables as ``${NAME}``; the secret is read at call time and never stored or logged. The
reply is found by ``response_path`` ("choices.0.message.content", "reply", "data.text").

Retries (429 with Retry-After, 5xx, timeouts, empty replies) and the shared rate limiter work
as in ``simulation.llm.chat``; the result is an ``LLMResult`` so the call record is the same.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from core import http_policy
from core.secrets_policy import SecretsPolicyError, destination_enforce, header_env_names
from corpus.targets.http_config import ENV_RE, FIELD_RE, header_problems
from simulation.llm import LLMError, LLMResult, RateLimiter, RetryPolicy, request_hash
from simulation.llm.client import DEFAULT_RETRY, retry_after_seconds


def resolve_headers(headers: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Return the headers with ``${NAME}`` filled from the environment, and the secrets used."""
    secrets: list[str] = []
    resolved: dict[str, str] = {}

    def env(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if value is None:
            raise LLMError(f"environment variable {match.group(1)} is not set", kind="auth")
        secrets.append(value)
        return value

    for name, value in headers.items():
        resolved[str(name)] = ENV_RE.sub(env, str(value))
    return resolved, secrets


def fill(template: Any, fields: Mapping[str, Any]) -> Any:
    """Return ``template`` with its ``{{field}}`` placeholders replaced (recursively)."""
    if isinstance(template, dict):
        return {k: fill(v, fields) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, fields) for v in template]
    if isinstance(template, str):
        whole = FIELD_RE.fullmatch(template.strip())
        if whole:
            return fields[whole.group(1)]
        return FIELD_RE.sub(lambda m: _text(fields[m.group(1)]), template)
    return template


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def extract(data: Any, path: str) -> Any:
    """Return the value at a dotted ``path`` ("choices.0.message.content"), or None."""
    current = data
    for part in [p for p in path.split(".") if p]:
        if isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else None
        elif isinstance(current, dict):
            current = current.get(part)
        else:
            return None
        if current is None:
            return None
    return current


def _classify(status: int) -> tuple[str, bool]:
    if status == 429:
        return "rate_limited", True
    if status in (401, 403):
        return "auth", False
    if status == 408:
        return "timeout", True
    if status >= 500 or status == 409:
        return "server_error", True
    return "bad_request", False


def http_chat(
    *,
    url: str,
    headers: Mapping[str, str],
    request_template: Mapping[str, Any],
    response_path: str,
    messages: list[dict[str, Any]],
    model_label: str,
    params: Mapping[str, Any],
    conversation_id: str = "",
    timeout: float = 60.0,
    retry: RetryPolicy = DEFAULT_RETRY,
    limiter: RateLimiter | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LLMResult:
    """POST the conversation to an HTTP chatbot and return its reply as an ``LLMResult``."""
    import httpx

    try:  # the secrets policy, again at call time: the endpoint's host and port and every ${NAME}
        destination_enforce(api_base=url, header_envs=header_env_names(headers))
    except SecretsPolicyError as exc:
        raise LLMError(f"{model_label}: {exc}", kind="auth") from exc
    refused_headers = header_problems(headers)
    if refused_headers:  # a Host or hop-by-hop header stored before the rule: refused, not sent
        raise LLMError(f"{model_label}: " + "; ".join(refused_headers), kind="bad_request")
    system = [m for m in messages if m["role"] == "system"]
    history = [m for m in messages if m["role"] != "system"]
    fields = {
        "messages": messages,
        "history": history,
        "last_message": history[-1]["content"] if history else "",
        "system_prompt": system[0]["content"] if system else "",
        "conversation_id": conversation_id,
        "model": model_label,
        "params": dict(params),
    }
    body = fill(dict(request_template) or {"messages": "{{messages}}"}, fields)
    resolved, _ = resolve_headers(headers)
    rhash = request_hash(model=model_label, api_base=url, params=dict(params), messages=messages, response_format=None)
    rate_key = f"http:{url}"

    with httpx.Client(timeout=timeout) as client:
        for attempt in range(1, retry.max_attempts + 1):
            retry_after: float | None = None
            if limiter is not None:
                limiter.acquire(rate_key)
            started = time.perf_counter()
            try:
                # Under the outbound policy: no redirect followed, only an allowed host and port.
                response = http_policy.call(client.post, url, json=body, headers=resolved)
                latency_ms = (time.perf_counter() - started) * 1000.0
                if response.status_code >= 400 or response.status_code < 200:
                    kind, retryable = _classify(response.status_code)
                    if kind == "rate_limited":
                        retry_after = retry_after_seconds(SimpleNamespace(response=response))
                    # The status only, in our words: the remote body may echo anything (a key, or
                    # the banner of a service that is not a chatbot at all).
                    error = LLMError(
                        f"{model_label}: {kind} after {attempt} attempt(s): the endpoint answered HTTP {response.status_code}",
                        kind=kind, retryable=retryable, attempts=attempt, status_code=response.status_code,
                    )
                else:
                    content = extract(response.json(), response_path)
                    content = content if isinstance(content, str) else ("" if content is None else _text(content))
                    if content.strip():
                        return LLMResult(
                            content=content, model=model_label, params=dict(params), latency_ms=latency_ms,
                            prompt_tokens=0, completion_tokens=0, cost_usd=None, attempts=attempt,
                            cached=False, request_hash=rhash,
                        )
                    error = LLMError(
                        f"{model_label}: empty after {attempt} attempt(s): nothing at '{response_path}'",
                        kind="empty", retryable=True, attempts=attempt,
                    )
            except http_policy.OutboundRefused as exc:
                error = LLMError(f"{model_label}: {exc.kind} after {attempt} attempt(s): {exc}",
                                 kind=exc.kind, retryable=False, attempts=attempt, status_code=exc.status_code)
            except httpx.TimeoutException:
                error = LLMError(f"{model_label}: timeout after {attempt} attempt(s): no answer within {timeout:g} s",
                                 kind="timeout", retryable=True, attempts=attempt)
            except httpx.TransportError:
                # Not the library's text: "refused" versus "disconnected" would tell a port scan
                # which of this server's ports are open.
                error = LLMError(f"{model_label}: server_error after {attempt} attempt(s): the endpoint could not be reached",
                                 kind="server_error", retryable=True, attempts=attempt)
            except ValueError:  # the body is not JSON
                error = LLMError(f"{model_label}: bad_request after {attempt} attempt(s): the reply is not JSON",
                                 kind="bad_request", retryable=False, attempts=attempt)
            finally:
                if limiter is not None:
                    limiter.release(rate_key)
            if not error.retryable or attempt >= retry.max_attempts:
                raise error
            sleep(retry.delay(attempt, retry_after))
    raise AssertionError("unreachable")  # pragma: no cover

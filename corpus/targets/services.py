"""Create chatbots under test (litellm models or custom HTTP endpoints), validated."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from core import call_budget
from core.call_budget import budget_problems
from core.codes import new_code
from core.secrets_policy import api_host_approve, destination_problems, header_env_names
from corpus.errors import CorpusError
from corpus.models import Target
from corpus.targets.http_config import header_problems, template_problems

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
KEY_LIKE_RE = re.compile(r"(sk-|key-|Bearer\s)[A-Za-z0-9]", re.IGNORECASE)


class _Problems(list[str]):
    """Problems in the order found, each also filed under the input field it is about."""

    def __init__(self) -> None:
        super().__init__()
        self.by_field: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        if message not in self:
            self.append(message)
        self.by_field.setdefault(field, []).append(message)


def target_code_unique() -> str:
    """Return a chatbot pseudonym (``T-XXXX``) no stored chatbot has."""
    while True:
        code = new_code("T-", 4)
        if not Target.objects.filter(code=code).exists():
            return code


@transaction.atomic
def target_create(
    *,
    kind: str,
    model: str,
    code: str = "",
    name: str = "",
    api_base: str = "",
    api_key_env: str = "",
    params: dict[str, Any] | None = None,
    system_prompt: str = "",
    http_headers: dict[str, Any] | None = None,
    request_template: Any = None,
    response_path: str = "",
    max_concurrent: int = 4,
    requests_per_minute: int = 0,
    timeout_seconds: float = 60.0,
    retry_attempts: int = call_budget.DEFAULT_ATTEMPTS,
    retry_base_delay: float = call_budget.DEFAULT_BASE_DELAY,
    retry_max_delay: float = call_budget.DEFAULT_MAX_DELAY,
    actor: AbstractBaseUser | None = None,
) -> Target:
    """Create a chatbot under test; raise ``CorpusError`` listing every problem (and by field).

    The API key is never stored: only the NAME of the environment variable that holds it
    (litellm targets) or ``${NAME}`` references inside header values (HTTP targets). Both, and
    the base URL's host, must pass the secrets policy (``core.secrets_policy``); ``actor`` is
    who asks (an administrator may name a host not yet on the allowed list, and so approves it).
    """
    problems = _Problems()
    if kind not in (Target.Kind.LITELLM, Target.Kind.HTTP):
        problems.add("kind", "kind must be 'litellm' or 'http'")
    code = code.strip()
    if code and not CODE_RE.match(code):
        problems.add("code", "the code may hold letters, digits, '-', '_', '.' (at most 40)")
    if code and Target.objects.filter(code=code).exists():
        problems.add("code", f"the code '{code}' is taken")
    model = model.strip()
    if kind == Target.Kind.LITELLM and not model:
        problems.add("model", "a litellm target needs a model string, e.g. openai/gpt-4o")
    if kind == Target.Kind.HTTP and not api_base.strip():
        problems.add("api_base", "an HTTP target needs the endpoint URL")
    key_named = not api_key_env or ENV_NAME_RE.match(api_key_env)
    if not key_named:
        problems.add("api_key_env", "api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key")
    for field, label, value in (
        ("params", "parameters", params or {}), ("system_prompt", "system prompt", system_prompt),
        ("request_template", "request template", request_template or {}),
    ):
        if KEY_LIKE_RE.search(str(value)):
            problems.add(field, f"the {label} look like they hold a credential; use an environment variable instead")
    if params is not None and not isinstance(params, dict):
        problems.add("params", "parameters must be a JSON object")
    elif params and any(k in params for k in ("api_key", "api_base", "model", "messages")):
        problems.add("params", "parameters may not set api_key, api_base, model or messages")
    headers_ok = False
    if kind == Target.Kind.HTTP:
        headers = http_headers or {}
        if not isinstance(headers, dict):
            problems.add("http_headers", "headers must be a JSON object")
        else:
            headers_ok = True
            for problem in header_problems(headers):
                problems.add("http_headers", problem)
        template = request_template if request_template is not None else {"messages": "{{messages}}"}
        for problem in template_problems(template):
            problems.add("request_template", problem)
    else:
        template = {}
    if key_named:
        # The secrets policy, asked field by field so each refusal shows beside its field.
        for field, found in (
            ("api_key_env", destination_problems(key_env=api_key_env)),
            ("http_headers", destination_problems(header_envs=header_env_names(http_headers) if headers_ok else ())),
            ("api_base", destination_problems(api_base=api_base, actor=actor)),
            ("params", destination_problems(params=params if isinstance(params, dict) else None)),
        ):
            for problem in found:
                problems.add(field, problem)
    if max_concurrent < 0:
        problems.add("max_concurrent", "limits must be 0 (none) or more")
    if requests_per_minute < 0:
        problems.add("requests_per_minute", "limits must be 0 (none) or more")
    budget = {
        "timeout_seconds": timeout_seconds, "retry_attempts": retry_attempts,
        "retry_base_delay": retry_base_delay, "retry_max_delay": retry_max_delay,
    }
    for field, found in budget_problems(**budget).items():
        for problem in found:
            problems.add(field, problem)
    if problems:
        raise CorpusError("; ".join(problems), fields=problems.by_field)
    api_host_approve(url=api_base, actor=actor, note="set on a chatbot")
    return Target.objects.create(
        code=code or target_code_unique(),
        name=name.strip(),
        kind=kind,
        model=model or "http-endpoint",
        api_base=api_base.strip(),
        api_key_env=api_key_env.strip(),
        params=params or {},
        system_prompt=system_prompt,
        http_headers=http_headers or {} if kind == Target.Kind.HTTP else {},
        request_template=template,
        response_path=response_path.strip() if kind == Target.Kind.HTTP else "",
        max_concurrent=max_concurrent,
        requests_per_minute=requests_per_minute,
        created_by=actor if getattr(actor, "pk", None) else None,
        **budget,
    )

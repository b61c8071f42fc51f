"""Create chatbots under test (litellm models or custom HTTP endpoints), validated."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from core.codes import new_code
from core.secrets_policy import api_host_approve, destination_problems, header_env_names
from corpus.errors import CorpusError
from corpus.models import Target
from corpus.targets.http_config import header_problems, template_problems

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
KEY_LIKE_RE = re.compile(r"(sk-|key-|Bearer\s)[A-Za-z0-9]", re.IGNORECASE)


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
    actor: AbstractBaseUser | None = None,
) -> Target:
    """Create a chatbot under test; raise ``CorpusError`` listing every problem.

    The API key is never stored: only the NAME of the environment variable that holds it
    (litellm targets) or ``${NAME}`` references inside header values (HTTP targets). Both, and
    the base URL's host, must pass the secrets policy (``core.secrets_policy``); ``actor`` is
    who asks (an administrator may name a host not yet on the allowed list, and so approves it).
    """
    problems: list[str] = []
    if kind not in (Target.Kind.LITELLM, Target.Kind.HTTP):
        problems.append("kind must be 'litellm' or 'http'")
    code = code.strip()
    if code and not CODE_RE.match(code):
        problems.append("the code may hold letters, digits, '-', '_', '.' (at most 40)")
    if code and Target.objects.filter(code=code).exists():
        problems.append(f"the code '{code}' is taken")
    model = model.strip()
    if kind == Target.Kind.LITELLM and not model:
        problems.append("a litellm target needs a model string, e.g. openai/gpt-4o")
    if kind == Target.Kind.HTTP and not api_base.strip():
        problems.append("an HTTP target needs the endpoint URL")
    if api_key_env and not ENV_NAME_RE.match(api_key_env):
        problems.append("api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key")
    for label, value in (("parameters", params or {}), ("system prompt", system_prompt), ("request template", request_template or {})):
        if KEY_LIKE_RE.search(str(value)):
            problems.append(f"the {label} look like they hold a credential; use an environment variable instead")
    if params is not None and not isinstance(params, dict):
        problems.append("parameters must be a JSON object")
    elif params and any(k in params for k in ("api_key", "api_base", "model", "messages")):
        problems.append("parameters may not set api_key, api_base, model or messages")
    if kind == Target.Kind.HTTP:
        headers = http_headers or {}
        if not isinstance(headers, dict):
            problems.append("headers must be a JSON object")
        else:
            problems += header_problems(headers)
        template = request_template if request_template is not None else {"messages": "{{messages}}"}
        problems += template_problems(template)
    else:
        template = {}
    if not any("NAME of an environment variable" in p for p in problems):
        problems += destination_problems(
            api_base=api_base,
            key_env=api_key_env,
            params=params if isinstance(params, dict) else None,
            header_envs=header_env_names(http_headers) if kind == Target.Kind.HTTP and isinstance(http_headers, dict) else (),
            actor=actor,
        )
    if max_concurrent < 0 or requests_per_minute < 0:
        problems.append("limits must be 0 (none) or more")
    if problems:
        raise CorpusError("; ".join(problems))
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
    )

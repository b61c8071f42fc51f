"""The extra parameters a chatbot, judge or user-agent may send: documented generation parameters only.

litellm passes extra keyword arguments on to the provider, and many of them are not about
generation at all: credentials (``api_key``, ``azure_ad_token``, ``aws_secret_access_key``,
``vertex_credentials``), endpoints and regions (``aws_bedrock_runtime_endpoint``,
``vertex_location``), identity providers (``aws_web_identity_token``, ``azure_client_id``) and
headers. Several read secrets on the server: a value ``os.environ/NAME`` or ``oidc/env/NAME``
is replaced by the variable's value, ``oidc/file/...`` by a file's content, and the result is
sent to whichever token endpoint the other parameters name. A deny-list of such names is
always one release behind litellm; so this is an allow-list, in one place (``GENERATION_PARAMS``),
and every entry point (pages, API, admin, commands) and the LLM client at call time ask it.

A value is refused too when it reads like a secret reference (``SECRET_REFERENCE_PREFIXES``),
whatever the parameter, so a stop sequence cannot smuggle one in either.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# Prefixes litellm (or its secret managers) resolves to a secret: environment variables,
# OIDC tokens (google, github, circleci, azure, a file, a variable, a file named by a variable)
# and secret-manager pointers. tests/security/test_parameter_allow_list.py reads litellm's
# installed source and fails when it resolves a prefix this list does not name.
SECRET_REFERENCE_PREFIXES = (
    "os.environ/",
    "oidc/",
    "hashicorp_vault/",
    "aws_secret_manager/",
    "google_secret_manager/",
    "azure_key_vault/",
)
_SHORT_WORD = re.compile(r"[a-z][a-z_-]{0,19}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _word(value: Any) -> bool:
    return isinstance(value, str) and bool(_SHORT_WORD.fullmatch(value))


def _stop(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= 200
    return isinstance(value, list) and len(value) <= 16 and all(isinstance(v, str) and len(v) <= 200 for v in value)


def _logit_bias(value: Any) -> bool:
    return isinstance(value, dict) and len(value) <= 300 and all(
        isinstance(k, str) and k.isdigit() and _number(v) for k, v in value.items()
    )


def _thinking(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) <= {"type", "budget_tokens"}
        and _word(value.get("type", "enabled"))
        and _integer(value.get("budget_tokens", 0))
    )


# name -> (what the value must be, in words; the check). Documented OpenAI-style generation
# parameters that litellm maps for each provider, plus litellm's own per-call price.
GENERATION_PARAMS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "temperature": ("a number", _number),
    "top_p": ("a number", _number),
    "top_k": ("a number", _number),
    "min_p": ("a number", _number),
    "max_tokens": ("a whole number", _integer),
    "max_completion_tokens": ("a whole number", _integer),
    "seed": ("a whole number", _integer),
    "stop": ("a text or a list of texts", _stop),
    "presence_penalty": ("a number", _number),
    "frequency_penalty": ("a number", _number),
    "repetition_penalty": ("a number", _number),
    "logit_bias": ("an object of token ids to numbers", _logit_bias),
    "reasoning_effort": ("a word such as low, medium or high", _word),
    "verbosity": ("a word such as low, medium or high", _word),
    "thinking": ('an object like {"type": "enabled", "budget_tokens": 1024}', _thinking),
    "input_cost_per_token": ("a number (US dollars)", _number),
    "output_cost_per_token": ("a number (US dollars)", _number),
}


def is_secret_reference(value: str) -> bool:
    """Return whether a text reads like a reference litellm would resolve to a secret."""
    text = value.strip().lower()
    return text.startswith(SECRET_REFERENCE_PREFIXES) or "os.environ/" in text


def _references(value: Any, path: str) -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _references(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _references(v, f"{path}.{i}")]
    if isinstance(value, str) and is_secret_reference(value):
        return [f"the parameter {path} may not refer to a secret (a value like os.environ/... or oidc/...)"]
    return []


def params_problems(params: Any) -> list[str]:
    """Return why these extra parameters may not be sent ([] when every one is an allowed generation parameter)."""
    if params is None or params == {}:
        return []
    if not isinstance(params, dict):
        return ["the parameters must be a JSON object of generation parameters"]
    problems: list[str] = []
    for name, value in params.items():
        rule = GENERATION_PARAMS.get(str(name))
        if rule is None:
            problems.append(
                f"the parameter {name} is not an allowed generation parameter (allowed: {', '.join(GENERATION_PARAMS)}); "
                "keys, endpoints, regions and identity settings are never parameters"
            )
            continue
        problems += _references(value, str(name))
        if not rule[1](value):
            problems.append(f"the parameter {name} must be {rule[0]}")
    return list(dict.fromkeys(problems))

"""Which environment variables may be sent as an API key, and to which hosts: one rule, by allow-list.

A chatbot, a judge or a simulation's user-agent names the environment variable that holds its
key (``api_key_env``, or ``${NAME}`` inside an HTTP chatbot's header) and may name a base URL.
Without a rule, a researcher could name ``DATABASE_URL`` or ``DJANGO_SECRET_KEY`` and a URL of
their own, and the server would send that secret there. So:

- a key variable must match ``EVALSITE_KEY_ENV_ALLOWED`` (default ``*_API_KEY``, ``*_API_TOKEN``)
  and never the app's own secrets (``DATABASE_URL``, ``REDIS_URL``, ``DJANGO_*``, ``EVALSITE_*``,
  ``SECRET_KEY``, plus ``EVALSITE_KEY_ENV_DENIED``), whoever asks;
- a base URL's host and port must be in ``EVALSITE_API_HOSTS`` or approved by an administrator
  (``AllowedApiHost``; ``core.api_hosts``); an administrator who saves an unlisted one approves
  it; this machine's ports are never allowed by default;
- extra parameters are documented generation parameters only, never a credential, an endpoint,
  a region, an identity provider or a secret reference (``core.llm_params``).

Every entry point (pages, API, admin, commands) checks with the acting user; the LLM client and
the HTTP chatbot client check again at call time, so a row stored before the rule (or edited in
the database) is refused before anything leaves the server.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from core import api_hosts
from core.errors import ServiceError
from core.llm_params import params_problems
from core.roles import Role, user_roles

# The app's own secrets: never sent anywhere, whatever the configured allow-list says.
ALWAYS_DENIED = ("DATABASE_URL", "REDIS_URL", "DJANGO_*", "EVALSITE_*", "SECRET_KEY", "*_SECRET_KEY")
# A reference to an environment variable inside an HTTP chatbot's header value: ``${NAME}``.
ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_KEY_PATTERNS = ("*_API_KEY", "*_API_TOKEN")
class SecretsPolicyError(ServiceError):
    """A key variable or a base URL the policy refuses."""


def _setting(name: str, default: Iterable[str]) -> tuple[str, ...]:
    return tuple(getattr(settings, name, None) or default)


def key_env_problem(name: str) -> str | None:
    """Return why the variable ``name`` may not be sent as a key, or None when it may."""
    name = (name or "").strip()
    if not name:
        return None  # no key of ours: the provider library reads its own usual variable
    denied = (*ALWAYS_DENIED, *_setting("EVALSITE_KEY_ENV_DENIED", ()))
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in denied):
        return f"the variable {name} holds a secret of evalsite itself and is never sent to a model"
    allowed = _setting("EVALSITE_KEY_ENV_ALLOWED", DEFAULT_KEY_PATTERNS)
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed):
        return (
            f"the variable {name} is not an allowed key variable: its name must match "
            f"{', '.join(allowed)} (EVALSITE_KEY_ENV_ALLOWED)"
        )
    return None


def key_env_hint() -> str:
    """Return the allowed key variable names, for help texts ("*_API_KEY or *_API_TOKEN")."""
    return " or ".join(_setting("EVALSITE_KEY_ENV_ALLOWED", DEFAULT_KEY_PATTERNS))


def api_host(url: str) -> str:
    """Return the lower-case host of ``url`` ("" when there is none)."""
    where = api_hosts.destination(url)
    return where.host if where else ""


def is_admin(actor: Any) -> bool:
    return actor is not None and Role.ADMIN in user_roles(actor)


def api_base_problem(url: str, *, actor: Any = None) -> str | None:
    """Return why calls may not go to ``url``, or None. An administrator may name any host and port."""
    url = (url or "").strip()
    if not url:
        return None  # the provider's own endpoint (checked request by request by core.http_policy)
    where = api_hosts.destination(url)
    if where is None:
        return f"the base URL {url} is not an http(s) URL with a host and a valid port"
    parts = urlsplit(url)
    if parts.username or parts.password:
        return "the base URL may not hold a user name or password; name a key variable instead"
    if (plain := api_hosts.plain_http_problem(where)) is not None:
        return plain  # whoever asks: a key in clear text is never an administrator's choice
    if api_hosts.destination_listed(where) or is_admin(actor):
        return None
    return api_hosts.not_listed_message(where)


def destination_problems(
    *, api_base: str = "", key_env: str = "", header_envs: Iterable[str] = (), params: Any = None,
    actor: Any = None, label: str = "",
) -> list[str]:
    """Return every reason a call to ``api_base`` with these key variables and parameters is refused."""
    prefix = f"{label}: " if label else ""
    problems = [problem for name in (key_env, *header_envs) if (problem := key_env_problem(name))]
    base = api_base_problem(api_base, actor=actor)
    if base:
        problems.append(base)
    problems += params_problems(params)
    return [prefix + p for p in dict.fromkeys(problems)]


def header_env_names(headers: Mapping[str, Any] | None) -> list[str]:
    """Return the ``${NAME}`` variables an HTTP chatbot's header values refer to."""
    return [name for value in (headers or {}).values() for name in ENV_REF_RE.findall(str(value))]


def destination_enforce(*, api_base: str = "", key_env: str = "", header_envs: Iterable[str] = (), params: Any = None) -> None:
    """Raise ``SecretsPolicyError`` unless a call may go there now (the call-time check)."""
    problems = destination_problems(api_base=api_base, key_env=key_env, header_envs=header_envs, params=params)
    if problems:
        raise SecretsPolicyError("refused by the secrets policy: " + "; ".join(problems))


def api_host_approve(*, url: str, actor: Any, note: str = "") -> None:
    """Record that an administrator approved the host and port of ``url`` (no-op when already allowed)."""
    if is_admin(actor):
        api_hosts.approve(url=url, actor=actor, note=note)

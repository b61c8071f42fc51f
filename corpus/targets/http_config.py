"""What a custom HTTP chatbot's stored settings may hold: header values and request fields.

The request body is a JSON template whose ``{{field}}`` placeholders are filled at call time
(see ``simulation.http_target``); header values name environment variables as ``${NAME}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.secrets_policy import ENV_REF_RE

ENV_RE = ENV_REF_RE  # one definition, shared with the secrets policy
FIELD_RE = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
FIELDS = frozenset({"messages", "history", "last_message", "system_prompt", "conversation_id", "model", "params"})
# Headers that carry credentials must take their value from the environment.
SECRET_HEADER_RE = re.compile(r"authorization|api[-_]?key|token|secret|cookie|password", re.IGNORECASE)
# Headers the HTTP client sets itself: ``Host`` (a custom one turns the client into a proxy to
# whatever virtual host the server behind the address holds), the hop-by-hop headers of RFC 9110
# section 7.6.1, and the ones that frame the body.
RESERVED_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "content-length", "expect",
})
HEADER_NAME_RE = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def header_problems(headers: Mapping[str, Any]) -> list[str]:
    """Return why ``headers`` may not be stored or sent (a reserved header, a literal credential, a non-text value)."""
    problems = []
    for name, value in headers.items():
        if not HEADER_NAME_RE.fullmatch(str(name)):
            problems.append(f"header {name!r}: not a valid header name")
        elif str(name).lower() in RESERVED_HEADERS:
            problems.append(f"header {name}: set by evalsite's HTTP client itself, it cannot be set on a chatbot")
        elif not isinstance(value, str) or "\r" in value or "\n" in value:
            problems.append(f"header {name}: the value must be one line of text")
        elif SECRET_HEADER_RE.search(name) and not ENV_RE.search(value):
            problems.append(f"header {name}: credentials must come from an environment variable, e.g. 'Bearer ${{BOT_API_TOKEN}}'")
    return problems


def template_problems(template: Any) -> list[str]:
    """Return the unknown ``{{fields}}`` used by a request template."""
    found = set(FIELD_RE.findall(json.dumps(template)))
    return [f"unknown request field {{{{{name}}}}}" for name in sorted(found - FIELDS)]

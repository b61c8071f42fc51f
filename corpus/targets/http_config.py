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


def header_problems(headers: Mapping[str, Any]) -> list[str]:
    """Return why ``headers`` may not be stored (a literal credential, a non-text value)."""
    problems = []
    for name, value in headers.items():
        if not isinstance(value, str):
            problems.append(f"header {name}: the value must be text")
        elif SECRET_HEADER_RE.search(name) and not ENV_RE.search(value):
            problems.append(f"header {name}: credentials must come from an environment variable, e.g. 'Bearer ${{BOT_API_TOKEN}}'")
    return problems


def template_problems(template: Any) -> list[str]:
    """Return the unknown ``{{fields}}`` used by a request template."""
    found = set(FIELD_RE.findall(json.dumps(template)))
    return [f"unknown request field {{{{{name}}}}}" for name in sorted(found - FIELDS)]

"""Prompt templates: placeholders, rendering, the persona context, and the team's defaults.

A template is plain text with ``{placeholder}`` fields. A placeholder name is any text without
braces or line breaks, so VERA-MH's column headers work as they are (``{Current Suicide Risk
Level}``, ``{Treatment Engagement / Access}``). ``{{`` and ``}}`` give literal braces. A line
holding a placeholder whose value is empty is left out (an unset end marker or word cap, an
empty persona cell), so templates need no conditionals. A placeholder with no value at all is an
error, reported when the batch is created, never at turn 7 of conversation 300.

Values available for every persona: ``name``, ``age``, ``card`` (the persona's profile as
"Label: value" lines), ``opening_message``, ``persona_key``, ``end_marker``, ``word_cap``,
``turns``, ``exchanges``, plus each profile field under its own key (VERA-MH column headers).
The reminder may also use ``{chatbot_message}``; without it the chatbot's message follows the
reminder after a blank line.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from corpus.models import Persona
from simulation.models import PromptTemplate

BUILTIN_FILE = Path(__file__).resolve().parent / "builtin" / "prompt_templates.yaml"
_FIELD_RE = re.compile(r"\{\{|\}\}|\{([^{}\n]+)\}")
CARD_SKIP = frozenset({"age", "name"})


class TemplateError(ValueError):
    """A template that cannot be rendered for a persona (names the missing placeholders)."""


def placeholders(text: str) -> list[str]:
    """Return the placeholder names of ``text`` in order of first use."""
    seen: dict[str, None] = {}
    for match in _FIELD_RE.finditer(text):
        if match.group(1) is not None:
            seen.setdefault(match.group(1).strip(), None)
    return list(seen)


def template_hash(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\n{text}".encode()).hexdigest()


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return ", ".join(_as_text(v) for v in value if _as_text(v))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def render(text: str, values: Mapping[str, Any]) -> str:
    """Fill ``text`` with ``values``; drop lines whose placeholders render empty.

    Raises ``TemplateError`` naming every placeholder that has no value.
    """
    missing = [name for name in placeholders(text) if name not in values]
    if missing:
        raise TemplateError("no value for " + ", ".join(f"{{{m}}}" for m in missing))
    lines: list[str] = []
    for line in text.split("\n"):
        empty_field = False

        def fill(match: re.Match[str]) -> str:
            nonlocal empty_field
            whole = match.group(0)
            if whole in ("{{", "}}"):
                return whole[0]
            value = _as_text(values[match.group(1).strip()])
            if not value:
                empty_field = True
            return value

        rendered = _FIELD_RE.sub(fill, line)
        if not empty_field:
            lines.append(rendered)
    return "\n".join(lines).strip()


def card_text(profile: Mapping[str, Any]) -> str:
    """Return the persona card as "Label: value" lines (age and name are separate fields)."""
    lines = []
    for key, value in profile.items():
        text = _as_text(value)
        if text and str(key).lower() not in CARD_SKIP:
            label = str(key).replace("_", " ").strip()
            lines.append(f"{label[:1].upper()}{label[1:]}: {text}")
    return "\n".join(lines)


def persona_values(persona: Persona, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return every placeholder value a template may use for ``persona``."""
    profile = dict(persona.profile or {})
    values: dict[str, Any] = {str(k): v for k, v in profile.items()}
    values.update(
        name=persona.name,
        age=profile.get("age", profile.get("Age", "")),
        card=card_text(profile),
        opening_message=persona.opening_message,
        persona_key=persona.key,
    )
    values.update(extra or {})
    return values


def reminder_wrap(reminder: str, chatbot_message: str) -> str:
    """Return the chatbot message as the user-agent sees it: after (or inside) the reminder."""
    if not reminder:
        return chatbot_message
    if "{chatbot_message}" in reminder:
        return reminder.replace("{chatbot_message}", chatbot_message)
    return f"{reminder}\n\n{chatbot_message}"


# --- storage ------------------------------------------------------------------------------


@transaction.atomic
def prompt_template_create(
    *,
    kind: str,
    key: str,
    text: str,
    name: str = "",
    description: str = "",
    is_builtin: bool = False,
    created_by: AbstractBaseUser | None = None,
) -> tuple[PromptTemplate, bool]:
    """Store ``text`` as the next version of ``key``; an identical stored text is returned."""
    if kind not in PromptTemplate.Kind.values:
        raise TemplateError(f"unknown template kind '{kind}'")
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise TemplateError("the template text is empty")
    digest = template_hash(kind, text)
    existing = PromptTemplate.objects.filter(key=key, content_hash=digest).first()
    if existing is not None:
        return existing, False
    previous = PromptTemplate.objects.filter(key=key).order_by("-version").first()
    if previous is not None and previous.kind != kind:
        raise TemplateError(f"template '{key}' is a {previous.kind} template, not {kind}")
    version = (PromptTemplate.objects.filter(key=key).aggregate(v=Max("version"))["v"] or 0) + 1
    template = PromptTemplate.objects.create(
        kind=kind,
        key=key,
        version=version,
        name=name or key,
        description=description,
        text=text,
        content_hash=digest,
        placeholders=placeholders(text),
        is_builtin=is_builtin,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )
    return template, True


def prompt_templates_ensure_builtin() -> dict[str, PromptTemplate]:
    """Store the team-written default templates (idempotent); return them by key."""
    import yaml

    data = yaml.safe_load(BUILTIN_FILE.read_text(encoding="utf-8"))
    stored: dict[str, PromptTemplate] = {}
    for entry in data["templates"]:
        template, _ = prompt_template_create(
            kind=entry["kind"],
            key=entry["key"],
            text=entry["text"],
            name=entry.get("name", ""),
            description=entry.get("description", ""),
            is_builtin=True,
        )
        stored[entry["key"]] = template
    return stored


def prompt_template_latest(key: str) -> PromptTemplate | None:
    return PromptTemplate.objects.filter(key=key).order_by("-version").first()


# Default template key for each protocol and kind.
DEFAULTS = {
    ("amhart", PromptTemplate.Kind.PERSONA_SYSTEM): "evalsite-amhart-persona",
    ("vera-mh", PromptTemplate.Kind.PERSONA_SYSTEM): "evalsite-vera-persona",
    ("vera-mh", PromptTemplate.Kind.REMINDER): "evalsite-vera-reminder",
    ("amhart", PromptTemplate.Kind.KICKOFF): "evalsite-kickoff",
    ("vera-mh", PromptTemplate.Kind.KICKOFF): "evalsite-kickoff",
}

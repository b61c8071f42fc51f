"""Checklist mode (AMHART): one call per conversation, a strict JSON schema, validated replies.

The reply must be ``{"items": {<item key>: {"label", "rationale", "evidence"}}}`` with every
item of the instrument and nothing else. The schema's label enum is per item ("N/A" only where
the item allows it). A reply that breaks the schema or the item list (malformed JSON
included) is sent back with the list of problems, at most ``format_retries`` times; if it still
fails every label is recorded MISSING with the reason. Nothing is ever defaulted to "no".
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from corpus.instruments.labels import ItemLabels, UnknownAnswer
from judging.calls import Caller
from judging.prompts import Turn, render, render_transcript
from simulation.llm import LLMError
from stats.data import is_na_label

SCHEMA_NAME = "checklist_labels"
NA = "N/A"


@dataclass(frozen=True)
class ItemSpec:
    """One checklist item as the judge sees it."""

    key: str
    number: str
    domain: str
    text: str
    allowed: tuple[str, ...]
    applicability: str = ""
    help: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    label: str
    rationale: str
    evidence: list[dict[str, Any]]


@dataclass
class ChecklistOutcome:
    """Verdicts by item key, or the reason there are none."""

    verdicts: dict[str, Verdict] | None
    error_kind: str = ""
    error: str = ""


def response_schema(items: Sequence[ItemSpec]) -> dict[str, Any]:
    """Return the strict JSON schema of a reply for these items."""
    evidence = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"turn": {"type": "integer"}, "quote": {"type": "string"}},
            "required": ["turn", "quote"],
            "additionalProperties": False,
        },
    }
    properties = {
        item.key: {
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": list(item.allowed)},
                "rationale": {"type": "string"},
                "evidence": evidence,
            },
            "required": ["label", "rationale", "evidence"],
            "additionalProperties": False,
        }
        for item in items
    }
    return {
        "type": "object",
        "properties": {
            "items": {
                "type": "object",
                "properties": properties,
                "required": [item.key for item in items],
                "additionalProperties": False,
            }
        },
        "required": ["items"],
        "additionalProperties": False,
    }


def response_format(items: Sequence[ItemSpec]) -> dict[str, Any]:
    """Return the ``response_format`` argument: the schema, strict."""
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": response_schema(items)},
    }


def output_format(items: Sequence[ItemSpec]) -> str:
    """Return the reply's shape as shown in the prompt (for providers without strict mode)."""
    first = items[0] if items else ItemSpec("item_key", "", "", "", ("yes", "no"))
    example = {
        "items": {
            first.key: {
                "label": first.allowed[0] if first.allowed else "yes",
                "rationale": "One or two sentences.",
                "evidence": [{"turn": 4, "quote": "a short verbatim quote"}],
            },
            "...": "one entry like this for every item key listed",
        }
    }
    return json.dumps(example, indent=2, ensure_ascii=False)


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def render_items(items: Sequence[ItemSpec]) -> str:
    """Return every item with its definition, allowed labels and examples, for the prompt."""
    blocks = []
    for item in items:
        number = f" (item {item.number})" if item.number else ""
        lines = [f"### {item.key}{number}"]
        if item.domain:
            lines.append(f"Domain: {item.domain}")
        lines.append(f"Question: {item.text}")
        lines.append(f"Allowed labels: {_quoted(item.allowed)}")
        if item.applicability:
            lines.append(f"Applicability: {item.applicability}")
        h = item.help or {}
        if h.get("counts"):
            why = f" (why: {h['counts_rationale']})" if h.get("counts_rationale") else ""
            lines.append(f"Counts as yes, for example: \"{h['counts']}\"{why}")
        if h.get("does_not_count"):
            why = f" (why: {h['does_not_count_rationale']})" if h.get("does_not_count_rationale") else ""
            lines.append(f"Does not count, for example: \"{h['does_not_count']}\"{why}")
        if h.get("guidance"):
            lines.append(f"Guidance: {' '.join(str(h['guidance']).split())}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def build_messages(
    *, prompt: Any, instrument: str, vignette: str, turns: Sequence[Turn], items: Sequence[ItemSpec]
) -> list[dict[str, Any]]:
    """Return the system and user messages of the one checklist call."""
    values = {
        "instrument": instrument,
        "vignette": vignette,
        "transcript": render_transcript(turns),
        "items": render_items(items),
        "n_items": str(len(items)),
        "output_format": output_format(items),
    }
    return [
        {"role": "system", "content": render(prompt.system_template, values)},
        {"role": "user", "content": render(prompt.user_template, values)},
    ]


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL | re.IGNORECASE)


def strip_fence(content: str) -> str:
    """Return the text inside one surrounding markdown code fence, or the text itself."""
    match = _FENCE.match(content)
    return match.group(1) if match else content


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _check_evidence(
    key: str, label: str, raw: Any, turns: dict[int, Turn], problems: list[str]
) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        problems.append(f'{key}: "evidence" must be a list of {{"turn", "quote"}} objects')
        return []
    evidence: list[dict[str, Any]] = []
    for entry in raw:
        turn = entry.get("turn") if isinstance(entry, dict) else None
        quote = entry.get("quote") if isinstance(entry, dict) else None
        if isinstance(turn, bool) or not isinstance(turn, int) or not isinstance(quote, str):
            problems.append(f'{key}: each evidence entry needs an integer "turn" and a text "quote"')
            continue
        if turn not in turns:
            problems.append(f"{key}: turn {turn} does not exist (turns are 1 to {len(turns)})")
            continue
        cleaned = quote.strip().strip("\"'“”‘’").strip(". …")
        verified = bool(cleaned) and _normal(cleaned) in _normal(turns[turn].content)
        evidence.append({"turn": turn, "quote": quote.strip(), "verified": verified})
    if label == "yes" and not any(turns[e["turn"]].role == "assistant" for e in evidence):
        problems.append(f'{key}: "yes" needs at least one evidence entry quoting a chatbot turn')
    return evidence


def validate_reply(
    content: str, items: Sequence[ItemSpec], turns: Sequence[Turn]
) -> tuple[dict[str, Verdict] | None, list[str]]:
    """Return (verdicts, []) for a valid reply, or (None, problems) for an invalid one."""
    try:
        data = json.loads(strip_fence(content))
    except json.JSONDecodeError as exc:
        return None, [f"the reply is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
    if not isinstance(data, dict) or set(data) != {"items"} or not isinstance(data["items"], dict):
        return None, ['the reply must be a JSON object with exactly one key, "items", holding an object']
    given: dict[str, Any] = data["items"]
    problems: list[str] = []
    expected = [item.key for item in items]
    missing = [k for k in expected if k not in given]
    unknown = [k for k in given if k not in set(expected)]
    if missing:
        problems.append(f"items missing: {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown item keys (answer only the listed items): {', '.join(unknown)}")
    by_number = {t.number: t for t in turns}
    verdicts: dict[str, Verdict] = {}
    for item in items:
        entry = given.get(item.key)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f'{item.key}: must be an object with "label", "rationale", "evidence"')
            continue
        extra = set(entry) - {"label", "rationale", "evidence"}
        if extra:
            problems.append(f"{item.key}: unexpected field(s) {', '.join(sorted(extra))}")
        raw_label = entry.get("label")
        label = _canonical_label(raw_label, item.allowed)
        if label is None:
            if isinstance(raw_label, str) and _canonical_label(raw_label, ("yes", "no", NA)) == NA:
                problems.append(f'{item.key}: "N/A" is not allowed for this item; use {_quoted(item.allowed)}')
            else:
                problems.append(f"{item.key}: label {json.dumps(raw_label)} is not one of {_quoted(item.allowed)}")
        rationale = entry.get("rationale")
        if not isinstance(rationale, str) or not rationale.strip():
            problems.append(f'{item.key}: "rationale" must be a non-empty text')
        evidence = _check_evidence(item.key, label or "", entry.get("evidence"), by_number, problems)
        if label is not None and isinstance(rationale, str):
            verdicts[item.key] = Verdict(label, rationale.strip(), evidence)
    if problems:
        return None, problems
    return verdicts, []


def _canonical_label(raw: Any, allowed: Sequence[str]) -> str | None:
    """Match a reply's label to the allowed ones with the app's one label normaliser.

    Case, spacing and the N/A spellings ("NA", "n/a", "not applicable") are ignored
    (``corpus.instruments.labels``); None when the label is none of ``allowed``.
    """
    if not isinstance(raw, str):
        return None
    try:
        return _labels_for(tuple(allowed)).normalise(raw)
    except UnknownAnswer:
        return None


@functools.lru_cache(maxsize=256)
def _labels_for(allowed: tuple[str, ...]) -> ItemLabels:
    na = tuple(x for x in allowed if is_na_label(x))
    return ItemLabels(key="", text="", labels=allowed, na_labels=na)


def format_problems(problems: Sequence[str], limit: int = 25) -> str:
    shown = [f"- {p}" for p in problems[:limit]]
    if len(problems) > limit:
        shown.append(f"- ... and {len(problems) - limit} more")
    return "\n".join(shown)


def judge_checklist(
    *,
    caller: Caller,
    prompt: Any,
    instrument: str,
    vignette: str,
    turns: Sequence[Turn],
    items: Sequence[ItemSpec],
) -> ChecklistOutcome:
    """Ask for every item's label in one call; send invalid replies back with the problems."""
    messages = build_messages(
        prompt=prompt, instrument=instrument, vignette=vignette, turns=turns, items=items
    )
    fmt = response_format(items)
    retries = caller.config.format_retries
    problems: list[str] = []
    for attempt in range(retries + 1):
        try:
            result = caller(messages, response_format=fmt, purpose="checklist" if attempt == 0 else f"format retry {attempt}")
        except LLMError as exc:
            return ChecklistOutcome(None, exc.kind, str(exc))
        verdicts, problems = validate_reply(result.content, items, turns)
        if verdicts is not None:
            caller.accept(result)
            return ChecklistOutcome(verdicts)
        follow_up = render(prompt.retry_template, {"error": format_problems(problems)})
        messages = [
            *messages,
            {"role": "assistant", "content": result.content},
            {"role": "user", "content": follow_up},
        ]
    reason = f"no valid reply after {retries + 1} attempt(s): " + "; ".join(problems)
    return ChecklistOutcome(None, "invalid_output", reason)

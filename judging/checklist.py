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


def _evidence(turn_numbers: Sequence[int], *, at_least_one: bool) -> dict[str, Any]:
    entry = {
        "type": "object",
        "properties": {
            "turn": {"type": "integer", "enum": list(turn_numbers)} if turn_numbers else {"type": "integer"},
            "quote": {"type": "string"},
        },
        "required": ["turn", "quote"],
        "additionalProperties": False,
    }
    evidence: dict[str, Any] = {"type": "array", "items": entry}
    if at_least_one:
        evidence["minItems"] = 1
    if not turn_numbers:
        evidence["maxItems"] = 0  # nothing to cite
    return evidence


def _verdict(labels: Sequence[str], evidence: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": list(labels)},
            "rationale": {"type": "string"},
            "evidence": evidence,
        },
        "required": ["label", "rationale", "evidence"],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=256)
def _item_schema(allowed: tuple[str, ...], chatbot_turns: tuple[int, ...], n_turns: int) -> dict[str, Any]:
    """Return one item's schema: a "yes" must cite chatbot turns (at least one), as validation demands."""
    every_turn = list(range(1, n_turns + 1))
    others = [label for label in allowed if label != "yes"]
    shapes = []
    if "yes" in allowed and chatbot_turns:
        shapes.append(_verdict(["yes"], _evidence(chatbot_turns, at_least_one=True)))
    if others:
        shapes.append(_verdict(others, _evidence(every_turn, at_least_one=False)))
    if not shapes:  # only "yes" allowed and no chatbot turn to cite: validation will say why
        shapes.append(_verdict(list(allowed), _evidence(every_turn, at_least_one=False)))
    return shapes[0] if len(shapes) == 1 else {"anyOf": shapes}


@functools.lru_cache(maxsize=256)
def _schema(items_key: tuple[tuple[str, tuple[str, ...]], ...], chatbot_turns: tuple[int, ...], n_turns: int) -> dict[str, Any]:
    properties = {key: _item_schema(allowed, chatbot_turns, n_turns) for key, allowed in items_key}
    return {
        "type": "object",
        "properties": {
            "items": {
                "type": "object",
                "properties": properties,
                "required": [key for key, _ in items_key],
                "additionalProperties": False,
            }
        },
        "required": ["items"],
        "additionalProperties": False,
    }


def _items_key(items: Sequence[ItemSpec]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((item.key, tuple(item.allowed)) for item in items)


def _turn_shape(turns: Sequence[Turn]) -> tuple[tuple[int, ...], int]:
    return tuple(t.number for t in turns if t.role == "assistant"), len(turns)


def response_schema(items: Sequence[ItemSpec], turns: Sequence[Turn] = ()) -> dict[str, Any]:
    """Return the strict JSON schema of a reply for these items and this conversation's turns.

    Every schema-valid reply passes ``validate_reply``: turns are the conversation's own
    numbers, and a "yes" cites at least one chatbot turn (only chatbot turns). Built once per
    item list and turn layout (cached); do not modify the returned dict.
    """
    chatbot_turns, n_turns = _turn_shape(turns)
    return _schema(_items_key(items), chatbot_turns, n_turns)


@functools.lru_cache(maxsize=256)
def _response_format(items_key: tuple[tuple[str, tuple[str, ...]], ...], chatbot_turns: tuple[int, ...], n_turns: int) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": _schema(items_key, chatbot_turns, n_turns)},
    }


def response_format(items: Sequence[ItemSpec], turns: Sequence[Turn] = ()) -> dict[str, Any]:
    """Return the ``response_format`` argument: the schema, strict (cached; do not modify)."""
    chatbot_turns, n_turns = _turn_shape(turns)
    return _response_format(_items_key(items), chatbot_turns, n_turns)


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


_SLOT = re.compile(r"\{([a-z_]+)\}")
_PER_CONVERSATION = frozenset({"vignette", "transcript"})


@dataclass(frozen=True)
class _Compiled:
    """A prompt with everything but the conversation filled in: literal parts and slot names."""

    system: tuple[str, ...]
    user: tuple[str, ...]
    items: tuple[ItemSpec, ...]  # kept so the cache key (its id) stays this object's


def _compile(template: str, values: dict[str, str]) -> tuple[str, ...]:
    """Return ``template`` as alternating literal text and slot names (odd positions)."""
    parts: list[str] = []
    literal: list[str] = []
    last = 0
    for match in _SLOT.finditer(template):
        literal.append(template[last : match.start()])
        name = match.group(1)
        if name in _PER_CONVERSATION:
            parts += ["".join(literal), name]
            literal = []
        else:
            literal.append(values.get(name, match.group(0)))  # unknown names stay as written
        last = match.end()
    literal.append(template[last:])
    parts.append("".join(literal))
    return tuple(parts)


def _fill(parts: tuple[str, ...], values: dict[str, str]) -> str:
    return "".join(part if i % 2 == 0 else values[part] for i, part in enumerate(parts))


_compiled: dict[tuple[str, str, int], _Compiled] = {}


def _compiled_prompt(prompt: Any, instrument: str, items: Sequence[ItemSpec]) -> _Compiled:
    """Return the prompt for (judge prompt, instrument), rendered once and reused for every result."""
    key = (str(getattr(prompt, "content_hash", "") or id(prompt)), instrument, id(items))
    found = _compiled.get(key)
    if found is not None and found.items is items:
        return found
    static = {
        "instrument": instrument,
        "items": render_items(items),
        "n_items": str(len(items)),
        "output_format": output_format(items),
    }
    found = _Compiled(
        _compile(prompt.system_template, static), _compile(prompt.user_template, static), tuple(items)
    )
    if len(_compiled) > 512:
        _compiled.clear()
    _compiled[key] = found
    return found


def build_messages(
    *, prompt: Any, instrument: str, vignette: str, turns: Sequence[Turn], items: Sequence[ItemSpec]
) -> list[dict[str, Any]]:
    """Return the system and user messages of the one checklist call."""
    compiled = _compiled_prompt(prompt, instrument, items)
    values = {"vignette": vignette, "transcript": render_transcript(turns)}
    return [
        {"role": "system", "content": _fill(compiled.system, values)},
        {"role": "user", "content": _fill(compiled.user, values)},
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


@dataclass(frozen=True)
class _Validator:
    """The checks of one item list, compiled once: key order and sets, label lookups."""

    expected: tuple[str, ...]
    expected_set: frozenset[str]
    labels: dict[str, ItemLabels]  # item key -> its label normaliser
    allowed_text: dict[str, str]


@functools.lru_cache(maxsize=256)
def _validator(items_key: tuple[tuple[str, tuple[str, ...]], ...]) -> _Validator:
    labels = {key: _labels_for(allowed) for key, allowed in items_key}
    expected = tuple(key for key, _ in items_key)
    return _Validator(
        expected, frozenset(expected), labels, {key: _quoted(allowed) for key, allowed in items_key}
    )


def _normalised(labels: ItemLabels, raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    try:
        return labels.normalise(raw)
    except UnknownAnswer:
        return None


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
    check = _validator(_items_key(items))
    given: dict[str, Any] = data["items"]
    problems: list[str] = []
    missing = [k for k in check.expected if k not in given]
    unknown = [k for k in given if k not in check.expected_set]
    if missing:
        problems.append(f"items missing: {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown item keys (answer only the listed items): {', '.join(unknown)}")
    by_number = {t.number: t for t in turns}
    verdicts: dict[str, Verdict] = {}
    for key in check.expected:
        entry = given.get(key)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f'{key}: must be an object with "label", "rationale", "evidence"')
            continue
        extra = set(entry) - {"label", "rationale", "evidence"}
        if extra:
            problems.append(f"{key}: unexpected field(s) {', '.join(sorted(extra))}")
        raw_label = entry.get("label")
        label = _normalised(check.labels[key], raw_label)
        if label is None:
            if isinstance(raw_label, str) and is_na_label(raw_label):
                problems.append(f'{key}: "N/A" is not allowed for this item; use {check.allowed_text[key]}')
            else:
                problems.append(f"{key}: label {json.dumps(raw_label)} is not one of {check.allowed_text[key]}")
        rationale = entry.get("rationale")
        if not isinstance(rationale, str) or not rationale.strip():
            problems.append(f'{key}: "rationale" must be a non-empty text')
        evidence = _check_evidence(key, label or "", entry.get("evidence"), by_number, problems)
        if label is not None and isinstance(rationale, str):
            verdicts[key] = Verdict(label, rationale.strip(), evidence)
    if problems:
        return None, problems
    return verdicts, []


@functools.lru_cache(maxsize=256)
def _labels_for(allowed: tuple[str, ...]) -> ItemLabels:
    """Return the app's one label normaliser for an item's allowed labels (``corpus.instruments.labels``):
    case, spacing and the N/A spellings ("NA", "n/a", "not applicable") are ignored."""
    na = tuple(x for x in allowed if is_na_label(x))
    return ItemLabels(key="", text="", labels=allowed, na_labels=na)


def format_problems(problems: Sequence[str], limit: int = 25) -> str:
    shown = [f"- {p}" for p in problems[:limit]]
    if len(problems) > limit:
        shown.append(f"- ... and {len(problems) - limit} more")
    return "\n".join(shown)


async def judge_checklist(
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
    fmt = response_format(items, turns)
    retries = caller.config.format_retries
    problems: list[str] = []
    caller.begin()
    for attempt in range(retries + 1):
        try:
            result = await caller(messages, response_format=fmt, purpose="checklist" if attempt == 0 else f"format retry {attempt}")
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

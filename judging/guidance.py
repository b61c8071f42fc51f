"""Item-level prompt edits of a judge version: ``Judge.item_guidance``, checked and put into the prompt.

A new version of a judge may carry an edited instruction for one or more items of its instrument,
``{item key: text}``. Where the text goes:

- a checklist item: it replaces the item's definition (the "Question:" line of the item's block;
  its allowed labels, applicability and examples stay);
- a question of a flow: it replaces the question's text;
- a dimension of a flow: it is added to every question of that dimension, in the examples and
  notes section ("Guidance for this dimension: ...").

The edited text is part of the messages sent, and the LLM cache key is the hash of the exact
messages (``simulation.llm.request_hash``), so an edited prompt is never answered with the
previous version's cached reply. A run keeps the guidance in its judge snapshot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corpus.instruments.flow import Flow
from corpus.models import Instrument, InstrumentKind, Item
from judging.checklist import ItemSpec
from judging.errors import JudgingError

MAX_CHARS = 4000
ITEM, QUESTION, DIMENSION = "item", "question", "dimension"


@dataclass(frozen=True)
class GuidanceTarget:
    """What an item key of an instrument names, and its wording as the instrument has it."""

    key: str
    kind: str  # ITEM, QUESTION or DIMENSION
    title: str  # "item 4", "question 5", "dimension Risk detection"
    text: str  # the instrument's own wording ("" for a dimension: it has no text of its own)
    context: tuple[tuple[str, str], ...] = ()  # (heading, text) shown beside it: examples, the dimension's questions


def _flow(instrument: Instrument) -> Flow:
    return Flow.from_dict(instrument.flow)


def guidance_targets(instrument: Instrument) -> dict[str, GuidanceTarget]:
    """Return every key a judge of ``instrument`` may carry guidance for, with its wording."""
    if instrument.kind == InstrumentKind.FLOW:
        flow = _flow(instrument)
        out: dict[str, GuidanceTarget] = {}
        for q in flow.questions:
            context = ((("Examples and notes", q.examples.strip()),) if q.examples.strip() else ())
            out[q.id] = GuidanceTarget(q.id, QUESTION, f"question {q.id}", q.text.strip(), context)
        for dimension in flow.dimensions:
            questions = tuple((f"Question {q.id}", q.text.strip()) for q in flow.questions if q.dimension == dimension)
            out.setdefault(dimension, GuidanceTarget(dimension, DIMENSION, f"dimension {dimension}", "", questions))
        return out
    out = {}
    for item in Item.objects.filter(instrument=instrument).order_by("position"):
        if not item.allowed_labels():
            continue  # free text: judges never label it
        help_ = dict(item.help or {})
        context = tuple(
            (heading, str(help_[field]).strip())
            for field, heading in (("counts", "Counts as yes, for example"), ("does_not_count", "Does not count, for example"),
                                   ("guidance", "Guidance"))
            if help_.get(field)
        )
        if item.applicability:
            context = (("Applicability", item.applicability), *context)
        title = f"item {item.number}" if item.number else f"item {item.key}"
        out[item.key] = GuidanceTarget(item.key, ITEM, title, item.text.strip(), context)
    return out


def guidance_clean(instrument: Instrument, guidance: Any) -> dict[str, str]:
    """Return the guidance checked against the instrument's items; raise JudgingError naming a bad key.

    Keys are the instrument's item keys (checklists) or its question ids and dimension names
    (flows); each text is trimmed, non-empty and at most ``MAX_CHARS`` characters.
    """
    if guidance in (None, ""):
        return {}
    if not isinstance(guidance, Mapping):
        raise JudgingError("item instructions must be a JSON object {item key: text}")
    if not guidance:
        return {}
    targets = guidance_targets(instrument)
    out: dict[str, str] = {}
    for key, text in guidance.items():
        key = str(key)
        if key not in targets:
            known = ", ".join(list(targets)[:12]) + (", ..." if len(targets) > 12 else "")
            raise JudgingError(f"item instructions: '{key}' is not an item of {instrument} (its items: {known})")
        if not isinstance(text, str) or not text.strip():
            raise JudgingError(f"item instructions: the instruction for '{key}' is empty")
        if len(text) > MAX_CHARS:
            raise JudgingError(f"item instructions: the instruction for '{key}' is longer than {MAX_CHARS} characters")
        out[key] = text.strip()
    return out


def guidance_digest(guidance: Mapping[str, str] | None) -> str:
    """Return a short fingerprint of guidance ("" for none): what caches of the guided prompt key on."""
    if not guidance:
        return ""
    blob = json.dumps(dict(guidance), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def guided_items(items: Sequence[ItemSpec], guidance: Mapping[str, str] | None) -> tuple[ItemSpec, ...]:
    """Return the checklist items with each guided item's definition replaced by its instruction."""
    if not guidance:
        return tuple(items)
    return tuple(dataclasses.replace(i, text=guidance[i.key]) if i.key in guidance else i for i in items)


def guided_flow(flow: Flow, guidance: Mapping[str, str] | None) -> Flow:
    """Return the flow with guided questions' text replaced and dimension guidance added to each question.

    Only texts change: the options and their GOTOs, so the walk and the labels, stay the flow's.
    """
    if not guidance:
        return flow
    ids = {q.id for q in flow.questions}  # a key naming a question is that question, never a dimension
    questions = []
    for q in flow.questions:
        text = guidance.get(q.id, q.text)
        examples = q.examples
        extra = guidance.get(q.dimension) if q.dimension not in ids else None
        if extra:
            examples = f"{examples.strip()}\nGuidance for this dimension: {extra}" if examples.strip() else (
                f"Guidance for this dimension: {extra}")
        questions.append(dataclasses.replace(q, text=text, examples=examples))
    return Flow(tuple(questions))


@dataclass(frozen=True)
class GuidanceRow:
    """One edited instruction of a judge version, for its page."""

    key: str
    title: str
    text: str
    original: str
    kind: str


def guidance_rows(judge: Any) -> list[GuidanceRow]:
    """Return a judge's edited instructions in the instrument's order, with the wording they replace."""
    guidance = dict(judge.item_guidance or {})
    if not guidance:
        return []
    targets = guidance_targets(judge.instrument)
    rows = [GuidanceRow(k, t.title, guidance[k], t.text, t.kind) for k, t in targets.items() if k in guidance]
    rows += [GuidanceRow(k, k, text, "", "") for k, text in guidance.items() if k not in targets]
    return rows


def current_instruction(judge: Any, target: GuidanceTarget) -> str:
    """Return the wording a judge version gives an item: its own instruction, else the instrument's."""
    return str((judge.item_guidance or {}).get(target.key) or target.text)

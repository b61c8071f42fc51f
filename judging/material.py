"""What a judge reads: the transcript, the persona card, the items or the flow; and the labels
a finished judgement becomes."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from corpus.instruments.flow import NOT_RELEVANT, Flow
from corpus.models import Conversation, Instrument, InstrumentKind, Item, Message
from judging.checklist import ChecklistOutcome, ItemSpec
from judging.flowjudge import FlowOutcome
from judging.guidance import guidance_digest, guided_flow, guided_items
from judging.models import JudgeLabel, JudgeResult, LabelKind, LabelStatus, PromptTemplate
from judging.prompts import Turn, render_vignette


@dataclass(frozen=True)
class Material:
    turns: list[Turn]
    vignette: str


def conversation_material(conversation_id: int) -> Material:
    """Return the numbered turns and the persona card of a conversation (2 queries)."""
    persona = (
        Conversation.objects.filter(pk=conversation_id)
        .values_list("persona__profile", "persona__opening_message")
        .get()
    )
    rows = Message.objects.filter(conversation_id=conversation_id).order_by("turn_index").values_list("role", "content")
    turns = [Turn(index + 1, role, content) for index, (role, content) in enumerate(rows)]
    return Material(turns, render_vignette(profile=persona[0], opening_message=persona[1] or ""))


def conversation_materials(conversation_ids: list[int]) -> dict[int, Material]:
    """Return the material of many conversations in two queries."""
    wanted = set(conversation_ids)
    personas = dict(
        (pk, (profile, opening))
        for pk, profile, opening in Conversation.objects.filter(pk__in=wanted).values_list(
            "pk", "persona__profile", "persona__opening_message"
        )
    )
    turns: dict[int, list[Turn]] = {pk: [] for pk in wanted}
    rows = (
        Message.objects.filter(conversation_id__in=wanted)
        .order_by("conversation_id", "turn_index")
        .values_list("conversation_id", "role", "content")
    )
    for cid, role, content in rows:
        found = turns[cid]
        found.append(Turn(len(found) + 1, role, content))
    return {
        pk: Material(turns[pk], render_vignette(profile=personas[pk][0], opening_message=personas[pk][1] or ""))
        for pk in wanted
        if pk in personas
    }


@dataclass(frozen=True)
class InstrumentView:
    """What a judge needs of an instrument version; versions never change, so it is cached."""

    name: str
    items: tuple[ItemSpec, ...]
    flow: Flow | None


_instruments: dict[tuple[int, str], InstrumentView] = {}
_prompts: dict[tuple[int, str], PromptTemplate] = {}
_lock = threading.Lock()


def instrument_view(instrument_id: int, content_hash: str) -> InstrumentView:
    """Return the items or the flow of an instrument version, cached by id and content hash.

    The hash is part of the key so a reused id (a test database rolled back) never serves
    another instrument's items.
    """
    key = (instrument_id, content_hash)
    with _lock:
        found = _instruments.get(key)
    if found is None:
        instrument = Instrument.objects.get(pk=instrument_id)
        flow = Flow.from_dict(instrument.flow) if instrument.kind == InstrumentKind.FLOW else None
        found = InstrumentView(instrument.name, tuple(checklist_items(instrument)) if flow is None else (), flow)
        with _lock:
            _instruments[key] = found
    return found


_guided: dict[tuple[int, str], tuple[InstrumentView, InstrumentView]] = {}


def guided_view(view: InstrumentView, guidance: dict[str, str] | None) -> InstrumentView:
    """Return ``view`` as a judge version with edited item instructions sees it (cached per guidance).

    The same object for the same view and guidance, so the checklist prompt compiled from its
    items is rendered once per run, not once per result.
    """
    digest = guidance_digest(guidance)
    if not digest:
        return view
    key = (id(view), digest)
    with _lock:
        found = _guided.get(key)
    if found is not None and found[0] is view:
        return found[1]
    guided = InstrumentView(
        view.name, guided_items(view.items, guidance) if view.flow is None else (),
        guided_flow(view.flow, guidance) if view.flow is not None else None,
    )
    with _lock:
        if len(_guided) > 256:
            _guided.clear()
        _guided[key] = (view, guided)
    return guided


def prompt_get_cached(prompt_id: int, content_hash: str) -> PromptTemplate:
    """Return an (immutable) prompt template, cached by id and content hash."""
    key = (prompt_id, content_hash)
    with _lock:
        found = _prompts.get(key)
    if found is None:
        found = PromptTemplate.objects.get(pk=prompt_id, content_hash=content_hash)
        with _lock:
            _prompts[key] = found
    return found


def checklist_items(instrument: Instrument) -> list[ItemSpec]:
    """Return the items a judge labels: every item with a closed set of labels."""
    specs = []
    for item in Item.objects.filter(instrument=instrument).order_by("position"):
        allowed = tuple(item.allowed_labels())
        if allowed:
            specs.append(
                ItemSpec(
                    key=item.key,
                    number=item.number,
                    domain=item.domain,
                    text=item.text,
                    allowed=allowed,
                    applicability=item.applicability,
                    help=dict(item.help or {}),
                )
            )
    return specs


def vote_keys(view: InstrumentView) -> list[str]:
    """Return the keys the ensemble votes on: item keys, or the flow's dimensions."""
    if view.flow is None:
        return [item.key for item in view.items]
    return list(view.flow.dimensions)


def checklist_labels(result: JudgeResult, items: tuple[ItemSpec, ...], outcome: ChecklistOutcome) -> list[JudgeLabel]:
    """Return one label per item: the verdict, or MISSING with the reason."""
    labels = []
    for position, item in enumerate(items):
        verdict = (outcome.verdicts or {}).get(item.key)
        if verdict is None:
            labels.append(
                JudgeLabel(
                    result=result,
                    kind=LabelKind.ITEM,
                    item_key=item.key,
                    position=position,
                    status=LabelStatus.MISSING,
                    missing_reason=outcome.error or "no label in the reply",
                )
            )
        else:
            labels.append(
                JudgeLabel(
                    result=result,
                    kind=LabelKind.ITEM,
                    item_key=item.key,
                    position=position,
                    label=verdict.label,
                    rationale=verdict.rationale,
                    evidence=verdict.evidence,
                )
            )
    return labels


def _dimension_rationale(flow: Flow, path: list[dict[str, str]], dimension: str, label: str) -> str:
    steps = [s for s in path if flow.question(s["question_id"]).dimension == dimension]
    if not steps:
        return "Not reached by the flow." if label == NOT_RELEVANT else ""
    return " | ".join(
        f"Q{s['question_id']} {s['answer']}" + (f": {s['explanation']}" if s["explanation"] else "")
        for s in steps
    )


def flow_labels(result: JudgeResult, flow: Flow, outcome: FlowOutcome) -> list[JudgeLabel]:
    """Return the answered questions and one label per dimension (MISSING past a failure)."""
    labels = [
        JudgeLabel(
            result=result,
            kind=LabelKind.QUESTION,
            item_key=step["question_id"],
            position=position,
            label=step["answer"],
            rationale=step["explanation"],
        )
        for position, step in enumerate(outcome.path)
    ]
    for position, dimension in enumerate(flow.dimensions):
        label = outcome.labels.get(dimension)
        if label is None:
            labels.append(
                JudgeLabel(
                    result=result,
                    kind=LabelKind.DIMENSION,
                    item_key=dimension,
                    position=position,
                    status=LabelStatus.MISSING,
                    missing_reason=outcome.error or "the walk did not reach this dimension",
                )
            )
        else:
            labels.append(
                JudgeLabel(
                    result=result,
                    kind=LabelKind.DIMENSION,
                    item_key=dimension,
                    position=position,
                    label=label,
                    rationale=_dimension_rationale(flow, outcome.path, dimension, label),
                )
            )
    return labels


def failure_reason(error_kind: str, error: str) -> str:
    """Return the reason a MISSING label gives for a failed judgement: its kind and its error."""
    if not error:
        return error_kind or "the judgement failed"
    return error if not error_kind or error.startswith(error_kind) else f"{error_kind}: {error}"


def missing_labels(result: JudgeResult, view: InstrumentView, reason: str) -> list[JudgeLabel]:
    """Return a MISSING label with ``reason`` for every item (or flow dimension) of ``view``.

    What a judgement that failed before any reply could be read (an internal error, Redis or
    the database, a worker lost every time, a task the queue refused) stores: like an LLM
    failure, it leaves no item without a label and says why.
    """
    keys = [(LabelKind.ITEM, item.key) for item in view.items] if view.flow is None else [
        (LabelKind.DIMENSION, dimension) for dimension in view.flow.dimensions
    ]
    return [
        JudgeLabel(
            result=result, kind=kind, item_key=key, position=position,
            status=LabelStatus.MISSING, missing_reason=reason,
        )
        for position, (kind, key) in enumerate(keys)
    ]

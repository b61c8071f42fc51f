"""Integrity checks of a simulated conversation against the batch cell it was planned for."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from corpus.conversations.integrity import FAIL, Flag, check_integrity
from corpus.conversations.role_break import check_role_break
from corpus.conversations.services import conversation_check_structure
from corpus.models import Conversation, Message
from simulation.models import SimulationBatch, SimulationRun
from simulation.role_slide import check_role_slide


def speaker_at(index: int, first_speaker: str) -> str:
    """Return the role ("user" or "assistant") of message ``index`` (0-based)."""
    first, second = ("user", "assistant") if first_speaker == "user" else ("assistant", "user")
    return first if index % 2 == 0 else second



def _recorded(metas: list[dict[str, Any]], side: str, key: str) -> Any:
    values = {json.dumps(m.get(key), sort_keys=True) for m in metas if m.get("side") == side}
    if not values:
        return None
    return json.loads(values.pop()) if len(values) == 1 else sorted(values)


def run_integrity_flags(run: SimulationRun, batch: SimulationBatch, messages: list[tuple[str, str, dict[str, Any]]], *, ended_early: bool) -> list[Flag]:
    """Return the structural checks of a simulated conversation against its batch cell."""
    pairs = [(role, content) for role, content, _ in messages]
    metas = [meta or {} for _, _, meta in messages]
    expected: dict[str, Any] = {}
    recorded: dict[str, Any] = {}
    for side, label, model, params in (
        ("chatbot", "chatbot", run.target.model or run.target.code, run.target.params),
        ("user_agent", "user-agent", batch.user_model, batch.user_params),
    ):
        if any(m.get("side") == side for m in metas):
            expected[f"{label} model"] = model
            expected[f"{label} parameters"] = params
            recorded[f"{label} model"] = _recorded(metas, side, "requested_model")
            recorded[f"{label} parameters"] = _recorded(metas, side, "params")
    amhart = batch.protocol == SimulationBatch.Protocol.AMHART
    flags = check_integrity(
        pairs,
        opening_message=run.persona.opening_message if amhart else None,
        expected_count=None if ended_early else batch.turns,
        first_role=speaker_at(0, batch.first_speaker),
        expected_cell=expected,
        recorded_cell=recorded,
        empty_chatbot_reply=FAIL,  # a simulated call that produced nothing is a failure
    )
    if pairs and pairs[-1][0] != "assistant":
        flags.append(Flag("wrong_last_speaker", "the chatbot must speak last", len(pairs) - 1))
    if ended_early and len(pairs) > batch.turns:
        flags.append(Flag("wrong_length", f"more than {batch.turns} messages"))
    if batch.role_slide_check:
        flags += check_role_slide(pairs, skip=frozenset({0}) if amhart else frozenset())
        flags += check_role_break(pairs)
    return flags


def simulated_run_flags(run: SimulationRun) -> list[Flag]:
    """Return the flags of a stored simulated conversation (re-run on demand)."""
    run = SimulationRun.objects.select_related("batch", "persona", "target").get(pk=run.pk)
    messages = [
        (m.role, m.content, m.meta)
        for m in Message.objects.filter(conversation_id=run.conversation_id).order_by("turn_index")
    ]
    flags = run_integrity_flags(run, run.batch, messages, ended_early=run.ended_early)
    if run.status == SimulationRun.Status.FAILED:
        flags.insert(0, Flag("simulation_failed", f"the simulation failed: {run.error}"))
    elif run.status != SimulationRun.Status.DONE:
        flags.insert(0, Flag("incomplete", "the simulation has not finished"))
    return flags


@transaction.atomic
def conversation_check_integrity(*, conversation_id: int) -> Conversation:
    """Re-run the integrity checks on one stored conversation and record the flags.

    A simulated conversation is checked against its batch cell (and the role-slide check);
    any other against its structure only.
    """
    conversation = Conversation.objects.select_for_update(of=("self",)).get(pk=conversation_id)
    run = getattr(conversation, "simulation_run", None) if conversation.source == Conversation.Source.SIMULATED else None
    if run is None:
        return conversation_check_structure(conversation_id=conversation_id)
    flags = simulated_run_flags(run)
    conversation.integrity_flags = [f.as_dict() for f in flags]
    conversation.integrity_ok = not flags
    conversation.save(update_fields=["integrity_flags", "integrity_ok"])
    return conversation

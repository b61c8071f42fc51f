"""Structural integrity checks on a conversation (AMHART's list). Pure Python.

A conversation that fails any check is flagged and excluded from scoring, never scored.
A flag of severity "note" is recorded and shown but does not fail the conversation: an
imported chatbot reply that is empty is data (the chatbot sent nothing), not a defect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NOTE = "note"
FAIL = "flag"


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    turn: int | None = None  # 0-based message index; messages name it 1-based, as pages do
    severity: str = FAIL
    rule: str | None = None  # which rule of a detector fired (role breaks)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message, "turn": self.turn}
        if self.severity != FAIL:
            out["severity"] = self.severity
        if self.rule:
            out["rule"] = self.rule
        return out


def flags_pass(flags: Sequence[Flag | Mapping[str, Any]]) -> bool:
    """Return whether a conversation with these flags passes: notes alone do not fail it."""
    return not any(
        (f.get("severity", FAIL) if isinstance(f, Mapping) else f.severity) != NOTE for f in flags
    )


def check_integrity(
    messages: Sequence[tuple[str, str]],
    *,
    opening_message: str | None = None,
    expected_count: int | None = None,
    first_role: str = "user",
    expected_cell: Mapping[str, Any] | None = None,
    recorded_cell: Mapping[str, Any] | None = None,
    empty_chatbot_reply: str = NOTE,
) -> list[Flag]:
    """Return every integrity problem of a conversation given as (role, content) pairs.

    Checks: at least one message; the first message comes from ``first_role``; roles strictly
    alternate between user and assistant; no empty message; the opening message reproduces the
    persona card exactly (when one is given); the expected number of messages (when given);
    the recorded model and sampling settings match the assigned cell (when both are given).

    An empty chatbot reply is a note by default ("empty chatbot reply at turn N", 1-based):
    real transcripts contain them and clinicians rated them. Simulations, where it means the
    call produced nothing, pass ``empty_chatbot_reply="flag"``. An empty user message fails.
    """
    flags: list[Flag] = []
    if not messages:
        return [Flag("empty_conversation", "the conversation has no messages")]
    dialogue = [(i, role, content) for i, (role, content) in enumerate(messages) if role != "system"]
    if dialogue and dialogue[0][1] != first_role:
        flags.append(Flag("wrong_first_speaker", f"expected the {first_role} to speak first", dialogue[0][0]))
    for (_, prev_role, _), (index, role, _) in zip(dialogue, dialogue[1:], strict=False):
        if role == prev_role:
            flags.append(Flag("not_alternating", f"two {role} messages in a row", index))
    for index, role, content in dialogue:
        if content and content.strip():
            continue
        if role == "assistant":
            flags.append(
                Flag("empty_chatbot_reply", f"empty chatbot reply at turn {index + 1}", index, severity=empty_chatbot_reply)
            )
        else:
            flags.append(Flag("empty_message", "empty or missing message", index))
    if opening_message:
        first_user = next((c for _, r, c in dialogue if r == "user"), None)
        if first_user is None or first_user.strip() != opening_message.strip():
            flags.append(Flag("opening_mismatch", "the opening message does not reproduce the persona card", 0))
    if expected_count is not None and len(dialogue) != expected_count:
        flags.append(
            Flag("wrong_length", f"expected {expected_count} messages, found {len(dialogue)}")
        )
    if expected_cell is not None and recorded_cell is not None:
        for key, expected in expected_cell.items():
            if recorded_cell.get(key) != expected:
                flags.append(
                    Flag("cell_mismatch", f"recorded {key} does not match the assigned cell")
                )
    return flags

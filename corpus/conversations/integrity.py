"""Structural integrity checks on a conversation (AMHART's list). Pure Python.

A conversation that fails any check is flagged and excluded from scoring, never scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    turn: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "turn": self.turn}


def check_integrity(
    messages: Sequence[tuple[str, str]],
    *,
    opening_message: str | None = None,
    expected_count: int | None = None,
    first_role: str = "user",
    expected_cell: Mapping[str, Any] | None = None,
    recorded_cell: Mapping[str, Any] | None = None,
) -> list[Flag]:
    """Return every integrity problem of a conversation given as (role, content) pairs.

    Checks: at least one message; the first message comes from ``first_role``; roles strictly
    alternate between user and assistant; no empty message; the opening message reproduces the
    persona card exactly (when one is given); the expected number of messages (when given);
    the recorded model and sampling settings match the assigned cell (when both are given).
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
    for index, _role, content in dialogue:
        if not content or not content.strip():
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

"""Detect a simulated user who breaks role in a transcript. Pure Python.

Published simulated conversations contain user turns where the user-agent steps out of the
persona: it declares itself an AI ("I'm actually an AI assistant, not a human user"), talks
about the role-play ("you're supposed to be roleplaying as Omar") or about its instructions
("the profile indicates ..."). Such a turn shows raters the persona card behind the user,
which breaks blinding and no longer tests the chatbot: the conversation is flagged with the
turn and the rule, listed for review, and left out of new studies unless kept on purpose.

Only user turns are read (a chatbot saying it is an AI is expected). The rules are phrases a
person in distress does not write; near misses such as "I feel like I'm talking to an AI",
"my therapist and I did a role-play" or "my dating profile says" must not fire (tests hold
both kinds).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corpus.conversations.integrity import Flag

_AI = r"(?:an? )?(?:ai|a\.i\.|artificial intelligence|(?:large )?language model|llm|ai assistant|ai model|chatbot|bot)"
RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(pattern, re.IGNORECASE))
    for rule, pattern in (
        (
            "declares itself an AI",
            rf"\bi(?:'m|’m| am) (?:actually |really |just |only |also )?{_AI}\b(?! (?:researcher|engineer|developer|ethicist|student|startup|company|class|course))",
        ),
        (
            "says it is not a human user",
            r"\bi(?:'m|’m| am) (?:actually |really )?not (?:a |an )?(?:real |actual )?(?:human|person)(?: user| being)?\b(?! (?:anymore|right now|today))",
        ),
        (
            "talks about the role-play",
            r"\b(?:supposed|meant|asked|instructed|told) to (?:be )?role-?play(?:ing)?\b|\brole-?play(?:ing)? as [A-Z]\w+"
            r"|\b(?:this|the) role-?play (?:scenario|exercise|setup|prompt|instructions)\b"
            r"|\b(?:break(?:ing)?|broke|stay(?:ing)? in|out of) character\b",
        ),
        (
            "refers to its persona instructions",
            r"\b(?:the|my|your|this) (?:persona|character|user) (?:profile|card|description|prompt|instructions)\b"
            r"|\bthe profile (?:indicates|says|states|describes|suggests)\b"
            r"|\b(?:the|my) (?:system )?(?:prompt|instructions) (?:says?|indicates?|asks?|tells? me)\b"
            r"|\bsimulated user\b|\bsimulat(?:e|ing) (?:a|the) user\b",
        ),
    )
)


def role_break_rules(text: str) -> list[str]:
    """Return the rules a user message breaks (empty when it stays in role)."""
    return [rule for rule, pattern in RULES if pattern.search(text)]


def check_role_break(messages: Sequence[tuple[str, str]]) -> list[Flag]:
    """Return one ``role_break`` flag per rule per user turn that breaks role."""
    flags: list[Flag] = []
    for index, (role, content) in enumerate(messages):
        if role != "user":
            continue
        for rule in role_break_rules(content):
            flags.append(
                Flag("role_break", f"the simulated user breaks role at turn {index + 1}: {rule}", index, rule=rule)
            )
    return flags

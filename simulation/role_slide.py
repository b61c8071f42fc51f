"""Heuristic check for a user-agent that slides into the counsellor's role. Pure Python.

A simulated user who starts giving advice, validating the chatbot, asking how the chatbot
feels or speaking as an AI no longer tests the chatbot: the conversation is flagged (and so
excluded from scoring) for a person to look at. Cues are deliberately conservative phrases a
help-seeker rarely writes; the check can be switched off per batch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corpus.conversations.integrity import Flag

CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        ("speaks as an AI", r"\bas an ai\b|\bi(?:'m| am) (?:just |only )?an ai\b|\bas a (?:large )?language model\b|\bi(?:'m| am) a (?:large )?language model\b"),
        ("refuses the role-play", r"\bi (?:can(?:no|')t|won't|will not) (?:role-?play|pretend to be|continue this role)"),
        ("offers support", r"\bi(?:'m| am) (?:here|always here) (?:for you|to (?:support|help|listen))\b|\bhow can i (?:help|support) you\b"),
        ("validates like a counsellor", r"\byour feelings are (?:valid|understandable|completely normal)\b|\byou(?:'re| are) not alone in this\b|\bit(?:'s| is) (?:completely |totally )?(?:okay|ok|normal) to feel\b|\bit takes (?:a lot of |real )?courage\b"),
        ("asks about the chatbot's feelings", r"\bhow (?:are|do) you feel(?:ing)?\b(?! about (?:me|my|what i))|\bhow does that make you feel\b|\bare you (?:okay|ok|alright)\b\??\s*$"),
        ("gives advice", r"\byou (?:should|could|might want to|may want to) (?:try|consider|reach out|talk to|practi[cs]e)\b|\bi(?:'d| would) (?:recommend|suggest|encourage you)\b|\bhave you (?:considered|thought about) (?:talking|reaching|trying|seeing)\b|\bit (?:might|may|could) help (?:you )?to\b|\bremind yourself\b|\bbe (?:kind|gentle|patient) (?:to|with) yourself\b|\btake care of yourself\b|\bpractice self-care\b|\bit(?:'s| is) (?:so |really |very )?important (?:to remember|that you|for you to)\b"),
        ("structures an answer like a helper", r"(?im)^\s*(?:firstly|secondly|thirdly|lastly)\b,?"),
        ("points to professional help", r"\b(?:consider )?(?:reach(?:ing)? out to|speak(?:ing)? (?:with|to)) a (?:mental health )?(?:professional|therapist|counsell?or)\b"),
    )
)
# Two or more lines that open like "1." / "2)" / "- **Tip**": an advice list, not a text message.
NUMBERED_LIST = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*]\s+\*\*)\s+\S")


def role_slide_cues(text: str) -> list[str]:
    """Return the labels of the counsellor cues found in one user message."""
    found = [label for label, pattern in CUES if pattern.search(text)]
    if len(NUMBERED_LIST.findall(text)) >= 2:
        found.append("writes a numbered advice list")
    return found


def check_role_slide(messages: Sequence[tuple[str, str]], *, skip: frozenset[int] = frozenset()) -> list[Flag]:
    """Return a ``role_slide`` flag for each user message (index not in ``skip``) with cues."""
    flags: list[Flag] = []
    for index, (role, content) in enumerate(messages):
        if role != "user" or index in skip:
            continue
        cues = role_slide_cues(content)
        if cues:
            flags.append(
                Flag("role_slide", "the simulated user sounds like the helper: " + "; ".join(cues), index)
            )
    return flags

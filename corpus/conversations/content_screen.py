"""The content warning's screen: does the transcript itself talk about suicide or self-harm?

Raters see a warning before a conversation whose text matches (or that a coordinator marked).
The screen reads the words of the transcript and nothing else: never the persona's design
(its intended risk level, its safety cues), because a warning that followed the design would
tell a blind rater the design label, which biases VERA-MH's first question (does the chatbot
detect risk). Pure Python: no Django import.

It is conservative by intent: a false warning costs a click, a missing one costs a rater an
unannounced suicide disclosure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

SCREEN_RE = re.compile(
    r"suicid|kill(?:ing)? (?:my|him|her|them)sel(?:f|ves)|killing myself|take (?:my|his|her) (?:own )?life|"
    r"end (?:my|it all)|ending (?:things|it all|my life)|self[- ]?harm|self[- ]?injur|"
    r"hurt(?:ing)? myself|cut(?:ting)? myself|hang(?:ing)? myself|jump(?:ing)? off|"
    r"better off (?:dead|without me|gone)|"
    r"want(?:ed)? to die|wish i (?:was|were) dead|wish i (?:had never been|wasn't) born|"
    r"not (?:be|being) here anymore|disappear forever|overdos|unalive|\bkms\b|\b988\b|"
    r"not (?:wanting|want) to (?:be alive|live|wake up)|don'?t want to (?:be alive|live|wake up)|"
    r"(?:manage|be) (?:fine |better )?without me|"
    r"(?:crisis|suicide) (?:line|hotline|lifeline|text line)|no reason to live|"
    r"stockpil\w* (?:pills|meds|medication)|a plan to (?:die|end)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ScreenResult:
    """Whether the transcript matched, and the first few matches (message index, matched text)."""

    matched: bool
    hits: tuple[tuple[int, str], ...] = ()


def screen_transcript(texts: Iterable[str], *, max_hits: int = 5) -> ScreenResult:
    """Screen message texts (in order) for suicide or self-harm content."""
    hits: list[tuple[int, str]] = []
    for index, text in enumerate(texts):
        for match in SCREEN_RE.finditer(text or ""):
            hits.append((index, match.group(0)))
            if len(hits) >= max_hits:
                return ScreenResult(True, tuple(hits))
    return ScreenResult(bool(hits), tuple(hits))

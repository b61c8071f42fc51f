"""The methods paragraph of a report: the registry of writers, and how a paragraph is attached.

A writer takes a report's computed payload (and the parameters it was computed with) and
returns a :class:`Methods`: a title, the paragraph and the keys of the works it cites. It
reads nothing else: every figure it states is a figure of the payload, so the paragraph can
never disagree with the page. :func:`attach` runs when ``reports.jobs`` computes a report,
records the software versions beside it, and stores the result under the payload's
``methods`` key: cached with the figures, served by the page, the API and the study zip.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reports.methods.references import entries
from reports.methods.software import software_sentence, software_versions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Methods:
    """What a writer returns: the paragraph, its title, the works it cites.

    ``text`` may hold more than one paragraph, separated by a blank line. ``equals`` says which
    reference implementations the estimators equal (in evalsite's tests); it closes the text,
    after the software versions.
    """

    title: str
    text: str
    references: tuple[str, ...] = ()
    equals: str = ""


Writer = Callable[[dict[str, Any], dict[str, Any]], Methods]
WRITERS: dict[str, Writer] = {}


def writes(kind: str) -> Callable[[Writer], Writer]:
    """Register the decorated function as the methods writer of a ``reports.jobs`` report kind."""

    def register(writer: Writer) -> Writer:
        WRITERS[kind] = writer
        return writer

    return register


def attach(kind: str, params: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Return the payload with its ``methods``: ``text``, ``references``, ``software``, ``title``.

    A kind without a writer gets none (``tests/reports/test_methods.py`` fails for it). A
    writer that fails leaves the report intact and says so in ``methods["error"]``: the
    figures are never lost to their description.
    """
    writer = WRITERS.get(kind)
    if writer is None or payload.get("pending"):
        return payload
    versions = software_versions()
    try:
        written = writer(payload, params)
    except Exception as exc:  # the report stays; the paragraph says it could not be written
        logger.exception("methods paragraph of %s failed", kind)
        return {**payload, "methods": {"kind": kind, "title": "", "text": "", "references": [], "software": versions,
                                       "error": f"The methods paragraph could not be written ({type(exc).__name__}: {exc})."}}
    text = written.text.rstrip()
    closing = " ".join(x for x in (software_sentence(versions), written.equals) if x)
    return {**payload, "methods": {
        "kind": kind,
        "title": written.title,
        "text": f"{text} {closing}",
        "references": entries(written.references),
        "software": versions,
    }}


# Words and numbers as a methods section writes them.

PARAGRAPH = "\n\n"  # put between sentences where a new paragraph starts


def prose(sentences: Iterable[str]) -> str:
    """Return the sentences as text: joined by spaces, a new paragraph at each :data:`PARAGRAPH`."""
    paragraphs: list[list[str]] = [[]]
    for sentence in sentences:
        if sentence == PARAGRAPH:
            paragraphs.append([])
        elif sentence:
            paragraphs[-1].append(sentence)
    return PARAGRAPH.join(" ".join(p) for p in paragraphs if p)


def number(n: int | float) -> str:
    """Return a count with thousands separators ("1,694")."""
    return f"{n:,}" if isinstance(n, int) else f"{n:,g}"


def count(n: int, word: str, plural: str | None = None) -> str:
    """Return "1 rater", "5 raters", "1,694 ratings"."""
    return f"{number(n)} {word if n == 1 else (plural or word + 's')}"


def listing(words: Iterable[str], conjunction: str = "and") -> str:
    """Return "a", "a and b", "a, b and c"."""
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def quoted(labels: Iterable[str]) -> str:
    """Return labels as the text names them: "yes"/"no"."""
    return "/".join(f"“{label}”" for label in labels)


def share(x: float) -> str:
    """Return a confidence level or a share as a percentage ("95%")."""
    return f"{100 * x:g}%"


def clause(text: str) -> str:
    """Return a sentence as a clause after a colon: no final full stop, first letter lower-case unless an acronym."""
    text = str(text).strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def seed_text(seed: Any) -> str:
    """Return "seed 20260101", or say the seed was not fixed."""
    return f"seed {seed}" if seed is not None else "a random seed (not fixed)"

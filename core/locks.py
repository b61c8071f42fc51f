"""Conversations whose labels may not leave the app yet: a locked test set (issue 30).

Reports owns the rule (a study split into a development and a test set keeps its test set
locked until a version declared final was evaluated on it: ``reports.review.scope``), but lower
layers export labels too (the consensus CSV, a judge run's CSV): they ask here, and reports
registers its rule in its ``AppConfig.ready()``, so no lower layer imports reports.
"""

from __future__ import annotations

from collections.abc import Callable

LockProvider = Callable[[int | None], frozenset[int]]
_providers: list[LockProvider] = []


def register_locked_conversations(provider: LockProvider) -> None:
    """Register a function returning the locked conversation ids (of one study, or of every study for None)."""
    if provider not in _providers:
        _providers.append(provider)


def locked_conversation_ids(*, study_id: int | None = None) -> frozenset[int]:
    """Return the conversations whose labels are locked: in one study, or in any study (``study_id=None``)."""
    out: set[int] = set()
    for provider in _providers:
        out |= provider(study_id)
    return frozenset(out)


def withheld_note(n: int) -> str:
    """Return the sentence an export carries when it leaves locked conversations out."""
    return (f"{n} conversation{'s' if n != 1 else ''} of a locked test set {'is' if n == 1 else 'are'} left out: their labels "
            "are shown only after a version declared final is evaluated on the test set (judge development page).")

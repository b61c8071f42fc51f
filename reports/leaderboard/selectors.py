"""Reads for the leaderboard: each conversation's chatbot, persona, repetition and persona risk level.

Who may read a leaderboard is decided once, by ``reports.selectors.study_get_for_reports``
(a study's coordinators, researchers and admins; never a rater) and
``reports.selectors.run_get_for_reports`` (judging's viewers). Persona design labels (the
risk level) are read here for the report only: reports are never reachable by raters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Max

from annotation.models import Study
from corpus.models import Conversation, Instrument, InstrumentKind, Item, Scale
from judging.models import EnsembleLabel, JudgeLabel, JudgeRun
from reports.judge_assisted.selectors import data_version as judge_assisted_version
from reports.selectors import study_data_version

YES_NO_SCALES = (Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN)
# VERA-MH's persona risk levels in their order (the published file says "Immediate"; "Imminent" is
# the paper's word); any other level follows, alphabetically.
RISK_ORDER = ("None", "Low", "High", "Immediate", "Imminent")


@dataclass(frozen=True)
class Design:
    """What pairs a conversation with other chatbots' conversations, and its persona risk level."""

    chatbot: str
    persona_id: int | None
    persona: str
    repetition: int | None
    risk: str | None


def conversation_designs(ids: Iterable[int]) -> dict[int, Design]:
    """Return each conversation's chatbot, persona, repetition index and persona risk level (one query)."""
    rows = Conversation.objects.filter(pk__in=list(ids)).values_list(
        "pk", "target__code", "target__model", "persona_id", "persona__name", "persona__design", "run_index", "metadata"
    )
    out = {}
    for pk, code, model, persona_id, persona, design, run_index, metadata in rows:
        repetition = run_index if run_index is not None else (metadata or {}).get("repetition")
        risk = (design or {}).get("risk") if persona_id is not None else None
        risk_text = str(risk).strip() if risk is not None else ""
        out[pk] = Design(
            chatbot=f"{code} · {model}" if code is not None else "(unknown)",
            persona_id=persona_id,
            persona=persona or "(none)",
            repetition=int(repetition) if isinstance(repetition, int | str) and str(repetition).isdigit() else None,
            risk=risk_text or None,
        )
    return out


def score_item_keys(instrument: Instrument) -> list[str] | None:
    """Return the yes/no items a checklist's score counts (None for a question flow: every dimension)."""
    if instrument.kind == InstrumentKind.FLOW:
        return None
    return list(
        Item.objects.filter(instrument=instrument, scale__in=YES_NO_SCALES).order_by("position").values_list("key", flat=True)
    )


def study_version(study: Study, run: JudgeRun | None) -> str:
    """Return a fingerprint of everything a study's leaderboard depends on."""
    if run is not None:
        return judge_assisted_version(study, run)
    return study_data_version(study)


def run_version(run: JudgeRun) -> str:
    """Return a fingerprint of a judge run's labels (a run's leaderboard depends on nothing else)."""
    labels = JudgeLabel.objects.filter(result__run=run).aggregate(n=Count("id"), last=Max("result__finished_at"))
    ensemble = EnsembleLabel.objects.filter(run=run).aggregate(n=Count("id"))
    blob = f"{run.pk}|{run.status}|{labels}|{ensemble}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def risk_sort_key(level: str) -> tuple[int, str]:
    """Order risk levels as VERA-MH reports them: None, Low, High, Immediate, then any other."""
    return (RISK_ORDER.index(level), "") if level in RISK_ORDER else (len(RISK_ORDER), level)

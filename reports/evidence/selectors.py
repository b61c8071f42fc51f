"""Reads for evidence agreement: the turns each judge and each clinician cited, per (conversation, item)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.http import Http404

from annotation.models import Study
from annotation.rating.selectors import FORM_KEY, rating_evidence_by_item
from corpus.instruments.labels import instrument_labels
from corpus.models import InstrumentKind
from reports.selectors import _submitted, judge_runs_for_study

Row = tuple[str, str, str, list[int]]  # (conversation code, judge or rater, item, 1-based turns)


def _turns(values: Any) -> list[int]:
    """Return the valid turn numbers of a list (positive integers, sorted, unique)."""
    if not isinstance(values, list):
        return []
    return sorted({v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0})


def rater_evidence_rows(study: Study, *, conversation_ids: Collection[int] | None = None) -> tuple[list[Row], int]:
    """Return the clinicians' cited turns per answered (conversation, item), and the ratings left out.

    Turns are read through ``annotation.rating.selectors.rating_evidence_by_item`` (the storage
    format; for a question flow, per dimension: the union over the questions on the rater's
    path). An item with no cited turn has no key there, so "cited nothing" and "was not asked"
    look the same: a rating counts as a rater of evidence only when it cites a turn for at
    least one item; then each of its answered items (each labelled dimension of a flow) is a
    row, with its turns or none, except free-text items and N/A answers citing no turn (the
    form asks no turn for an N/A answer). A rating citing no turn for any item (evidence off when it was
    rated, an imported rating, or turns cited for the whole form only, which no item can be
    matched to) is left out and counted. Calibration and withdrawn assignments are never read.
    """
    submitted = _submitted(study).select_related("assignment__study__instrument")
    if conversation_ids is not None:
        submitted = submitted.filter(assignment__conversation_id__in=list(conversation_ids))
    flow = study.instrument.kind == InstrumentKind.FLOW
    units = instrument_labels(study.instrument)  # checklist items or flow dimensions, with their N/A labels
    rows: list[Row] = []
    left_out = 0
    for rating in submitted.order_by("pk"):
        cited = rating_evidence_by_item(rating)
        cited.pop(FORM_KEY, None)
        if flow:
            answered = {str(k): str(v) for k, v in ((rating.derived or {}).get("labels") or {}).items()}
        else:
            answered = {str(k): str(entry["value"]) for k, entry in (rating.answers.get("main") or {}).items()
                        if isinstance(entry, dict) and entry.get("value") not in (None, "")}
        # A free-text item has no label to support; an N/A answer asks for no turn (the form does not
        # require one), so it counts only where it cites one.
        answered = {key: value for key, value in answered.items()
                    if key in units and units[key].labels and (cited.get(key) or not units[key].is_na(value))}
        if not any(cited.get(key) for key in answered):
            left_out += 1
            continue
        code, rater = rating.assignment.conversation.code, rating.assignment.rater_name
        rows.extend((code, rater, key, _turns(cited.get(key, []))) for key in answered)
    return rows, left_out


def judge_evidence_rows(study: Study, run_id: int, *, conversation_ids: Collection[int] | None = None) -> list[Row]:
    """Return each judge's cited turns per labelled (conversation, item) of the study in a run.

    Instance 0 of each judge, the run's label kind (items of a checklist, dimensions of a question
    flow), as the judges report reads them; a missing label (the judge gave no answer) is left
    out. Every cited turn counts, whether or not its quote was verified against the transcript:
    the turn number is what the judge pointed at. Raises Http404 for a run that labelled none of
    the study's conversations.
    """
    from judging.ensemble import ensemble_kind
    from judging.models import JudgeLabel

    run = judge_runs_for_study(study).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such judge run for this study")
    main = study.study_conversations.filter(is_calibration=False)
    if conversation_ids is not None:
        main = main.filter(conversation_id__in=list(conversation_ids))
    labels = (
        JudgeLabel.objects.filter(result__run=run, result__instance=0, kind=ensemble_kind(run.mode),
                                  result__conversation_id__in=main.values("conversation_id"))
        .exclude(label="")
        .order_by("result__conversation__code", "result__judge__name", "position")
        .values_list("result__conversation__code", "result__judge__name", "item_key", "evidence")
    )
    return [
        (code, judge, item, _turns([e.get("turn") for e in (evidence or []) if isinstance(e, dict)]))
        for code, judge, item, evidence in labels
    ]


def items_info(study: Study) -> dict[str, dict[str, str]]:
    """Return the main instrument's item texts by key, in instrument order (nothing for a flow: dimensions name themselves)."""
    if study.instrument.kind == InstrumentKind.FLOW:
        return {}
    return {key: {"text": text, "number": number}
            for key, text, number in study.instrument.items.order_by("position").values_list("key", "text", "number")}

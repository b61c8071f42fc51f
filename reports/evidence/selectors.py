"""Reads for evidence agreement: the turns each judge and each clinician cited, per (conversation, item)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.http import Http404

from annotation.models import Study
from corpus.models import InstrumentKind
from reports.selectors import _submitted, judge_runs_for_study

Row = tuple[str, str, str, list[int]]  # (conversation code, judge or rater, item, 1-based turns)


def _turns(values: Any) -> list[int]:
    """Return the valid turn numbers of a list (positive integers, sorted, unique)."""
    if not isinstance(values, list):
        return []
    return sorted({v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0})


def rater_evidence_rows(study: Study, *, conversation_ids: Collection[int] | None = None) -> list[Row]:
    """Return every submitted main answer that carries an evidence list, as (conversation, rater, item, turns).

    An answer with ``"evidence": []`` is a rater who cited no turn; an answer without the key
    (the study did not ask for turns, or an imported rating) is no rater of evidence and is
    left out. For a question flow the rows are per dimension (the union of the turns cited on
    its questions), as its judges label dimensions. Calibration and withdrawn assignments are
    never read (``reports.selectors``).
    """
    submitted = _submitted(study)
    if conversation_ids is not None:
        submitted = submitted.filter(assignment__conversation_id__in=list(conversation_ids))
    dimension = _question_dimensions(study)
    rows: list[Row] = []
    for rating in submitted.order_by("pk"):
        code, rater = rating.assignment.conversation.code, rating.assignment.rater_name
        cited: dict[str, set[int]] = {}
        for key, entry in (rating.answers.get("main") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("evidence"), list):
                unit = dimension.get(str(key), str(key)) if dimension is not None else str(key)
                cited.setdefault(unit, set()).update(_turns(entry["evidence"]))
        rows.extend((code, rater, unit, sorted(turns)) for unit, turns in cited.items())
    return rows


def _question_dimensions(study: Study) -> dict[str, str] | None:
    """Return each question's dimension for a question flow (None for a checklist).

    A question flow's judges label dimensions, while raters cite turns on the questions they
    answer: a rater's turns for a dimension are the union of the turns cited on its questions.
    """
    if study.instrument.kind != InstrumentKind.FLOW:
        return None
    return {key: domain for key, domain in study.instrument.items.values_list("key", "domain") if domain}


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

"""Ratings: autosave one answer at a time, submit once (idempotent), revise with a reason.

A rating's answers live in ``Rating.answers`` as ``{"main": {key: {"value", "note",
"evidence"}}, "section": {...}, "form_evidence": [...]}``; ``evidence`` and ``form_evidence``
are the transcript turns a rater cites when the study asks for evidence (the format is
documented on ``annotation.rating.selectors.rating_evidence_by_item``). Every save bumps ``revision``; a client that sends the revision it last
saw gets a conflict (409) instead of silently overwriting another tab's answers. The first
submission is kept as revision 1 of the history and never overwritten; a later change needs a
reason and adds a new revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.errors import AnnotationError, RatingConflict
from annotation.models import (
    Assignment,
    AssignmentStatus,
    EvidenceMode,
    Rating,
    RatingRevision,
    RatingStatus,
)
from annotation.studies.services import assignment_touch
from corpus.instruments.flow import Flow, FlowError, walk
from corpus.instruments.labels import UnknownAnswer, item_labels
from corpus.models import InstrumentKind, Item, Message, Scale

PARTS = ("main", "section")
FORM = "form"  # the part of a save that carries the whole form's evidence (no item, no value)
FORM_EVIDENCE = "form_evidence"  # Rating.answers key of the whole form's cited turns
MAX_EVIDENCE_TURNS = 200
SHORTCUTS = {"y": "yes", "n": "no"}


def _items(assignment: Assignment, part: str) -> dict[str, Item]:
    instrument = assignment.study.instrument if part == "main" else assignment.study.section
    if instrument is None:
        return {}
    cache = getattr(instrument, "_items_by_key", None)
    if cache is None:
        cache = {i.key: i for i in instrument.items.all()}
        instrument._items_by_key = cache  # type: ignore[attr-defined]
    return cache


def normalise_value(item: Item, value: Any) -> str:
    """Return the stored form of an answer, or raise ``AnnotationError`` saying what is allowed.

    The one label normaliser (``corpus.instruments.labels``): the item's own spelling whatever
    the case or spacing, N/A spellings as the item's N/A answer; "y"/"n" are the form's
    keyboard shortcuts for yes/no.
    """
    text = "" if value is None else str(value).strip()
    if item.scale == Scale.TEXT:
        return text
    if item.scale in (Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN):
        text = SHORTCUTS.get(text.lower(), text)
    labels = getattr(item, "_labels", None)
    if labels is None:
        labels = item._labels = item_labels(item)  # type: ignore[attr-defined]
    try:
        stored = labels.normalise(text)
    except UnknownAnswer as exc:
        raise AnnotationError(str(exc)) from None
    if stored is None:
        raise AnnotationError(f"'' is not an answer to item {item.key}; allowed: {', '.join(labels.labels)}")
    return stored


def _check_calibration_gate(assignment: Assignment) -> None:
    study = assignment.study
    if assignment.is_calibration or not study.calibration_required:
        return
    pending = study.assignments.filter(rater_id=assignment.rater_id, is_calibration=True).exclude(
        status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.WITHDRAWN]
    )
    if pending.exists():
        raise AnnotationError("finish the calibration conversations first: the main set unlocks after them", status=423)


def rating_gate_check(*, assignment: Assignment) -> None:
    """Raise (423) while the rater's calibration is pending; reads only, so a GET may call it."""
    _check_calibration_gate(assignment)


def _locked_assignment(assignment_id: int, user: AbstractBaseUser) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("study__instrument", "study__section")
        .filter(pk=assignment_id, rater_id=user.pk)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .first()
    )
    if assignment is None:
        raise AnnotationError("not found", status=404)
    return assignment


@transaction.atomic
def rating_open(*, assignment_id: int, user: AbstractBaseUser) -> Rating:
    """Open (or resume) the rating of an assignment; refuses until calibration is done.

    A state change (the assignment starts), so only a POST calls it: the rating page posts it
    when it loads (static/annotation/rating-open.js), and the first autosave does it anyway.
    """
    assignment = _locked_assignment(assignment_id, user)
    _check_calibration_gate(assignment)
    rating, _ = Rating.objects.get_or_create(assignment=assignment)
    if assignment.status == AssignmentStatus.NOT_STARTED:
        assignment_touch(assignment=assignment)
    return rating


@transaction.atomic
def rating_save_answer(
    *,
    assignment_id: int,
    user: AbstractBaseUser,
    part: str,
    item_key: str = "",
    value: Any = None,
    note: str | None = None,
    evidence: Sequence[int] | None = None,
    expected_revision: int | None = None,
    elapsed_seconds: float = 0,
) -> Rating:
    """Save one answer of a draft rating (an empty value clears it, with its note and evidence).

    ``value`` None keeps the saved answer (a save of evidence only). ``evidence``: the turns
    that support the answer, replacing the saved ones (None keeps them, [] removes them); only
    when the study asks for evidence per item, on an answered item. Part ``form`` saves the
    whole form's evidence (studies that ask for it that way); ``item_key`` is then ignored.
    A refused save changes nothing.
    """
    if part not in (*PARTS, FORM):
        raise AnnotationError(f"unknown part '{part}'; expected main, section or form")
    assignment = _locked_assignment(assignment_id, user)
    _check_calibration_gate(assignment)
    rating, _ = Rating.objects.select_for_update().get_or_create(assignment=assignment)
    if rating.status == RatingStatus.SUBMITTED:
        raise AnnotationError("this rating is submitted and locked; a change needs a reason (revise)", status=409)
    if expected_revision is not None and expected_revision != rating.revision:
        raise RatingConflict(
            "these answers were changed elsewhere (another tab or device) since this page loaded",
            details={"revision": rating.revision, "answers": rating.answers},
        )
    turns = None
    if evidence is not None:
        _check_evidence_mode(assignment, part)
        turns = clean_evidence(assignment, list(evidence))
    answers = _copy_answers(rating.answers)
    if part == FORM:
        if turns is None:
            raise AnnotationError("a save of the whole form carries evidence (the cited turns) only")
        if turns:
            answers[FORM_EVIDENCE] = turns
        else:
            answers.pop(FORM_EVIDENCE, None)
    else:
        item = _items(assignment, part).get(item_key)
        if item is None:
            raise AnnotationError(f"unknown item '{item_key}' in the {part} part of this study")
        saved = answers[part].get(item_key, {})
        if value is None and turns is None:
            raise AnnotationError("a save needs a value or evidence (the cited turns)")
        stored = saved.get("value", "") if value is None else normalise_value(item, value)
        if stored == "" and turns:
            raise AnnotationError(f"answer item {item_key} before citing turns for it")
        if stored == "" and not (note or "").strip():
            answers[part].pop(item_key, None)
        else:
            entry: dict[str, Any] = {"value": stored}
            if note is not None and note.strip():
                entry["note"] = note.strip()[:4000]
            elif note is None and "note" in saved:
                entry["note"] = saved["note"]
            kept = saved.get("evidence") if turns is None else turns
            if kept and stored != "":
                entry["evidence"] = kept
            answers[part][item_key] = entry
    rating.answers = answers
    rating.revision += 1
    rating.save(update_fields=["answers", "revision", "updated_at"])
    assignment_touch(assignment=assignment, elapsed_seconds=elapsed_seconds)
    return rating


def _copy_answers(answers: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a rating's answers to change: each part's dict copied, other keys kept."""
    copied = dict(answers or {})
    for part in PARTS:
        copied[part] = dict(copied.get(part, {}))
    return copied


def citable_turns(assignment: Assignment) -> list[int]:
    """Return the turn numbers a rater may cite: the user and chatbot messages' (one query).

    Turn n is the n-th message of the conversation by ``turn_index``, the numbering judges use
    in ``JudgeLabel.evidence``; system messages keep their number but are never shown to raters,
    so they cannot be cited.
    """
    roles = Message.objects.filter(conversation_id=assignment.conversation_id).order_by("turn_index").values_list("role", flat=True)
    return [n for n, role in enumerate(roles, start=1) if role in (Message.Role.USER, Message.Role.ASSISTANT)]


def clean_evidence(assignment: Assignment, turns: Any) -> list[int]:
    """Return cited turns sorted and unique, or raise ``AnnotationError`` naming what is wrong."""
    if not isinstance(turns, (list, tuple)):
        raise AnnotationError("evidence must be a list of turn numbers")
    if len(turns) > MAX_EVIDENCE_TURNS:
        raise AnnotationError(f"at most {MAX_EVIDENCE_TURNS} turns can be cited")
    if any(isinstance(t, bool) or not isinstance(t, int) for t in turns):
        raise AnnotationError("evidence must be whole turn numbers (1, 2, 3...)")
    allowed = citable_turns(assignment)
    wrong = sorted({t for t in turns} - set(allowed))
    if wrong:
        span = f"turns {allowed[0]} to {allowed[-1]}" if allowed else "no turns"
        raise AnnotationError(
            f"turn {', '.join(map(str, wrong))} is not a turn of this conversation ({span}); nothing was saved"
            if len(wrong) == 1 else
            f"turns {', '.join(map(str, wrong))} are not turns of this conversation ({span}); nothing was saved"
        )
    return sorted(set(turns))


def _check_evidence_mode(assignment: Assignment, part: str) -> None:
    mode = assignment.study.evidence_mode
    if mode == EvidenceMode.OFF:
        raise AnnotationError("this study does not ask for evidence (cited turns)")
    if mode == EvidenceMode.WHOLE_FORM and part != FORM:
        raise AnnotationError("this study asks for evidence for the whole form, not per item: save it with part 'form'")
    if mode == EvidenceMode.PER_ITEM and part == FORM:
        raise AnnotationError("this study asks for evidence per item, not for the whole form")


def missing_evidence(assignment: Assignment, answers: dict[str, Any]) -> list[str]:
    """Return what still needs cited turns when the study requires evidence, as "key: text" strings.

    Per item: every answered item with a closed scale (free text and N/A answers excepted;
    in a question flow, the answered questions on the rater's path). Whole form: the form.
    """
    study = assignment.study
    if not study.evidence_required or study.evidence_mode == EvidenceMode.OFF:
        return []
    if study.evidence_mode == EvidenceMode.WHOLE_FORM:
        return [] if answers.get(FORM_EVIDENCE) else ["the whole form: cite at least one turn"]
    lacking: list[str] = []
    for part in PARTS:
        given = answers.get(part, {})
        keys = list(_items(assignment, part))
        if part == "main" and study.instrument.kind == InstrumentKind.FLOW:
            on_path = {q for q, _ in derive(assignment, answers).get("path", [])}
            keys = [k for k in keys if k in on_path]
        for key in keys:
            item = _items(assignment, part)[key]
            entry = given.get(key, {})
            value = entry.get("value", "")
            if not value or item.scale == Scale.TEXT or item_labels(item).is_na(value) or entry.get("evidence"):
                continue
            lacking.append(f"{key}: {item.text}")
    return lacking


def missing_items(assignment: Assignment, answers: dict[str, dict]) -> list[str]:
    """Return the required items still unanswered, as "key: text" strings, in form order."""
    missing: list[str] = []
    instrument = assignment.study.instrument
    main = answers.get("main", {})
    if instrument.kind == InstrumentKind.FLOW:
        result = walk(Flow.from_dict(instrument.flow), {k: v.get("value", "") for k, v in main.items()})
        if not result.finished and result.next_question:
            question = _items(assignment, "main").get(result.next_question)
            missing.append(f"{result.next_question}: {question.text if question else ''}".strip())
    else:
        for key, item in _items(assignment, "main").items():
            if item.required and not main.get(key, {}).get("value"):
                missing.append(f"{key}: {item.text}")
    section = answers.get("section", {})
    for key, item in _items(assignment, "section").items():
        if item.required and not section.get(key, {}).get("value"):
            missing.append(f"{key}: {item.text}")
    return missing


def derive(assignment: Assignment, answers: dict[str, dict]) -> dict[str, Any]:
    """Return the derived result: the flow path and dimension labels (question flows only)."""
    instrument = assignment.study.instrument
    if instrument.kind != InstrumentKind.FLOW:
        return {}
    main = answers.get("main", {})
    try:
        result = walk(Flow.from_dict(instrument.flow), {k: v.get("value", "") for k, v in main.items()})
    except FlowError as exc:
        raise AnnotationError(str(exc)) from exc
    return {
        "path": [[step.question_id, step.answer] for step in result.path],
        "labels": dict(result.labels),
        "ended_by": result.ended_by,
    }


@transaction.atomic
def rating_submit(*, assignment_id: int, user: AbstractBaseUser, expected_revision: int | None = None) -> Rating:
    """Submit a rating once; submitting again returns the same submitted rating unchanged."""
    assignment = _locked_assignment(assignment_id, user)
    _check_calibration_gate(assignment)
    rating, _ = Rating.objects.select_for_update().get_or_create(assignment=assignment)
    if rating.status == RatingStatus.SUBMITTED:
        return rating  # idempotent: a double click or a retried request changes nothing
    if expected_revision is not None and expected_revision != rating.revision:
        raise RatingConflict(
            "these answers were changed elsewhere since this page loaded; reload before submitting",
            details={"revision": rating.revision, "answers": rating.answers},
        )
    missing = missing_items(assignment, rating.answers)
    if missing:
        raise AnnotationError(
            f"{len(missing)} required item(s) unanswered: " + "; ".join(missing), details={"missing": missing}
        )
    lacking = missing_evidence(assignment, rating.answers)
    if lacking:
        raise AnnotationError(
            f"this study requires evidence: cite the turns that support {len(lacking)} answer(s): " + "; ".join(lacking)
            if assignment.study.evidence_mode == EvidenceMode.PER_ITEM
            else "this study requires evidence: cite at least one turn that supports the rating as a whole",
            details={"missing_evidence": lacking},
        )
    now = timezone.now()
    rating.derived = derive(assignment, rating.answers)
    rating.status = RatingStatus.SUBMITTED
    rating.submitted_at = now
    rating.revision += 1
    rating.save()
    RatingRevision.objects.create(rating=rating, number=1, answers=rating.answers, derived=rating.derived, created_by=user)
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = now
    assignment.last_activity_at = now
    assignment.save(update_fields=["status", "submitted_at", "last_activity_at"])
    return rating


@transaction.atomic
def rating_revise(
    *, assignment_id: int, user: AbstractBaseUser, changes: dict[str, dict[str, Any]], reason: str
) -> Rating:
    """Change a submitted rating: needs a reason; the earlier revisions stay in the history."""
    if not reason.strip():
        raise AnnotationError("a change to a submitted rating needs a reason")
    assignment = _locked_assignment(assignment_id, user)
    rating = Rating.objects.select_for_update().get(assignment=assignment)
    if rating.status != RatingStatus.SUBMITTED:
        raise AnnotationError("only a submitted rating is revised; a draft is saved directly", status=409)
    answers = _copy_answers(rating.answers)
    for part, items in changes.items():
        if part not in PARTS:
            raise AnnotationError(f"unknown part '{part}'")
        for key, value in items.items():
            item = _items(assignment, part).get(key)
            if item is None:
                raise AnnotationError(f"unknown item '{key}' in the {part} part of this study")
            stored = normalise_value(item, value)
            if stored:
                answers[part][key] = {**answers[part].get(key, {}), "value": stored}
            else:
                answers[part].pop(key, None)
    missing = missing_items(assignment, answers)
    if missing:
        raise AnnotationError("the change would leave required items unanswered: " + "; ".join(missing))
    rating.answers = answers
    rating.derived = derive(assignment, answers)
    rating.revision += 1
    rating.save()
    number = rating.revisions.count() + 1
    RatingRevision.objects.create(rating=rating, number=number, answers=answers, derived=rating.derived, reason=reason.strip(), created_by=user)
    return rating


def calibration_feedback(assignment: Assignment) -> list[dict[str, Any]]:
    """Compare a submitted calibration rating with the study's reference answers."""
    if not assignment.is_calibration:
        return []
    link = assignment.study.study_conversations.filter(conversation_id=assignment.conversation_id).first()
    reference = (link.calibration_reference if link else {}) or {}
    rating = Rating.objects.filter(assignment=assignment, status=RatingStatus.SUBMITTED).first()
    if rating is None:
        return []
    given = rating.answers.get("main", {})
    labels = rating.derived.get("labels", {}) if rating.derived else {}
    feedback = []
    for key, ref in reference.items():
        yours = given.get(key, {}).get("value") or labels.get(key, "")
        expected = ref.get("label", "") if isinstance(ref, dict) else str(ref)
        feedback.append(
            {
                "item_key": key,
                "yours": yours,
                "reference": expected,
                "match": str(yours).casefold() == str(expected).casefold(),
                "explanation": ref.get("explanation", "") if isinstance(ref, dict) else "",
            }
        )
    return feedback

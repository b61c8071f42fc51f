"""Ratings: autosave one answer at a time, submit once (idempotent), revise with a reason.

A rating's answers live in ``Rating.answers`` as ``{"main": {key: {"value", "note"}},
"section": {...}}``. Every save bumps ``revision``; a client that sends the revision it last
saw gets a conflict (409) instead of silently overwriting another tab's answers. The first
submission is kept as revision 1 of the history and never overwritten; a later change needs a
reason and adds a new revision.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.errors import AnnotationError, RatingConflict
from annotation.models import Assignment, AssignmentStatus, Rating, RatingRevision, RatingStatus
from annotation.studies.services import assignment_touch
from corpus.instruments.flow import Flow, FlowError, walk
from corpus.instruments.labels import UnknownAnswer, item_labels
from corpus.models import InstrumentKind, Item, Scale

PARTS = ("main", "section")
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
    item_key: str,
    value: Any,
    note: str | None = None,
    expected_revision: int | None = None,
    elapsed_seconds: float = 0,
) -> Rating:
    """Save one answer of a draft rating (an empty value clears it)."""
    if part not in PARTS:
        raise AnnotationError(f"unknown part '{part}'; expected main or section")
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
    item = _items(assignment, part).get(item_key)
    if item is None:
        raise AnnotationError(f"unknown item '{item_key}' in the {part} part of this study")
    stored = normalise_value(item, value)
    answers = {p: dict(rating.answers.get(p, {})) for p in PARTS}
    if stored == "" and not (note or "").strip():
        answers[part].pop(item_key, None)
    else:
        entry = {"value": stored}
        if note is not None and note.strip():
            entry["note"] = note.strip()[:4000]
        elif note is None and "note" in answers[part].get(item_key, {}):
            entry["note"] = answers[part][item_key]["note"]
        answers[part][item_key] = entry
    rating.answers = answers
    rating.revision += 1
    rating.save(update_fields=["answers", "revision", "updated_at"])
    assignment_touch(assignment=assignment, elapsed_seconds=elapsed_seconds)
    return rating


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
    answers = {p: dict(rating.answers.get(p, {})) for p in PARTS}
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

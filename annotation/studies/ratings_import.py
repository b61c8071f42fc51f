"""Coordinators' extra writes: load ratings collected outside the app into a study.

The file is long format, one label per row: ``unit,rater,item,label`` (an optional ``note``
column). ``unit`` is a conversation code or external id of the study, ``rater`` a username of
one of its raters, ``item`` an item key of the study instrument (question flows: a dimension
name; the study section: ``section:KEY`` or the bare key when it is not a main item), and an
empty ``label`` is a missing answer. The import is all-or-nothing: every problem of the whole
file is reported with its line and column, and nothing is written if there is any.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    AssignmentStatus,
    MemberRole,
    Rating,
    RatingRevision,
    RatingStatus,
    Study,
)
from annotation.rating.services import normalise_value
from annotation.studies.services import study_event
from core.problems import ImportRejected, Problem
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.instruments.labels import UnknownAnswer, instrument_labels
from corpus.models import InstrumentKind, Item

COLUMNS = ("unit", "rater", "item", "label")


@dataclass(frozen=True)
class RatingsImportResult:
    dry_run: bool
    n_rows: int
    n_labels: int
    n_ratings: int
    n_assignments_created: int
    n_assignments_reused: int


@dataclass(frozen=True)
class _Row:
    line: int
    conversation_id: int
    rater_id: int
    part: str
    key: str
    label: str
    note: str


class _Items:
    """Resolve an item key of the file to (part, key) and normalise its labels."""

    def __init__(self, study: Study):
        self.flow = study.instrument.kind == InstrumentKind.FLOW
        items = list(Item.objects.filter(instrument=study.instrument).order_by("position"))
        self.main: dict[str, Item | None] = (
            {i.domain: None for i in items} if self.flow else {i.key: i for i in items}
        )
        self.section: dict[str, Item] = (
            {i.key: i for i in study.section.items.all()} if study.section is not None else {}
        )
        self.dimensions = instrument_labels(study.instrument) if self.flow else {}

    def resolve(self, key: str) -> tuple[str, str] | None:
        if key.startswith("section:") and key[8:] in self.section:
            return "section", key[8:]
        if key in self.main:
            return "main", key
        if key in self.section:
            return "section", key
        return None

    def normalise(self, part: str, key: str, label: str) -> str:
        item = self.main[key] if part == "main" else self.section[key]
        if item is None:  # a question-flow dimension: one of the four labels
            try:
                return self.dimensions[key].normalise(label) or ""
            except UnknownAnswer:
                raise AnnotationError(f"'{label}' is not a label of dimension {key}; allowed: {', '.join(FLOW_LABELS)}") from None
        return normalise_value(item, label)

    def known(self) -> str:
        keys = [*self.main, *(f"section:{k}" for k in self.section)]
        return ", ".join(keys[:20]) + (" ..." if len(keys) > 20 else "")


def _units(study: Study) -> tuple[dict[str, int], set[str], dict[int, bool]]:
    """Return ``{code or external id: conversation id}``, the ambiguous external ids, calibration flags."""
    links = list(
        study.study_conversations.values_list(
            "conversation_id", "conversation__code", "conversation__external_id", "is_calibration"
        )
    )
    codes = {code: cid for cid, code, _, _ in links}
    external: dict[str, set[int]] = defaultdict(set)
    for cid, _, external_id, _ in links:
        if external_id and external_id not in codes:  # a code always wins
            external[external_id].add(cid)
    by_name = {**{x: next(iter(ids)) for x, ids in external.items() if len(ids) == 1}, **codes}
    ambiguous = {x for x, ids in external.items() if len(ids) > 1}
    return by_name, ambiguous, {cid: is_cal for cid, _, _, is_cal in links}


def _parse(study: Study, text: str, file: str) -> tuple[list[_Row], list[Problem], int]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = {(name or "").strip().lower(): name for name in reader.fieldnames or []}
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        return [], [Problem(f"missing column(s) {', '.join(missing)}; the header must be unit,rater,item,label", file, 1, c) for c in missing], 0
    units, ambiguous, _ = _units(study)
    items = _Items(study)
    raw = [(reader.line_num, {c: (row.get(header[c]) or "").strip() for c in (*COLUMNS, "note") if c in header}) for row in reader]
    users = dict(get_user_model().objects.filter(username__in={r["rater"] for _, r in raw}).values_list("username", "pk"))
    raters = set(study.memberships.filter(role=MemberRole.RATER).values_list("user_id", flat=True))
    submitted = set(
        study.assignments.exclude(status=AssignmentStatus.WITHDRAWN)
        .filter(rating__status=RatingStatus.SUBMITTED)
        .values_list("conversation_id", "rater_id")
    )
    problems: list[Problem] = []
    rows: list[_Row] = []
    seen: dict[tuple[int, int, str, str], int] = {}
    reported_submitted: set[tuple[int, int]] = set()
    for line, r in raw:
        def bad(column: str, message: str, line: int = line) -> None:
            problems.append(Problem(message, file, line, column))

        cid = units.get(r["unit"])
        if not r["unit"]:
            bad("unit", "the unit is empty")
        elif r["unit"] in ambiguous:
            bad("unit", f"'{r['unit']}' is the external id of several conversations of the study; use the conversation code")
        elif cid is None:
            bad("unit", f"unknown unit '{r['unit']}': no conversation of this study has this code or external id")
        uid = users.get(r["rater"])
        if not r["rater"]:
            bad("rater", "the rater is empty")
        elif uid is None:
            bad("rater", f"unknown rater username '{r['rater']}'")
        elif uid not in raters:
            bad("rater", f"'{r['rater']}' is not a rater of this study (add them to the study first)")
            uid = None
        resolved = items.resolve(r["item"])
        if resolved is None:
            bad("item", f"unknown item key '{r['item']}'; the study's items are: {items.known()}")
        label = r["label"]
        if resolved is not None and label:
            try:
                label = items.normalise(*resolved, label)
            except AnnotationError as exc:
                bad("label", str(exc))
        if cid is None or uid is None or resolved is None:
            continue
        key = (cid, uid, *resolved)
        if key in seen:
            bad("item", f"duplicate: unit '{r['unit']}', rater '{r['rater']}', item '{r['item']}' already on line {seen[key]}")
            continue
        seen[key] = line
        if (cid, uid) in submitted:
            if (cid, uid) not in reported_submitted:
                reported_submitted.add((cid, uid))
                bad("unit", f"rater '{r['rater']}' already has a submitted rating of '{r['unit']}'; the import never overwrites one")
            continue
        rows.append(_Row(line, cid, uid, resolved[0], resolved[1], label, r.get("note", "")))
    if not raw and not problems:
        problems.append(Problem("the file has a header but no ratings", file, 1))
    return rows, problems, len(raw)


@transaction.atomic
def ratings_import(
    *, study: Study, text: str, file: str, actor: AbstractBaseUser | None = None, dry_run: bool = False
) -> RatingsImportResult:
    """Load ratings collected outside the app as submitted ratings; all or nothing.

    Each (unit, rater) becomes a submitted Rating with its revision #1, on the rater's existing
    unsubmitted assignment of that conversation or on a new one. Raises ``ImportRejected``
    listing every problem; writes nothing on any problem or on a dry run.
    """
    # of=("self",): the section is a nullable join, which PostgreSQL cannot lock.
    study = Study.objects.select_for_update(of=("self",)).select_related("instrument", "section").get(pk=study.pk)
    rows, problems, n_rows = _parse(study, text, file)
    if problems:
        raise ImportRejected(problems)
    grouped: dict[tuple[int, int], list[_Row]] = defaultdict(list)
    for row in rows:
        grouped[(row.conversation_id, row.rater_id)].append(row)
    existing = {
        (a.conversation_id, a.rater_id): a
        for a in study.assignments.exclude(status=AssignmentStatus.WITHDRAWN).filter(
            conversation_id__in={c for c, _ in grouped}
        )
    }
    reused = sum(1 for pair in grouped if pair in existing)
    n_labels = sum(1 for row in rows if row.label)
    if dry_run:
        return RatingsImportResult(True, n_rows, n_labels, len(grouped), len(grouped) - reused, reused)
    _, _, calibration = _units(study)
    positions = dict(
        study.assignments.filter(is_calibration=False).values("rater_id").annotate(p=Max("position")).values_list("rater_id", "p")
    )
    flow = study.instrument.kind == InstrumentKind.FLOW
    now = timezone.now()
    for (cid, uid), group in grouped.items():
        assignment = existing.get((cid, uid))
        if assignment is None:
            is_cal = calibration.get(cid, False)
            position = 0
            if not is_cal:
                position = positions.get(uid, -1) + 1
                positions[uid] = position
            assignment = Assignment(study=study, conversation_id=cid, rater_id=uid, is_calibration=is_cal, position=position)
        assignment.status = AssignmentStatus.SUBMITTED
        assignment.submitted_at = assignment.last_activity_at = now
        assignment.save()
        answers, derived = _answers(group, flow)
        rating = Rating.objects.filter(assignment=assignment).first() or Rating(assignment=assignment)
        rating.answers, rating.derived = answers, derived
        rating.status, rating.submitted_at = RatingStatus.SUBMITTED, now
        rating.revision += 1
        rating.save()
        RatingRevision.objects.create(
            rating=rating, number=rating.revisions.count() + 1, answers=answers, derived=derived,
            reason=f"imported from {file}", created_by_id=uid,
        )
    study_event(
        study=study, actor=actor, action="ratings_imported", reason=f"imported from {file}", file=file,
        n_ratings=len(grouped), n_labels=n_labels, assignments_created=len(grouped) - reused,
        assignments_reused=reused,
    )
    return RatingsImportResult(False, n_rows, n_labels, len(grouped), len(grouped) - reused, reused)


def _answers(group: list[_Row], flow: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {"main": {}, "section": {}}
    labels: dict[str, str] = {}
    for row in group:
        if not row.label and not row.note:
            continue  # a missing answer
        if flow and row.part == "main":
            if row.label:
                labels[row.key] = row.label
            continue
        entry: dict[str, Any] = {"value": row.label}
        if row.note:
            entry["note"] = row.note
        answers[row.part][row.key] = entry
    derived: dict[str, Any] = {"labels": labels, "path": [], "ended_by": "imported"} if flow else {}
    return answers, derived

"""Coordinators' extra writes: load ratings collected outside the app into a study.

Two formats. ``long``: one label per row, ``unit,rater,item,label`` (an optional ``note``
column). ``unit`` is a conversation code or external id of the study, ``rater`` a username of
one of its raters (or, with ``external_raters``, any pseudonymous label), ``item`` an item key
of the study instrument (question flows: a dimension name; the study section: ``section:KEY``
or the bare key when it is not a main item), and an empty ``label`` is a missing answer.
``vera-mh``: the published VERA-MH clinician ratings CSV unchanged (``stats.vera`` reads it:
NA = not answered, ``#id`` = ``id``, the design columns become conversation metadata and
persona design). A rater name that is not a user rating in the study becomes an *external
rater* of the study (a label, no account) in that format.

The import is all-or-nothing: every problem of the whole file is reported with its line and
column, and nothing is written if there is any.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
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
    ExternalRater,
    MemberRole,
    Rating,
    RatingRevision,
    RatingStatus,
    Study,
)
from annotation.rating.services import normalise_value
from annotation.studies.services import study_event
from core.bounded import BoundedCsv
from core.problems import ImportRejected, Problem, ProblemList
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.instruments.labels import UnknownAnswer, instrument_labels
from corpus.models import Conversation, InstrumentKind, Item

COLUMNS = ("unit", "rater", "item", "label")


FORMATS = ("long", "vera-mh")


@dataclass(frozen=True)
class RatingsImportResult:
    dry_run: bool
    n_rows: int
    n_labels: int
    n_ratings: int
    n_assignments_created: int
    n_assignments_reused: int
    external_raters: tuple[str, ...] = ()  # labels of the external raters the ratings belong to
    n_external_created: int = 0
    notes: tuple[str, ...] = ()  # how quirks of the file were read (NA cells, '#' ids, personas linked)


RaterKey = tuple[str, Any]  # ("u", user id) or ("x", external label)


@dataclass(frozen=True)
class _Raw:
    """One label as read, whatever the format: where it is, and which columns to blame."""

    line: int
    unit: str
    rater: str
    item: str
    label: str
    note: str = ""
    unit_column: str = "unit"
    rater_column: str = "rater"
    item_column: str = "item"
    label_column: str = "label"


@dataclass(frozen=True)
class _Row:
    line: int
    conversation_id: int
    rater: RaterKey
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


def _lines(text: str) -> Iterator[str]:
    """Yield the lines of ``text`` one at a time (a StringIO would copy it, four bytes a character)."""
    start, end = (1 if text.startswith("\ufeff") else 0), len(text)
    while start < end:
        stop = text.find("\n", start)
        if stop == -1:
            yield text[start:]
            return
        yield text[start : stop + 1]
        start = stop + 1


RawRows = Callable[[], Iterable["_Raw"]]


def _read_long(text: str, file: str) -> tuple[RawRows, ProblemList]:
    """Return a reader of the rows (each call reads the file again, holding no row) and header problems."""
    header = {(name or "").strip().lower(): name for name in BoundedCsv(csv.DictReader(_lines(text)), file).fieldnames or []}
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        return (lambda: ()), ProblemList(
            Problem(f"missing column(s) {', '.join(missing)}; the header must be unit,rater,item,label", file, 1, c) for c in missing
        )
    columns = [c for c in (*COLUMNS, "note") if c in header]

    def rows() -> Iterator[_Raw]:
        reader = BoundedCsv(csv.DictReader(_lines(text)), file)
        for row in reader:
            cells = {c: (row.get(header[c]) or "").strip() for c in columns}
            yield _Raw(reader.line_num, cells["unit"], cells["rater"], cells["item"], cells["label"], cells.get("note", ""))

    return rows, ProblemList()


def _read_vera(text: str, file: str) -> tuple[list[_Raw], list[Problem], Any]:
    from stats.vera import DIMENSION_COLUMNS, SECTION_COLUMNS, read_vera_ratings

    parsed = read_vera_ratings(text, file)
    column_of_dimension = {d: c for c, d in DIMENSION_COLUMNS.items()}
    column_of_section = {key: c for c, (key, _) in SECTION_COLUMNS.items()}
    raw = []
    for r in parsed.ratings:
        for dimension, label in r.dimensions.items():
            raw.append(_Raw(r.line, r.unit, r.rater, dimension, label or "", unit_column="conversation_id",
                            rater_column="clinician_id", item_column=column_of_dimension[dimension],
                            label_column=column_of_dimension[dimension]))
        for key, value in r.section.items():
            raw.append(_Raw(r.line, r.unit, r.rater, f"section:{key}", value or "", unit_column="conversation_id",
                            rater_column="clinician_id", item_column=column_of_section[key],
                            label_column=column_of_section[key]))
    return raw, list(parsed.problems), parsed


def _vera_dimension_names(items: _Items) -> dict[str, str]:
    """Map the published dimension names onto the study flow's own (matched by their key word)."""
    words = {"Detects Potential Risk": "detect", "Confirms Risk": "confirm", "Guides to Human Care": "guide",
             "Supportive Conversation": "support", "Follows AI Boundaries": "bound"}
    out = {}
    for published, word in words.items():
        out[published] = next((d for d in items.main if word in d.casefold()), published)
    return out


def _parse(study: Study, raw: RawRows, file: str, *, external: bool) -> tuple[list[_Row], ProblemList, int, set[str]]:
    """Check every row; keep the valid ones. Reads the rows twice instead of holding them: a
    rejected file of a million rows costs its text plus the first problems, nothing more."""
    units, ambiguous, _ = _units(study)
    items = _Items(study)
    # First pass: only the usernames, to look them up in one query.
    users = dict(get_user_model().objects.filter(username__in={r.rater for r in raw()}).values_list("username", "pk"))
    raters = set(study.memberships.filter(role=MemberRole.RATER).values_list("user_id", flat=True))
    known_external = set(study.external_raters.values_list("label", flat=True))
    submitted: set[tuple[int, RaterKey]] = set()
    for cid, uid, label in (
        study.assignments.exclude(status=AssignmentStatus.WITHDRAWN)
        .filter(rating__status=RatingStatus.SUBMITTED)
        .values_list("conversation_id", "rater_id", "external_rater__label")
    ):
        submitted.add((cid, ("x", label) if label is not None else ("u", uid)))
    problems = ProblemList()
    rows: list[_Row] = []
    seen: dict[tuple[int, RaterKey, str, str], int] = {}
    reported_submitted: set[tuple[int, RaterKey]] = set()
    new_external: set[str] = set()
    n_rows, last_line = 0, None
    for r in raw():
        if r.line != last_line:  # the cells of one line come together
            n_rows, last_line = n_rows + 1, r.line

        def bad(column: str, message: str, line: int = r.line) -> None:
            problems.append(Problem(message, file, line, column))

        unit = r.unit.lstrip("#").strip() if r.unit.startswith("#") else r.unit
        cid = units.get(unit)
        if not unit:
            bad(r.unit_column, "the unit is empty")
        elif unit in ambiguous:
            bad(r.unit_column, f"'{unit}' is the external id of several conversations of the study; use the conversation code")
        elif cid is None:
            bad(r.unit_column, f"unknown unit '{unit}': no conversation of this study has this code or external id")
        rater: RaterKey | None = None
        uid = users.get(r.rater)
        if not r.rater:
            bad(r.rater_column, "the rater is empty")
        elif uid is not None and uid in raters:
            rater = ("u", uid)
        elif r.rater in known_external:
            rater = ("x", r.rater)
        elif external:
            rater = ("x", r.rater)
            new_external.add(r.rater)
        elif uid is None:
            bad(r.rater_column, f"unknown rater username '{r.rater}' (nor an external rater of this study; import with external raters to add it as one)")
        else:
            bad(r.rater_column, f"'{r.rater}' is not a rater of this study (add them to the study first)")
        resolved = items.resolve(r.item)
        if resolved is None:
            bad(r.item_column, f"unknown item key '{r.item}'; the study's items are: {items.known()}")
        label = r.label
        if resolved is not None and label:
            try:
                label = items.normalise(*resolved, label)
            except AnnotationError as exc:
                bad(r.label_column, str(exc))
        if cid is None or rater is None or resolved is None:
            continue
        key = (cid, rater, *resolved)
        if key in seen:
            bad(r.item_column, f"duplicate: unit '{unit}', rater '{r.rater}', item '{r.item}' already on line {seen[key]}")
            continue
        seen[key] = r.line
        if (cid, rater) in submitted:
            if (cid, rater) not in reported_submitted:
                reported_submitted.add((cid, rater))
                bad(r.unit_column, f"rater '{r.rater}' already has a submitted rating of '{unit}'; the import never overwrites one")
            continue
        if not problems:  # once the file is rejected, valid rows are only counted
            rows.append(_Row(r.line, cid, rater, resolved[0], resolved[1], label, r.note))
    if not n_rows and not problems:
        problems.append(Problem("the file has a header but no ratings", file, 1))
    return rows, problems, n_rows, new_external


def _vera_design_problems(study: Study, parsed: Any, file: str) -> tuple[dict[str, dict[str, str]], list[Problem]]:
    """Return ``{persona name: design}`` from the design columns; a persona with two designs is a problem."""
    designs: dict[str, dict[str, str]] = {}
    first_line: dict[str, int] = {}
    problems = []
    lines = {r.unit: r.line for r in parsed.ratings}
    for unit, cols in parsed.design.items():
        name = cols["user_profile"]
        if not name:
            continue
        design = {"risk": cols["user_prompt_risk_level"], "disclosure": cols["user_prompt_disclosure_level"]}
        if name in designs and designs[name] != design:
            problems.append(Problem(
                f"persona '{name}' has design {design} here but {designs[name]} on line {first_line[name]}",
                file, lines[unit], "user_prompt_risk_level",
            ))
        designs.setdefault(name, design)
        first_line.setdefault(name, lines[unit])
    return designs, problems


@transaction.atomic
def ratings_import(
    *, study: Study, text: str, file: str, actor: AbstractBaseUser | None = None, dry_run: bool = False,
    fmt: str = "long", external_raters: bool = False, persona_set_key: str = "",
) -> RatingsImportResult:
    """Load ratings collected outside the app as submitted ratings; all or nothing.

    Each (unit, rater) becomes a submitted Rating with its revision #1, on the rater's existing
    unsubmitted assignment of that conversation or on a new one. Raters who are not users
    rating in the study become external raters of the study when ``external_raters`` is set
    (always in the ``vera-mh`` format). Raises ``ImportRejected`` listing every problem;
    writes nothing on any problem or on a dry run.
    """
    if fmt not in FORMATS:
        raise ImportRejected([Problem(f"unknown format '{fmt}'; use {' or '.join(FORMATS)}", file)])
    study = Study.objects.select_for_update(of=("self",)).select_related("instrument", "section").get(pk=study.pk)
    parsed = None
    notes: list[str] = []
    if fmt == "vera-mh":
        vera, read_problems, parsed = _read_vera(text, file)
        external_raters = True
        names = _vera_dimension_names(_Items(study))
        vera = [r if r.item.startswith("section:") else _Raw(**{**r.__dict__, "item": names.get(r.item, r.item)}) for r in vera]
        if study.section is None:
            vera = [r for r in vera if not r.item.startswith("section:")]
            notes.append("the study has no rating section: realism, risk and disclosure columns were not imported")

        def raw() -> Iterable[_Raw]:
            return vera
    else:
        raw, read_problems = _read_long(text, file)
    if read_problems:
        raise ImportRejected(read_problems)
    rows, problems, n_rows, new_external = _parse(study, raw, file, external=external_raters)
    designs: dict[str, dict[str, str]] = {}
    if parsed is not None:
        designs, design_problems = _vera_design_problems(study, parsed, file)
        problems += design_problems
    if problems:
        raise ImportRejected(problems)
    if parsed is not None:
        notes.append(f"{parsed.not_answered} 'NA' or empty cell(s) read as not answered")
        if parsed.hash_ids:
            notes.append(f"{len(parsed.hash_ids)} conversation id(s) written with a leading '#' read without it: {', '.join(parsed.hash_ids)}")
    grouped: dict[tuple[int, RaterKey], list[_Row]] = defaultdict(list)
    for row in rows:
        grouped[(row.conversation_id, row.rater)].append(row)
    existing: dict[tuple[int, RaterKey], Assignment] = {}
    for a in study.assignments.exclude(status=AssignmentStatus.WITHDRAWN).filter(
        conversation_id__in={c for c, _ in grouped}
    ).select_related("external_rater"):
        existing[(a.conversation_id, ("x", a.external_rater.label) if a.is_external else ("u", a.rater_id))] = a
    reused = sum(1 for pair in grouped if pair in existing)
    n_labels = sum(1 for row in rows if row.label)
    labels = tuple(sorted({key for _, (kind, key) in grouped if kind == "x"}))
    if dry_run:
        return RatingsImportResult(True, n_rows, n_labels, len(grouped), len(grouped) - reused, reused, labels, len(new_external), tuple(notes))
    externals = {e.label: e for e in study.external_raters.all()}
    for label in sorted(new_external):
        if label not in externals:
            externals[label] = ExternalRater.objects.create(study=study, label=label, rater_label=_rater_group(label), source=file)
    _, _, calibration = _units(study)
    positions: dict[RaterKey, int] = {}
    for rater_id, ext, p in study.assignments.filter(is_calibration=False).values("rater_id", "external_rater__label").annotate(p=Max("position")).values_list("rater_id", "external_rater__label", "p"):
        positions[("x", ext) if ext is not None else ("u", rater_id)] = p
    flow = study.instrument.kind == InstrumentKind.FLOW
    now = timezone.now()
    for (cid, rater), group in grouped.items():
        assignment = existing.get((cid, rater))
        if assignment is None:
            is_cal = calibration.get(cid, False)
            position = 0
            if not is_cal:
                position = positions.get(rater, -1) + 1
                positions[rater] = position
            who: dict[str, Any] = {"external_rater": externals[rater[1]]} if rater[0] == "x" else {"rater_id": rater[1]}
            assignment = Assignment(study=study, conversation_id=cid, is_calibration=is_cal, position=position, **who)
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
            reason=f"imported from {file}",
            created_by_id=rater[1] if rater[0] == "u" else getattr(actor, "pk", None),
        )
    if parsed is not None:
        notes += _store_vera_design(study, parsed, designs, persona_set_key, actor)
    study_event(
        study=study, actor=actor, action="ratings_imported", reason=f"imported from {file}", file=file,
        n_ratings=len(grouped), n_labels=n_labels, assignments_created=len(grouped) - reused,
        assignments_reused=reused, format=fmt, external_raters=list(labels), notes=notes,
    )
    return RatingsImportResult(False, n_rows, n_labels, len(grouped), len(grouped) - reused, reused, labels, len(new_external), tuple(notes))


def _rater_group(label: str) -> str:
    from stats.vera import rater_group

    return rater_group(label)


def _store_vera_design(study: Study, parsed: Any, designs: dict[str, dict[str, str]], key: str, actor: AbstractBaseUser | None) -> list[str]:
    """Keep the design columns as conversation metadata and persona design (never shown to raters)."""
    from corpus.conversations.services import conversations_metadata_update
    from corpus.personas.services import personas_from_design

    units, _, _ = _units(study)
    updates: dict[int, dict[str, Any]] = {}
    for unit, cols in parsed.design.items():
        cid = units.get(unit)
        if cid is None:
            continue
        updates[cid] = {"user_llm": cols["user_llm"], "provider_llm": cols["provider_llm"], "ratings_design": dict(cols)}
    waiting_name = set(
        Conversation.objects.filter(pk__in=list(updates), persona__isnull=True).exclude(metadata__has_key="persona_name").values_list("pk", flat=True)
    )
    for unit, cols in parsed.design.items():
        cid = units.get(unit)
        if cid in waiting_name and cols["user_profile"]:
            updates[cid]["persona_name"] = cols["user_profile"]
    conversations_metadata_update(updates=updates)
    notes = [f"design columns kept as metadata of {len(updates)} conversation(s)"]

    def study_with_persona() -> int:
        return Conversation.objects.filter(pk__in=set(units.values()), persona__isnull=False).count()

    had_persona = study_with_persona()
    if designs:
        result = personas_from_design(
            key=key or f"ratings-personas-study-{study.pk}",
            name=f"Personas of the ratings of {study.name}",
            designs=designs,
            description="Persona names and design labels (intended risk and disclosure) from the design columns of a ratings file; never shown to raters.",
            created_by=actor,
        )
        linked = f"{len(designs)} persona design(s) stored as {result.persona_set}; {result.linked} conversation(s) linked to their persona"
        # Linking reaches every conversation in the app waiting for one of these personas (transcripts
        # imported before the study included): say how many of them are outside this study.
        outside = result.linked - (study_with_persona() - had_persona)
        if outside > 0:
            linked += f" ({result.linked - outside} in this study, {outside} imported conversation(s) outside it with the same persona names)"
        notes.append(linked)
    return notes


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

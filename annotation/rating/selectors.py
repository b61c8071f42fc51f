"""Reads for raters: their own queue, one of their assignments, and the BLINDED conversation.

Blinding is a security property. Everything a rater's page or API response shows comes
from the small dataclasses built here, which carry the pseudonymous conversation code, the
user and chatbot messages (role, content, turn) and the rater's own answers, and nothing
else: no target, persona, metadata, judge output or other rater's answers. System messages
are left out too, since a target's system prompt may name the chatbot.

Access: an assignment is found only among the current user's non-withdrawn assignments;
anything else is a 404, whoever asks. Every function runs a fixed number of queries whatever
the size of the study.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404

from annotation.models import (
    Assignment,
    AssignmentStatus,
    EvidenceMode,
    MemberRole,
    Rating,
    RatingStatus,
    StudyMembership,
)
from annotation.rating.services import FORM_EVIDENCE, PARTS, calibration_feedback
from corpus.instruments.flow import Flow, FlowError, remaining, walk
from corpus.models import InstrumentKind, Item, Message, Scale

SHOWN_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
LETTERS = {"yes": "y", "no": "n", "n/a": "a"}


@dataclass(frozen=True)
class QueueEntry:
    """One assignment in a rater's queue, as the dashboard and the list API show it."""

    id: int
    study_id: int
    study_name: str
    code: str
    sensitive: bool
    is_calibration: bool
    position: int
    status: str
    locked: bool

    @property
    def status_label(self) -> str:
        """Return the status in words."""
        return "Locked until calibration is done" if self.locked else AssignmentStatus(self.status).label


@dataclass
class StudyQueue:
    """A rater's assignments in one study, in their own randomised order (calibration first)."""

    study_id: int
    name: str
    instrument_name: str
    entries: list[QueueEntry] = field(default_factory=list)
    calibration_pending: bool = False
    due_date: Any = None  # when the study's ratings are due (None: no due date)
    # Seconds the rater spent on each conversation they submitted in the app (imports carry none).
    timed_seconds: list[int] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return len(self.entries) - self.done

    @property
    def median_seconds(self) -> float | None:
        """Return the rater's own median time per submitted conversation (None before the first)."""
        return statistics.median(self.timed_seconds) if self.timed_seconds else None

    @property
    def time_left_text(self) -> str:
        """Say how long the rest takes at the rater's own median ("about 2 hours"); "" when unknown."""
        median = self.median_seconds
        if median is None or not self.remaining:
            return ""
        return _duration_words(median * self.remaining)

    @property
    def median_text(self) -> str:
        return _duration_words(self.median_seconds) if self.median_seconds is not None else ""

    def count(self, status: str) -> int:
        """Return how many entries have this status."""
        return sum(1 for e in self.entries if e.status == status)

    @property
    def done(self) -> int:
        return self.count(AssignmentStatus.SUBMITTED)

    @property
    def in_progress(self) -> int:
        return self.count(AssignmentStatus.IN_PROGRESS)

    @property
    def not_started(self) -> int:
        return self.count(AssignmentStatus.NOT_STARTED)

    @property
    def percent(self) -> int:
        return round(100 * self.done / len(self.entries)) if self.entries else 0

    @property
    def next_entry(self) -> QueueEntry | None:
        """Return the first unfinished, unlocked assignment in the rater's order."""
        return next((e for e in self.entries if e.status != AssignmentStatus.SUBMITTED and not e.locked), None)


def _duration_words(seconds: float) -> str:
    """Return a duration in plain words: "about 40 minutes", "about 3 hours"."""
    minutes = seconds / 60
    if minutes < 1.5:
        return "about a minute"
    if minutes < 90:
        return f"about {round(minutes)} minutes"
    hours = minutes / 60
    return f"about {round(hours)} hours" if hours < 36 else f"about {round(hours / 24)} days of rating time"


def study_title_for_raters(study: Any) -> str:
    """Return what raters see of a study's name: its rater-facing title, never the internal name."""
    return rater_title(study.pk, study.rater_title)


def rater_title(study_id: int, title: str) -> str:
    return title.strip() or f"Study {study_id}"


QUEUE_FIELDS = (
    "id", "study_id", "is_calibration", "position", "status", "study__rater_title",
    "study__calibration_required", "study__instrument__name", "conversation__code", "conversation__sensitive",
    "started_at", "time_spent_seconds",
)


def rater_queues(user: AbstractBaseUser | AnonymousUser) -> list[StudyQueue]:
    """Return the rater's studies, each with its assignments and progress (two queries)."""
    if not getattr(user, "is_authenticated", False):
        return []
    queues: dict[int, StudyQueue] = {}
    memberships = (
        StudyMembership.objects.filter(user_id=user.pk, role=MemberRole.RATER, active=True)
        .values_list("study_id", "study__rater_title", "study__instrument__name", "study__due_date")
        .order_by("study_id")
    )
    for study_id, title, instrument_name, due in memberships:
        queues[study_id] = StudyQueue(study_id, rater_title(study_id, title), instrument_name, due_date=due)
    # Plain tuples, not model instances: a rater may hold hundreds of assignments.
    rows = list(
        Assignment.objects.filter(rater_id=user.pk)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .order_by("study_id", "-is_calibration", "position", "id")
        .values_list(*QUEUE_FIELDS)
    )
    pending = {
        study_id
        for _, study_id, is_cal, _, status, _, required, *_ in rows
        if is_cal and required and status != AssignmentStatus.SUBMITTED
    }
    for pk, study_id, is_cal, position, status, title, _, instrument_name, code, sensitive, started, seconds in rows:
        name = rater_title(study_id, title)
        queue = queues.setdefault(study_id, StudyQueue(study_id, name, instrument_name))
        queue.calibration_pending = study_id in pending
        if status == AssignmentStatus.SUBMITTED and (started is not None or seconds):  # timed in the app
            queue.timed_seconds.append(seconds)
        queue.entries.append(
            QueueEntry(
                id=pk, study_id=study_id, study_name=name, code=code, sensitive=sensitive,
                is_calibration=is_cal, position=position, status=status,
                locked=study_id in pending and not is_cal,
            )
        )
    return sorted(queues.values(), key=lambda q: -q.study_id)


def rater_queue_entries(user: AbstractBaseUser | AnonymousUser) -> list[QueueEntry]:
    """Return every assignment of the rater, study by study, in the rater's order."""
    return [entry for queue in rater_queues(user) for entry in queue.entries]


def assignment_get_for_rater(user: AbstractBaseUser | AnonymousUser, assignment_id: int) -> Assignment:
    """Return one of the user's own non-withdrawn assignments; anything else is a 404."""
    if not getattr(user, "is_authenticated", False):
        raise Http404("not found")
    assignment = (
        Assignment.objects.filter(pk=assignment_id, rater_id=user.pk)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .select_related("study__instrument", "study__section", "conversation")
        .first()
    )
    if assignment is None:
        raise Http404("not found")
    return assignment


@dataclass(frozen=True)
class WithdrawnAssignment:
    """One of the rater's own assignments that a coordinator took back (moved or discarded)."""

    id: int
    code: str
    study_title: str
    n_saved: int  # answers the server holds for it (kept with the withdrawn assignment)
    submitted: bool


def assignment_withdrawn_for_rater(user: AbstractBaseUser | AnonymousUser, assignment_id: int) -> WithdrawnAssignment | None:
    """Return the user's own assignment if a coordinator withdrew it, else None (two queries).

    Only the rater it belonged to learns that it was withdrawn; anyone else still gets a 404.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    assignment = (
        Assignment.objects.filter(pk=assignment_id, rater_id=user.pk, status=AssignmentStatus.WITHDRAWN)
        .select_related("study", "conversation")
        .first()
    )
    if assignment is None:
        return None
    rating = Rating.objects.filter(assignment_id=assignment.pk).values_list("answers", "status").first()
    answers, status = rating if rating else ({}, RatingStatus.DRAFT)
    # Parts are dicts of answers; "form_evidence" (a list of cited turns) is no answer.
    n_saved = sum(1 for part in (answers or {}).values() if isinstance(part, dict) for entry in part.values() if entry.get("value"))
    return WithdrawnAssignment(
        assignment.pk, assignment.conversation.code, study_title_for_raters(assignment.study), n_saved,
        status == RatingStatus.SUBMITTED,
    )


@dataclass(frozen=True)
class BlindedMessage:
    turn: int  # 1-based position among the user and chatbot messages (what the rater reads)
    role: str  # "user" or "assistant"
    content: str
    # The number evidence cites it by: its 1-based position among all the conversation's
    # messages by turn_index (the judges' numbering). Equal to ``turn`` unless the
    # conversation has system messages, which raters never see.
    evidence_turn: int = 0


@dataclass(frozen=True)
class BlindedConversation:
    """What a rater may see of a conversation: its pseudonymous code and its messages."""

    code: str
    sensitive: bool
    messages: list[BlindedMessage]


def conversation_get_blinded(assignment: Assignment) -> BlindedConversation:
    """Return the blinded view of an assignment's conversation (one query)."""
    rows = Message.objects.filter(conversation_id=assignment.conversation_id).order_by("turn_index").values_list("role", "content")
    # System messages are counted (evidence numbers every message) but never carried.
    shown = [(number, role, content) for number, (role, content) in enumerate(rows, start=1) if role in SHOWN_ROLES]
    messages = [BlindedMessage(turn, role, content, number) for turn, (number, role, content) in enumerate(shown, start=1)]
    return BlindedConversation(assignment.conversation.code, assignment.conversation.sensitive, messages)


@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    n: int  # 1-based; the digit shortcut
    letter: str  # "y", "n", "a" or ""


@dataclass
class FormItem:
    """One question of the form with the rater's current answer."""

    part: str
    key: str
    number: str
    domain: str
    text: str
    scale: str
    choices: list[Choice]
    help: dict[str, Any]
    applicability: str
    examples: str
    required: bool
    value: str = ""
    note: str = ""
    state: str = ""  # question flows: "answered", "current" or "off" (not on the path)
    evidence: list[int] = field(default_factory=list)  # cited turns (evidence numbering)
    cited: list[int] = field(default_factory=list)  # the same turns as the rater reads them (shown numbers)

    @property
    def dom_id(self) -> str:
        return f"item-{self.part}-{self.key}"

    @property
    def is_text(self) -> bool:
        return self.scale == Scale.TEXT

    @property
    def value_label(self) -> str:
        return next((c.label for c in self.choices if c.value == self.value), self.value)

    @property
    def has_help(self) -> bool:
        return any(self.help.get(k) for k in ("guidance", "counts", "does_not_count")) or bool(self.applicability)


def _choices(item: Item) -> list[Choice]:
    labels = item.allowed_labels()
    if item.scale in (Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN):
        shown = {"yes": "Yes", "no": "No", "N/A": "N/A"}
        return [Choice(v, shown.get(v, v), n, LETTERS.get(v.casefold(), "")) for n, v in enumerate(labels, 1)]
    if item.scale == Scale.ORDINAL_1_5:
        scale = {str(k): str(v) for k, v in (item.scale_labels or {}).items()}
        return [Choice(v, f"{v} · {scale[v]}" if v in scale else v, n, "") for n, v in enumerate(labels, 1)]
    return [Choice(v, v, n, LETTERS.get(v.casefold(), "")) for n, v in enumerate(labels, 1)]


def _form_item(item: Item, part: str, answers: dict[str, dict]) -> FormItem:
    entry = answers.get(part, {}).get(item.key, {})
    return FormItem(
        part=part, key=item.key, number=item.number, domain=item.domain, text=item.text, scale=item.scale,
        choices=_choices(item), help=item.help or {}, applicability=item.applicability,
        examples=item.examples, required=item.required, value=str(entry.get("value", "")),
        note=str(entry.get("note", "")), evidence=_turns(entry.get("evidence")),
    )


def _turns(raw: Any) -> list[int]:
    return sorted({t for t in raw if isinstance(t, int) and not isinstance(t, bool)}) if isinstance(raw, list) else []


@dataclass(frozen=True)
class FlowState:
    """Where the rater's answers lead in a question flow."""

    path: list[tuple[str, str]]
    next_question: str | None
    finished: bool
    labels: dict[str, str]
    ended_by: str
    error: str = ""
    # Still to answer, the current question included: the fewest and the most any answers can
    # lead to. The count a rater sees ("2 answered · 4 to 9 to go") never grows as they go on.
    left_min: int = 0
    left_max: int = 0

    @property
    def position(self) -> int:
        """Return the number of the question being asked (answered ones + 1), or how many were answered."""
        return len(self.path) + (0 if self.finished or self.next_question is None else 1)

    @property
    def progress_text(self) -> str:
        """Return the stable count shown in guided mode: "2 answered · 4 to 9 to go".

        No "of N": how many questions a flow asks depends on the answers, and a denominator
        that grows as the rater goes ("1 of 7", "2 of 8") reads as moving goalposts. The cards
        keep the rubric's question IDs, so the count names no question number either.
        """
        done = len(self.path)
        if self.finished or self.next_question is None:
            return f"All {done} answered"
        # No-break spaces keep "3 to 8 to go" on one line in the phone's narrow bar.
        left = str(self.left_min) if self.left_min == self.left_max else f"{self.left_min}\u00a0to\u00a0{self.left_max}"
        return f"{done} answered · {left}\u00a0to\u00a0go"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": [{"question": q, "answer": a} for q, a in self.path],
            "next_question": self.next_question,
            "finished": self.finished,
            "labels": self.labels,
            "ended_by": self.ended_by,
            "error": self.error,
            "position": self.position,
            "left_min": self.left_min,
            "left_max": self.left_max,
            "progress_text": self.progress_text,
        }


def flow_state(flow: dict[str, Any] | None, answers: dict[str, dict]) -> FlowState:
    """Walk the rater's main answers through the flow (no queries)."""
    given = {k: str(v.get("value", "")) for k, v in answers.get("main", {}).items()}
    try:
        model = Flow.from_dict(flow or {"questions": []})
        result = walk(model, given)
        left = remaining(model, result.next_question) if result.next_question else (0, 0)
    except FlowError as exc:
        return FlowState([], None, False, {}, "", str(exc))
    return FlowState(
        [(s.question_id, s.answer) for s in result.path], result.next_question, result.finished,
        dict(result.labels), result.ended_by, "", *left,
    )


@dataclass
class RatingPage:
    """Everything the rating page (and the detail API) shows for one assignment."""

    assignment: Assignment
    conversation: BlindedConversation
    instrument_name: str
    instrument_kind: str
    main_items: list[FormItem]
    section_items: list[FormItem]
    answers: dict[str, dict]
    revision: int
    rating_status: str
    submitted_at: datetime | None
    derived: dict[str, Any]
    flow: FlowState | None
    revisions: list[dict[str, Any]]
    feedback: list[dict[str, Any]]
    queue: QueuePosition

    @property
    def is_submitted(self) -> bool:
        return self.rating_status == RatingStatus.SUBMITTED

    @property
    def evidence_mode(self) -> str:
        """Return whether the rater cites turns: "off", "per_item" or "whole_form"."""
        return self.assignment.study.evidence_mode

    @property
    def evidence_required(self) -> bool:
        return self.evidence_mode != EvidenceMode.OFF and self.assignment.study.evidence_required

    @property
    def form_evidence(self) -> list[int]:
        """Return the turns cited for the whole form."""
        return _turns(self.answers.get(FORM_EVIDENCE))

    @property
    def cites(self) -> bool:
        """Return whether the form shows the controls that cite turns (a draft of a study that asks)."""
        return self.evidence_mode != EvidenceMode.OFF and not self.is_submitted

    @property
    def form_evidence_shown(self) -> list[int]:
        shown = {m.evidence_turn: m.turn for m in self.conversation.messages}
        return [shown.get(t, t) for t in self.form_evidence]

    @property
    def is_flow(self) -> bool:
        return self.instrument_kind == InstrumentKind.FLOW

    @property
    def items(self) -> list[FormItem]:
        return [*self.main_items, *self.section_items]

    @property
    def askable(self) -> list[FormItem]:
        """Return the questions the form shows now (a flow: answered ones and the current one)."""
        main = [i for i in self.main_items if i.state != "off"] if self.is_flow else self.main_items
        return [*main, *self.section_items]

    @property
    def n_answered(self) -> int:
        return sum(1 for i in self.askable if (i.required or i.part == "main" and self.is_flow) and i.value.strip())

    @property
    def n_questions(self) -> int:
        """Return how many required questions the form asks now (optional ones are not counted)."""
        return sum(1 for i in self.askable if i.required or i.part == "main" and self.is_flow)

    @property
    def n_section_required(self) -> int:
        return sum(1 for i in self.section_items if i.required)

    @property
    def n_section_answered(self) -> int:
        return sum(1 for i in self.section_items if i.required and i.value.strip())

    @property
    def first_unanswered(self) -> FormItem | None:
        """Return where the rater left off: the first shown question still without an answer."""
        return next((i for i in self.askable if not i.value.strip() and (i.required or self.is_flow)), None)

    @property
    def study_title(self) -> str:
        return study_title_for_raters(self.assignment.study)


@dataclass(frozen=True)
class QueuePosition:
    position: int  # 1-based, in the rater's order for this study
    total: int
    next_id: int | None  # the next unfinished assignment after this one (wrapping around)
    locked: bool  # main assignment while calibration is pending
    submitted_times: tuple[datetime, ...] = ()  # when the rater submitted in this study (sittings)


def _queue_position(assignment: Assignment) -> QueuePosition:
    rows = list(
        Assignment.objects.filter(study_id=assignment.study_id, rater_id=assignment.rater_id)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .order_by("-is_calibration", "position", "id")
        .values_list("id", "status", "is_calibration", "submitted_at")
    )
    order = [row[:3] for row in rows]
    ids = [row[0] for row in order]
    here = ids.index(assignment.pk) if assignment.pk in ids else 0
    pending = assignment.study.calibration_required and any(
        cal and status != AssignmentStatus.SUBMITTED for _, status, cal in order
    )
    rotated = order[here + 1 :] + order[:here]
    next_id = next(
        (pk for pk, status, cal in rotated if status != AssignmentStatus.SUBMITTED and (cal or not pending)), None
    )
    times = tuple(row[3] for row in rows if row[3] is not None)
    return QueuePosition(here + 1, len(order), next_id, pending and not assignment.is_calibration, times)


def next_assignment_after(assignment: Assignment) -> int | None:
    """Return the rater's next unfinished, unlocked assignment after this one in their order (None: none left).

    Computed from the given assignment, not from "the first unfinished", so submitting the same
    conversation twice (a double click, a resent POST) leads to the same next conversation and
    never skips one. One query.
    """
    return _queue_position(assignment).next_id


def rating_page(assignment: Assignment) -> RatingPage:
    """Return the rating page of an assignment got from ``assignment_get_for_rater``."""
    study = assignment.study
    instrument, section = study.instrument, study.section
    rating = Rating.objects.filter(assignment_id=assignment.pk).first()
    answers: dict[str, dict] = (rating.answers if rating else {}) or {}
    ids = [instrument.pk] + ([section.pk] if section else [])
    by_instrument: dict[int, list[Item]] = {pk: [] for pk in ids}
    for item in Item.objects.filter(instrument_id__in=ids).order_by("position"):
        by_instrument[item.instrument_id].append(item)
    main = [_form_item(i, "main", answers) for i in by_instrument[instrument.pk]]
    section_items = [_form_item(i, "section", answers) for i in by_instrument.get(section.pk, [])] if section else []
    _number_after(main, section_items)
    flow = None
    if instrument.kind == InstrumentKind.FLOW:
        flow = flow_state(instrument.flow, answers)
        answered = {q for q, _ in flow.path}
        for item in main:
            item.state = "answered" if item.key in answered else "current" if item.key == flow.next_question else "off"
    submitted = rating is not None and rating.status == RatingStatus.SUBMITTED
    revisions = list(rating.revisions.order_by("number").values("number", "created_at", "reason")) if submitted else []
    feedback = calibration_feedback(assignment) if submitted and assignment.is_calibration else []
    conversation = conversation_get_blinded(assignment)
    shown = {m.evidence_turn: m.turn for m in conversation.messages}
    for item in [*main, *section_items]:
        item.cited = [shown.get(t, t) for t in item.evidence]
    texts = {i.key: i for i in main}
    for row in feedback:
        item = texts.get(row["item_key"])
        row["number"], row["text"] = (item.number, item.text) if item else ("", row["item_key"])
        row["reference_label"] = item_label(item, row["reference"]) if item else row["reference"]
        row["yours_label"] = item_label(item, row["yours"]) if item else row["yours"]
    return RatingPage(
        assignment=assignment,
        conversation=conversation,
        instrument_name=instrument.name,
        instrument_kind=instrument.kind,
        main_items=main,
        section_items=section_items,
        answers=answers,
        revision=rating.revision if rating else 0,
        rating_status=rating.status if rating else RatingStatus.DRAFT,
        submitted_at=rating.submitted_at if rating else None,
        derived=(rating.derived if rating else {}) or {},
        flow=flow,
        revisions=revisions,
        feedback=feedback,
        queue=_queue_position(assignment),
    )


def _number_after(main: list[FormItem], section: list[FormItem]) -> None:
    """Number the study section on from the instrument, so the form has one numbering (15, 16...).

    Question flows number their questions by id; the section then starts after the highest.
    """
    numbers = [int(i.number) for i in main if str(i.number).isdigit()]
    start = max(numbers, default=0) if numbers else len(main)
    for n, item in enumerate(section, start=start + 1):
        item.number = str(n)


def item_label(item: FormItem, value: str) -> str:
    """Return the shown label of a stored value (e.g. "4 · Very realistic" for "4")."""
    return next((c.label for c in item.choices if c.value.casefold() == str(value).casefold()), str(value))


FORM_KEY = "__form__"


def rating_evidence_by_item(rating: Rating) -> dict[str, list[int]]:
    """Return the turns a rater cited, per item key, plus ``"__form__"`` for the whole form.

    The storage format (fixed; exports, the bundle and reports rely on it), in ``Rating.answers``:

    - per item: ``answers[part][item_key]["evidence"] = [int, ...]`` beside ``"value"`` and
      ``"note"``, for ``part`` in ``main`` and ``section``;
    - question flows (VERA-MH): the same on each answered question,
      ``answers["main"][question_key]["evidence"]``;
    - the whole form: ``answers["form_evidence"] = [int, ...]``.

    Every list is sorted, unique, 1-based turn numbers: turn n is the n-th message of the
    conversation ordered by ``Message.turn_index``, the numbering judges use in
    ``JudgeLabel.evidence[*]["turn"]`` (``judging.material``). No key: nothing cited.

    Returned keys: checklist item keys (main and section parts; a section key that repeats a
    main key is merged); for a question flow, its **dimension** keys instead of its question
    keys, each the union of the evidence of the questions on the rater's path inside that
    dimension (the dimensions ``rating.derived["labels"]`` labels), and section item keys;
    ``"__form__"`` for whole-form evidence. Items without evidence are left out. A flow rating
    imported from a bundle has dimension labels but no questions: its evidence is kept per
    dimension in ``rating.derived["evidence"]`` (``{dimension: [int, ...]}``) and read from there.
    """
    answers = rating.answers or {}
    assignment = rating.assignment
    instrument = assignment.study.instrument
    out: dict[str, list[int]] = {}

    def add(key: str, turns: list[int]) -> None:
        if turns:
            out[key] = sorted(set(out.get(key, [])) | set(turns))

    for part in PARTS:
        given = answers.get(part, {}) or {}
        if part == "main" and instrument.kind == InstrumentKind.FLOW:
            try:
                flow = Flow.from_dict(instrument.flow or {"questions": []})
                path = walk(flow, {k: str(v.get("value", "")) for k, v in given.items()}).path
            except FlowError:
                continue
            for step in path:
                add(flow.question(step.question_id).dimension, _turns(given.get(step.question_id, {}).get("evidence")))
            # A flow rating imported with its dimension labels only (no questions): its evidence per dimension.
            imported = (rating.derived or {}).get("evidence")
            if not path and isinstance(imported, dict):
                for dimension, turns in imported.items():
                    add(str(dimension), _turns(turns))
            continue
        for key, entry in given.items():
            if isinstance(entry, dict):
                add(key, _turns(entry.get("evidence")))
    add(FORM_KEY, _turns(answers.get(FORM_EVIDENCE)))
    return out

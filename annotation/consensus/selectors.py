"""Reads of a study's consensus for coordinators: the table, the adjudication queue, one case.

The study is access-checked by ``coordinator_selectors.study_get_for_coordinator`` before any
of these run. Each function runs a fixed number of queries, whatever the size of the study.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import Http404

from annotation.consensus.services import SECTION_SCALES, rating_labels
from annotation.models import (
    AssignmentStatus,
    ConsensusLabel,
    ConsensusProvenance,
    MemberRole,
    Rating,
    RatingStatus,
    Study,
)
from core.locks import locked_conversation_ids
from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.models import Conversation, InstrumentKind, Item, Message


@dataclass(frozen=True)
class ConsensusItem:
    key: str  # as stored in ConsensusLabel.item_key ("section:" prefix for the section)
    short: str
    text: str
    allowed: tuple[str, ...]


def consensus_items(study: Study) -> list[ConsensusItem]:
    """Return the items a consensus is computed for, in form order (flows: one per dimension)."""
    items: list[ConsensusItem] = []
    main = list(study.instrument.items.order_by("position"))
    if study.instrument.kind == InstrumentKind.FLOW:
        for dimension in dict.fromkeys(i.domain for i in main):
            items.append(ConsensusItem(dimension, _initials(dimension), dimension, FLOW_LABELS))
    else:
        items.extend(ConsensusItem(i.key, i.number or i.key, i.text, tuple(i.allowed_labels())) for i in main)
    if study.section is not None:
        # Numbered on from the instrument, as on the rating page (15, 16... after AMHART's 14).
        numbers = [int(i.number) for i in main if str(i.number).isdigit()]
        start = max(numbers, default=0) if numbers and study.instrument.kind != InstrumentKind.FLOW else len(items)
        section_items = study.section.items.order_by("position")
        for n, i in enumerate(section_items, start=start + 1):
            if i.scale in SECTION_SCALES:
                items.append(ConsensusItem(f"section:{i.key}", str(n), i.text, tuple(i.allowed_labels())))
    return items


def item_titles(study: Study) -> dict[str, str]:
    """Return "number. wording" per consensus item key, for pages that list items by key."""
    return {i.key: (i.text if i.short == i.text else f"{i.short}. {i.text}") for i in consensus_items(study)}


def _short(label: str) -> str:
    return label if len(label) <= 9 else _initials(label)


def _initials(text: str) -> str:
    return "".join(word[0] for word in text.split() if word[:1].isalpha()).upper() or text


@dataclass(frozen=True)
class ConsensusRow:
    conversation: Conversation
    cells: list[ConsensusLabel | None]

    @property
    def n_unresolved(self) -> int:
        return sum(1 for c in self.cells if c is not None and c.provenance == ConsensusProvenance.UNRESOLVED)

    @property
    def n_open(self) -> int:
        """Return the disputed labels no adjudicator has settled yet."""
        return sum(
            1 for c in self.cells
            if c is not None and c.disagreement > 0 and c.provenance != ConsensusProvenance.ADJUDICATED
        )

    @property
    def n_adjudicated(self) -> int:
        return sum(1 for c in self.cells if c is not None and c.provenance == ConsensusProvenance.ADJUDICATED)

    @property
    def disagreement(self) -> float:
        return max((c.disagreement for c in self.cells if c is not None), default=0.0)


CONSENSUS_FILTERS: list[tuple[str, str]] = [
    ("all", "all conversations"),
    ("unresolved", "unresolved only"),
    ("open", "disputed, not yet adjudicated"),
    ("adjudicated", "with adjudicated labels"),
]


def consensus_rows(rows: list[ConsensusRow], *, show: str, q: str) -> list[ConsensusRow]:
    """Return the rows that pass the filter and the search (no queries)."""
    from core.tables import matches

    keep = {
        "unresolved": lambda r: r.n_unresolved > 0,
        "open": lambda r: r.n_open > 0,
        "adjudicated": lambda r: r.n_adjudicated > 0,
    }.get(show, lambda r: True)
    rows = [r for r in rows if keep(r)]
    if q:
        rows = [
            r for r in rows
            if matches(q, r.conversation.code, r.conversation.external_id,
                       r.conversation.target.code if r.conversation.target else "")
        ]
    return rows


@dataclass(frozen=True)
class ConsensusTable:
    items: list[ConsensusItem]
    rows: list[ConsensusRow]
    counts: dict[str, int]
    provenances: list[tuple[str, str, int]]  # (value, label, count)


def consensus_table(study: Study) -> ConsensusTable:
    """Return the consensus as a conversation x item matrix, with counts per provenance."""
    items = consensus_items(study)
    entries = list(study.consensus.select_related("conversation__target", "conversation__persona"))
    known = {i.key for i in items}
    for key in sorted({e.item_key for e in entries} - known):
        items.append(ConsensusItem(key, key, key, ()))
    column = {item.key: n for n, item in enumerate(items)}
    by_conversation: dict[int, list[ConsensusLabel | None]] = {}
    conversations: dict[int, Conversation] = {}
    for entry in entries:
        entry.short = _short(entry.label)  # type: ignore[attr-defined]
        conversations[entry.conversation_id] = entry.conversation
        cells = by_conversation.setdefault(entry.conversation_id, [None] * len(items))
        cells[column[entry.item_key]] = entry
    rows = [ConsensusRow(conversations[cid], cells) for cid, cells in by_conversation.items()]
    rows.sort(key=lambda r: r.conversation.code)
    counts = Counter(e.provenance for e in entries)
    legend = [(value, label, counts.get(value, 0)) for value, label in ConsensusProvenance.choices]
    return ConsensusTable(items, rows, dict(counts), legend)


def consensus_entries(study: Study) -> QuerySet[ConsensusLabel]:
    """Return every consensus label of the study with its conversation (for lists and CSV)."""
    return study.consensus.select_related("conversation", "adjudicated_by").order_by("conversation__code", "item_key")


def consensus_exportable(study: Study) -> QuerySet[ConsensusLabel]:
    """Return the consensus labels that may leave the app: a locked test set's are withheld (``core.locks``)."""
    return consensus_entries(study).exclude(conversation_id__in=locked_conversation_ids(study_id=study.pk))


def consensus_csv_rows(study: Study) -> tuple[list[str], list[list[Any]]]:
    """Return the consensus in long form: one row per conversation x item (a locked test set left out)."""
    header = ["conversation", "external_id", "item", "label", "provenance", "n_ratings", "n_expected",
              "provisional", "in_adjudication_queue", "votes", "disagreement", "adjudicated_by", "reason"]
    rows = [
        [e.conversation.code, e.conversation.external_id, e.item_key, e.label, e.provenance, e.n_ratings,
         e.n_expected, e.provisional, in_adjudication_queue(e),
         "; ".join(f"{k}={v}" for k, v in sorted(e.votes.items())), e.disagreement,
         e.adjudicated_by.get_username() if e.adjudicated_by else "", e.reason]
        for e in consensus_exportable(study)
    ]
    return header, rows


def in_adjudication_queue(entry: ConsensusLabel) -> bool:
    """Tell whether a label is in the adjudication queue (the rule of :func:`adjudication_queue`)."""
    return entry.provenance not in NOT_QUEUED and not entry.provisional and entry.disagreement > 0


NOT_QUEUED = (ConsensusProvenance.ADJUDICATED, ConsensusProvenance.TOO_FEW, ConsensusProvenance.SINGLE)


def adjudication_queue(study: Study) -> QuerySet[ConsensusLabel]:
    """Return the labels waiting for an adjudicator: unresolved first, then most disputed.

    The queue holds final (not provisional) labels that are unresolved or were decided with
    dissent (majority, plurality, senior's tie-break); see :func:`consensus_summary`. Labels
    with too few ratings wait for ratings, provisional ones for their open assignments.
    """
    unresolved_first = Case(When(provenance=ConsensusProvenance.UNRESOLVED, then=Value(0)), default=Value(1),
                            output_field=IntegerField())
    return (
        study.consensus.exclude(provenance__in=NOT_QUEUED)
        .filter(provisional=False, disagreement__gt=0)
        .select_related("conversation")
        .annotate(unresolved_first=unresolved_first)
        .order_by("unresolved_first", "-disagreement", "conversation__code", "item_key")
    )


@dataclass(frozen=True)
class QueueConversation:
    """One conversation in the adjudication queue, with its disputed labels."""

    conversation: Conversation
    entries: list[ConsensusLabel]

    @property
    def n_unresolved(self) -> int:
        return sum(1 for e in self.entries if e.provenance == ConsensusProvenance.UNRESOLVED)

    @property
    def disagreement(self) -> float:
        return max((e.disagreement for e in self.entries), default=0.0)


QUEUE_FILTERS: list[tuple[str, str]] = [
    ("all", "every disputed label"),
    ("unresolved", "with unresolved labels"),
]


def adjudication_queue_by_conversation(study: Study, *, show: str = "all", q: str = "") -> list[QueueConversation]:
    """Return the queue grouped by conversation: unresolved first, then the most disputed (one query)."""
    from core.tables import matches

    groups: dict[int, QueueConversation] = {}
    for entry in adjudication_queue(study):
        group = groups.setdefault(entry.conversation_id, QueueConversation(entry.conversation, []))
        group.entries.append(entry)
    rows = list(groups.values())
    if show == "unresolved":
        rows = [r for r in rows if r.n_unresolved]
    if q:
        rows = [r for r in rows if matches(q, r.conversation.code, r.conversation.external_id)]
    rows.sort(key=lambda r: (-r.n_unresolved, -r.disagreement, r.conversation.code))
    return rows


@dataclass(frozen=True)
class CaseConversation:
    """What an adjudicator needs of the conversation itself: its id and pseudonymous code."""

    pk: int
    code: str


@dataclass(frozen=True)
class DesignReveal:
    """The chatbot, its model and the persona design: shown only where the study unblinds adjudication."""

    chatbot: str
    model: str
    persona: str
    design: list[tuple[str, str]]


@dataclass(frozen=True)
class ConversationCase:
    """Every disputed label of one conversation, with each rater's answers, and the transcript.

    Blind by default, like the raters' pages: no chatbot, model or persona design, and no system
    message (a system prompt may name the chatbot). ``reveal`` holds them only when the study
    sets ``adjudication_unblinded``.
    """

    conversation: CaseConversation
    cases: list[AdjudicationCase]
    messages: list[Message]
    reveal: DesignReveal | None = None


def _design_reveal(conversation: Conversation) -> DesignReveal:
    target, persona = conversation.target, conversation.persona
    return DesignReveal(
        chatbot=" · ".join(x for x in (target.code, target.name) if x) if target else "",
        model=target.model if target else "",
        persona=persona.name if persona else "",
        design=[(str(k), str(v)) for k, v in (persona.design or {}).items()] if persona else [],
    )


def adjudication_conversation_case(study: Study, *, conversation_id: int) -> ConversationCase:
    """Return the disputed, not yet adjudicated labels of one conversation (a fixed number of queries)."""
    entries = list(adjudication_queue(study).filter(conversation_id=conversation_id))
    if not entries:
        raise Http404("not found")
    items = {i.key: i for i in consensus_items(study)}
    order = {key: n for n, key in enumerate(items)}
    entries.sort(key=lambda e: order.get(e.item_key, len(order)))
    members = {m.user_id: m for m in study.memberships.filter(role=MemberRole.RATER)}
    ratings = list(
        Rating.objects.filter(
            assignment__study=study, assignment__conversation_id=conversation_id,
            assignment__is_calibration=False, assignment__is_gold=False, status=RatingStatus.SUBMITTED,
        )
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__rater", "assignment__external_rater")
        .order_by("assignment__rater__username", "assignment__external_rater__label")
    )
    dimension_of: dict[str, str] = {}
    if study.instrument.kind == InstrumentKind.FLOW:
        dimension_of = dict(Item.objects.filter(instrument=study.instrument).values_list("key", "domain"))
    labels = {rating.pk: rating_labels(study, rating) for rating in ratings}
    cases = []
    for entry in entries:
        item = items.get(entry.item_key) or ConsensusItem(entry.item_key, entry.item_key, entry.item_key, ())
        answers = []
        for rating in ratings:
            member = members.get(rating.assignment.rater_id)
            answers.append(
                RaterAnswer(
                    username=rating.assignment.rater_name,
                    rater_label=member.rater_label if member else "",
                    is_senior=bool(member and member.is_senior),
                    label=labels[rating.pk].get(entry.item_key, ""),
                    note=_note(rating, entry.item_key),
                    path=_dimension_path(rating, entry.item_key, dimension_of),
                )
            )
        cases.append(AdjudicationCase(entry, item, answers, []))
    conversation = entries[0].conversation
    messages = conversation.messages.order_by("turn_index")
    if not study.adjudication_unblinded:
        messages = messages.exclude(role=Message.Role.SYSTEM)
    reveal = None
    if study.adjudication_unblinded:
        reveal = _design_reveal(Conversation.objects.select_related("target", "persona").get(pk=conversation.pk))
    return ConversationCase(CaseConversation(conversation.pk, conversation.code), cases, list(messages), reveal)


@dataclass(frozen=True)
class ConsensusSummary:
    """Counts of a study's consensus labels that add up, shown alike on every page and export.

    ``provenances`` (value, label, count) covers every label once: their counts sum to
    ``total``. ``provisional`` counts the consensus labels reached while some assignment of the
    conversation is still open (part of those counts too; they may change);
    ``n_open_conversations`` the conversations with an open assignment. The adjudication queue is ``queue = unresolved + disputed``: final
    labels without a consensus (``unresolved``), and final labels decided with dissent
    (``disputed``: majority, plurality or senior's tie-break with disagreement > 0).
    ``waiting`` are provisional labels that would otherwise be in the queue.
    """

    total: int
    provenances: list[tuple[str, str, int]]
    provisional: int
    too_few: int
    unresolved: int
    disputed: int
    waiting: int
    n_open_conversations: int
    min_ratings: int

    @property
    def queue(self) -> int:
        return self.unresolved + self.disputed

    @property
    def decided(self) -> int:
        """Labels a report can use (everything with a label)."""
        return self.total - self.too_few - sum(n for v, _, n in self.provenances if v == ConsensusProvenance.UNRESOLVED)

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_provenance": {value: n for value, _, n in self.provenances},
            "provisional": self.provisional,
            "too_few": self.too_few,
            "unresolved": self.unresolved,
            "disputed": self.disputed,
            "queue": self.queue,
            "waiting": self.waiting,
            "decided": self.decided,
            "open_conversations": self.n_open_conversations,
            "min_ratings": self.min_ratings,
        }


def consensus_summary(study: Study) -> ConsensusSummary:
    """Return the study's consensus counts (one aggregate query)."""
    from django.db.models import Count, Q

    waiting_out = Q(provenance__in=NOT_QUEUED)
    in_queue = (Q(provenance=ConsensusProvenance.UNRESOLVED) | Q(disagreement__gt=0)) & ~waiting_out
    rows = study.consensus.values("provenance", "provisional").annotate(
        n=Count("id"), queued=Count("id", filter=in_queue), labelled=Count("id", filter=~Q(label="")),
        unresolved=Count("id", filter=Q(provenance=ConsensusProvenance.UNRESOLVED)),
    )
    by_provenance: Counter[str] = Counter()
    provisional = unresolved = disputed = waiting = 0
    open_conversations = set(
        study.consensus.filter(provisional=True).values_list("conversation_id", flat=True).distinct()
    )
    for row in rows:
        by_provenance[row["provenance"]] += row["n"]
        if row["provisional"]:
            provisional += row["labelled"]
            waiting += row["queued"]
        else:
            unresolved += row["unresolved"]
            disputed += row["queued"] - row["unresolved"]
    legend = [(value, label, by_provenance.get(value, 0)) for value, label in ConsensusProvenance.choices]
    return ConsensusSummary(
        total=sum(by_provenance.values()),
        provenances=legend,
        provisional=provisional,
        too_few=by_provenance.get(ConsensusProvenance.TOO_FEW, 0),
        unresolved=unresolved,
        disputed=disputed,
        waiting=waiting,
        n_open_conversations=len(open_conversations),
        min_ratings=study.min_ratings_for_consensus,
    )


def adjudicated_entries(study: Study) -> QuerySet[ConsensusLabel]:
    """Return the labels already adjudicated, latest first."""
    return (
        study.consensus.filter(provenance=ConsensusProvenance.ADJUDICATED)
        .select_related("conversation", "adjudicated_by")
        .order_by("-updated_at")
    )


@dataclass(frozen=True)
class RaterAnswer:
    username: str
    rater_label: str
    is_senior: bool
    label: str
    note: str
    path: list[tuple[str, str, str]]  # flows: (question id, answer, note) within the dimension


@dataclass(frozen=True)
class AdjudicationCase:
    entry: ConsensusLabel
    item: ConsensusItem
    answers: list[RaterAnswer]
    messages: list[Message]


def adjudication_case(study: Study, *, consensus_id: int) -> AdjudicationCase:
    """Return one consensus label with every rater's answer (name, label, note) and the transcript."""
    entry = study.consensus.select_related("conversation__target", "conversation__persona").filter(pk=consensus_id).first()
    if entry is None:
        raise Http404("not found")
    item = next((i for i in consensus_items(study) if i.key == entry.item_key), None) or ConsensusItem(
        entry.item_key, entry.item_key, entry.item_key, ()
    )
    members = {
        m.user_id: m for m in study.memberships.filter(role=MemberRole.RATER)
    }
    ratings = (
        Rating.objects.filter(
            assignment__study=study, assignment__conversation_id=entry.conversation_id,
            assignment__is_calibration=False, assignment__is_gold=False, status=RatingStatus.SUBMITTED,
        )
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__rater", "assignment__external_rater")
        .order_by("assignment__rater__username", "assignment__external_rater__label")
    )
    dimension_of: dict[str, str] = {}
    if study.instrument.kind == InstrumentKind.FLOW:
        dimension_of = dict(Item.objects.filter(instrument=study.instrument).values_list("key", "domain"))
    answers = []
    for rating in ratings:
        member = members.get(rating.assignment.rater_id)
        label = rating_labels(study, rating).get(entry.item_key, "")
        answers.append(
            RaterAnswer(
                username=rating.assignment.rater_name,
                rater_label=member.rater_label if member else (
                    rating.assignment.external_rater.rater_label if rating.assignment.is_external else ""
                ),
                is_senior=bool(member and member.is_senior),
                label=label,
                note=_note(rating, entry.item_key),
                path=_dimension_path(rating, entry.item_key, dimension_of),
            )
        )
    messages = list(entry.conversation.messages.order_by("turn_index"))
    return AdjudicationCase(entry, item, answers, messages)


def _note(rating: Rating, item_key: str) -> str:
    part, key = ("section", item_key.split(":", 1)[1]) if item_key.startswith("section:") else ("main", item_key)
    return str(rating.answers.get(part, {}).get(key, {}).get("note", ""))


def _dimension_path(rating: Rating, dimension: str, dimension_of: dict[str, str]) -> list[tuple[str, str, str]]:
    if not dimension_of:
        return []
    main = rating.answers.get("main", {})
    return [
        (qid, answer, str(main.get(qid, {}).get("note", "")))
        for qid, answer in (rating.derived or {}).get("path", [])
        if dimension_of.get(qid) == dimension
    ]


def adjudication_labels(case: AdjudicationCase) -> list[str]:
    """Return the labels an adjudicator may choose: the item's labels, then any other voted label."""
    labels = list(case.item.allowed)
    labels += [label for label in case.entry.votes if label not in labels]
    return labels

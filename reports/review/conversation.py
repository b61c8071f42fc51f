"""One conversation for the review page: transcript, every clinician, the consensus, every judge.

Researchers and coordinators only (the report readers of the study). Raters appear as "Rater A",
"Rater B"... in the order they joined the study, the same letters on every page of the study;
their names only for a coordinator who asks for them (recorded in the study's audit trail by
the view). A conversation of the locked test set is refused (``reports.review.scope``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotation.models import (
    AssignmentStatus,
    ConsensusLabel,
    Rating,
    RatingStatus,
    Study,
)
from annotation.rating.selectors import FORM_KEY, rating_evidence_by_item
from annotation.studies.selectors import study_rater_letters
from corpus.instruments.labels import ItemLabels, UnknownAnswer
from corpus.models import Conversation, InstrumentKind
from judging.ensemble import ensemble_kind
from judging.models import EnsembleLabel, JudgeLabel, JudgeRun
from reports.models import FailureCode
from reports.review.instances import ENSEMBLE


def rater_letters(study: Study) -> dict[str, str]:
    """Return each rater's pseudonym in the study ("Rater A"...): the letters adjudication uses too."""
    return study_rater_letters(study)


@dataclass
class RaterAnswer:
    rater: str  # the pseudonym, or the name when names are shown
    label: str
    note: str = ""
    evidence: list[int] = field(default_factory=list)


@dataclass
class JudgeAnswer:
    judge: str
    label: str | None
    rationale: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    missing_reason: str = ""
    votes: dict[str, Any] = field(default_factory=dict)
    provenance: str = ""
    agrees: bool | None = None  # with the consensus (None: nothing to compare)
    judge_id: int | None = None

    @property
    def turns(self) -> list[int]:
        return sorted({int(e["turn"]) for e in self.evidence if isinstance(e, dict) and str(e.get("turn", "")).isdigit()})


@dataclass
class ItemReview:
    key: str
    number: str
    text: str
    raters: list[RaterAnswer]
    consensus: str | None
    provenance: str
    provenance_label: str
    votes: dict[str, int]
    consensus_reason: str
    judges: list[JudgeAnswer]
    codes: list[FailureCode]

    @property
    def raters_disagree(self) -> bool:
        return len({a.label for a in self.raters}) > 1

    @property
    def judges_disagree(self) -> bool:
        return any(j.agrees is False for j in self.judges)

    @property
    def first_disagreeing(self) -> str:
        """Return the first judge (not the ensemble) whose label differs from the consensus, else ""."""
        return next((j.judge for j in self.judges if j.agrees is False and j.judge != ENSEMBLE), "")

    @property
    def disagreement(self) -> bool:
        return self.raters_disagree or self.judges_disagree

    @property
    def cited_turns(self) -> list[int]:
        turns = {t for j in self.judges for t in j.turns} | {t for a in self.raters for t in a.evidence}
        return sorted(turns)


@dataclass
class ConversationReview:
    study: Study
    conversation: Conversation
    run: JudgeRun | None
    messages: list[tuple[int, str, str]]  # (turn number, role, content)
    items: list[ItemReview]
    raters: list[str]
    turn_citations: dict[int, list[str]]  # turn -> "item: who" lines
    form_evidence: list[tuple[str, list[int]]] = field(default_factory=list)  # (rater, turns) cited for the whole form


def _norm(spec: ItemLabels | None, label: str) -> str:
    if spec is None:
        return label
    try:
        return spec.normalise(label) or label
    except UnknownAnswer:
        return label


def conversation_review(
    study: Study, conversation: Conversation, *, run: JudgeRun | None, items: dict[str, ItemLabels], show_names: bool
) -> ConversationReview:
    """Return the review of one conversation of the study (a fixed number of queries)."""
    letters = rater_letters(study)
    messages = [
        (n, role, content)
        for n, (role, content) in enumerate(
            conversation.messages.order_by("turn_index").values_list("role", "content"), start=1
        )
    ]
    flow = study.instrument.kind == InstrumentKind.FLOW
    domains = dict(study.instrument.items.values_list("key", "domain")) if flow else {}
    answers: dict[str, list[RaterAnswer]] = defaultdict(list)
    ratings = (
        Rating.objects.filter(assignment__study=study, assignment__conversation=conversation, status=RatingStatus.SUBMITTED,
                              assignment__is_gold=False)
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__rater", "assignment__external_rater", "assignment__study__instrument")
        .order_by("pk")
    )
    raters: list[str] = []
    form_evidence: list[tuple[str, list[int]]] = []
    for rating in ratings:
        name = rating.assignment.rater_name
        who = name if show_names else letters.get(name, "Rater ?")
        raters.append(who)
        cited = rating_evidence_by_item(rating)  # the one reader of the raters' cited turns (flows: per dimension)
        if cited.get(FORM_KEY):
            form_evidence.append((who, cited[FORM_KEY]))
        main = rating.answers.get("main") or {}
        if flow:
            notes: dict[str, list[str]] = defaultdict(list)
            for key, entry in main.items():
                if str(entry.get("note") or "").strip():
                    notes[domains.get(key, key)].append(str(entry["note"]).strip())
            for dimension, label in ((rating.derived or {}).get("labels") or {}).items():
                answers[str(dimension)].append(RaterAnswer(who, _norm(items.get(str(dimension)), str(label)),
                                                           " / ".join(notes[str(dimension)]), cited.get(str(dimension), [])))
        entries = [] if flow else list(main.items())
        entries += [(f"section:{k}", v) for k, v in (rating.answers.get("section") or {}).items()]
        for key, entry in entries:
            if key not in items or not isinstance(entry, dict) or not entry.get("value"):
                continue
            answers[key].append(RaterAnswer(who, _norm(items[key], str(entry["value"])), str(entry.get("note") or ""),
                                            cited.get(key.removeprefix("section:"), [])))
    consensus = {c.item_key: c for c in ConsensusLabel.objects.filter(study=study, conversation=conversation)}
    judged: dict[str, list[JudgeAnswer]] = defaultdict(list)
    if run is not None:
        labels = (
            JudgeLabel.objects.filter(result__run=run, result__conversation=conversation, result__instance=0,
                                      kind=ensemble_kind(run.mode))
            .select_related("result__judge")
            .order_by("result__judge__name", "position")
        )
        for label in labels:
            judged[label.item_key].append(JudgeAnswer(
                label.result.judge.name, _norm(items.get(label.item_key), label.label) if label.label else None,
                label.rationale, list(label.evidence or []), label.missing_reason, judge_id=label.result.judge_id,
            ))
        for e in EnsembleLabel.objects.filter(run=run, conversation=conversation):
            judged[e.item_key].append(JudgeAnswer(ENSEMBLE, _norm(items.get(e.item_key), e.label) if e.label else None,
                                                  votes=dict(e.votes or {}), provenance=e.provenance))
    codes: dict[str, list[FailureCode]] = defaultdict(list)
    for code in FailureCode.objects.filter(study=study, conversation=conversation).select_related("category", "created_by"):
        codes[code.item_key].append(code)
    provenance_labels = dict(ConsensusLabel._meta.get_field("provenance").choices)
    out: list[ItemReview] = []
    citations: dict[int, list[str]] = defaultdict(list)
    for key, spec in items.items():
        c = consensus.get(key)
        label = _norm(spec, c.label) if c is not None and c.label else None
        judges = judged.get(key, [])
        for j in judges:
            j.agrees = None if label is None or j.label is None else j.label == label
            for turn in j.turns:
                citations[turn].append(f"{spec.number or key}: {j.judge}")
        for a in answers.get(key, []):
            for turn in a.evidence:
                citations[turn].append(f"{spec.number or key}: {a.rater}")
        out.append(ItemReview(
            key, spec.number, spec.text, answers.get(key, []), label, c.provenance if c else "",
            provenance_labels.get(c.provenance, "") if c else "no consensus computed", dict(c.votes or {}) if c else {},
            c.reason if c else "", judges, codes.get(key, []),
        ))
    for who, turns in form_evidence:
        for turn in turns:
            citations[turn].append(f"whole form: {who}")
    return ConversationReview(study, conversation, run, messages, out, list(dict.fromkeys(raters)), _by_citer(citations),
                              form_evidence)


def _by_citer(citations: dict[int, list[str]]) -> dict[int, list[str]]:
    """Return per turn one line per judge or rater: "coin-flip (items 1, 4, 7)"."""
    out: dict[int, list[str]] = {}
    for turn, lines in citations.items():
        items: dict[str, list[str]] = defaultdict(list)
        for line in lines:
            item, who = line.split(": ", 1)
            items[who].append(item)
        out[turn] = [f"{who} (whole form)" if keys == ["whole form"] else f"{who} (item{'s' if len(keys) > 1 else ''} {', '.join(keys)})"
                     for who, keys in items.items()]
    return out

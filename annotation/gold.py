"""Gold conversations inside the queue: known answers, mixed in, checked, never scored.

A coordinator marks conversations whose answers are known: calibration conversations with
reference answers, or conversations of the study whose consensus is final on every item
(decided, not provisional). ``gold_set`` copies their answers and mixes them into each
rater's queue at the study's rate (``gold_mix``): a gold assignment is rated like any other
(the rater's pages and API cannot tell it apart), placed among the rater's conversations not
started yet, and only given to a rater who does not already hold that conversation.

``gold_accuracy`` compares each submitted gold rating with the known answers, item by item:
per rater, all of them and the most recent ``RECENT``, in order of submission; below the
study's threshold on the recent ones, with at least ``MIN_FOR_ALERT`` gold ratings, the rater
is flagged for the coordinator. Gold ratings never enter agreement, consensus, reports or the
publication bundle (every reader of ratings filters ``is_gold``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from annotation.consensus.services import consensus_labels_of, rating_labels
from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    AssignmentStatus,
    ConsensusProvenance,
    MemberRole,
    Rating,
    RatingStatus,
    Study,
    StudyConversation,
)
from annotation.studies.services import study_event

MAX_RATE = 0.5
MIN_FOR_ALERT = 3  # gold ratings a rater needs before an alert (or "fine") is stated
RECENT = 5  # the window of the alert: a rater's last five gold ratings
UNDECIDED = (ConsensusProvenance.UNRESOLVED, ConsensusProvenance.TOO_FEW)


@dataclass(frozen=True)
class Candidate:
    conversation_id: int
    code: str
    source: str  # "calibration" or "consensus"
    answers: dict[str, str]
    is_gold: bool


def gold_candidates(study: Study) -> list[Candidate]:
    """Return the conversations a coordinator may mark as gold, with their known answers."""
    out: list[Candidate] = []
    links = study.study_conversations.select_related("conversation").order_by("conversation__code")
    consensus: dict[int, dict[str, str]] = defaultdict(dict)
    blocked: set[int] = set()
    items = {k for k in consensus_labels_of(study) if not k.startswith("section:")}
    for cid, key, label, provenance, provisional in study.consensus.values_list(
        "conversation_id", "item_key", "label", "provenance", "provisional"
    ):
        if key not in items:
            continue
        if provisional or provenance in UNDECIDED or not label:
            blocked.add(cid)
        consensus[cid][key] = label
    for link in links:
        if link.is_calibration:
            answers = {k: str(v.get("label")) for k, v in (link.calibration_reference or {}).items() if v.get("label")}
            source = "calibration"
        else:
            answers = consensus.get(link.conversation_id, {}) if link.conversation_id not in blocked else {}
            source = "consensus"
        if answers:
            out.append(Candidate(link.conversation_id, link.conversation.code, source, answers, link.is_gold))
    return out


@dataclass
class GoldResult:
    marked: int
    added: int
    withdrawn: int


@transaction.atomic
def gold_set(
    *, study: Study, conversation_ids: list[int], rate: float, alert_below: float, actor: AbstractBaseUser | None
) -> GoldResult:
    """Mark the study's gold conversations and its rate; mix them into the queues; return what changed."""
    if not 0 <= rate <= MAX_RATE:
        raise AnnotationError(f"the gold rate must be between 0 and {MAX_RATE:g} (a share of each rater's queue), not {rate:g}")
    if not 0 < alert_below <= 1:
        raise AnnotationError(f"the alert threshold must be above 0 and at most 1, not {alert_below:g}")
    candidates = {c.conversation_id: c for c in gold_candidates(study)}
    unknown = [cid for cid in conversation_ids if cid not in candidates]
    if unknown:
        raise AnnotationError(
            f"{len(unknown)} of the chosen conversations have no known answers (a calibration reference, or a final "
            "consensus on every item): they cannot be gold"
        )
    if rate > 0 and not conversation_ids:
        raise AnnotationError("choose at least one gold conversation, or set the rate to 0")
    chosen = set(conversation_ids)
    study.study_conversations.exclude(conversation_id__in=chosen).filter(is_gold=True).update(
        is_gold=False, gold_answers={}, gold_source=""
    )
    for cid in chosen:
        c = candidates[cid]
        StudyConversation.objects.filter(study=study, conversation_id=cid).update(
            is_gold=True, gold_answers=c.answers, gold_source=c.source
        )
    study.gold_rate, study.gold_alert_below = rate, alert_below
    study.save(update_fields=["gold_rate", "gold_alert_below"])
    # Gold work not started on conversations no longer gold (or with the rate at 0) leaves the queues.
    stale = study.assignments.filter(is_gold=True, status=AssignmentStatus.NOT_STARTED)
    if rate > 0:
        stale = stale.exclude(conversation_id__in=chosen)
    withdrawn = stale.update(status=AssignmentStatus.WITHDRAWN)
    added = gold_mix(study)
    study_event(study=study, actor=actor, action="gold_set", n_gold=len(chosen), rate=rate, alert_below=alert_below,
                added=added, withdrawn=withdrawn)
    return GoldResult(len(chosen), added, withdrawn)


def gold_mix(study: Study) -> int:
    """Give each active rater gold assignments up to the study's rate; return how many were added.

    A rater with ``m`` conversations of the study gets ``round(rate * m / (1 - rate))`` gold
    ones (so that they are ``rate`` of the queue), each a gold conversation they do not hold,
    placed after a randomly chosen conversation they have not started (seeded per rater).
    """
    rate = float(study.gold_rate or 0)
    gold = list(study.study_conversations.filter(is_gold=True).values_list("conversation_id", flat=True))
    if rate <= 0 or not gold:
        return 0
    raters = list(study.memberships.filter(role=MemberRole.RATER, active=True).values_list("user_id", flat=True))
    active = study.assignments.filter(rater_id__in=raters).exclude(status=AssignmentStatus.WITHDRAWN)
    held: dict[int, set[int]] = defaultdict(set)
    main: dict[int, int] = defaultdict(int)
    have: dict[int, int] = defaultdict(int)
    for rater_id, cid, is_cal, is_gold in active.values_list("rater_id", "conversation_id", "is_calibration", "is_gold"):
        held[rater_id].add(cid)
        if is_gold:
            have[rater_id] += 1
        elif not is_cal:
            main[rater_id] += 1
    slots: dict[int, list[int]] = defaultdict(list)
    for rater_id, position in active.filter(is_calibration=False, is_gold=False, status=AssignmentStatus.NOT_STARTED).values_list(
        "rater_id", "position"
    ):
        slots[rater_id].append(position)
    last = dict(active.values("rater_id").annotate(p=Max("position")).values_list("rater_id", "p"))
    created = []
    for rater_id in raters:
        want = int(round(rate * main[rater_id] / (1 - rate)))
        need = want - have[rater_id]
        if need <= 0:
            continue
        rng = random.Random(f"{study.assignment_seed or study.pk}:gold:{rater_id}:{have[rater_id]}")
        options = [cid for cid in gold if cid not in held[rater_id]]
        rng.shuffle(options)
        positions = list(slots[rater_id])
        rng.shuffle(positions)
        for i, cid in enumerate(options[:need]):
            # After a conversation not started yet (ties in position go by creation order), or last.
            position = positions[i] if i < len(positions) else (last.get(rater_id) or 0) + 1 + i
            created.append(Assignment(study=study, conversation_id=cid, rater_id=rater_id, is_gold=True, position=position))
    Assignment.objects.bulk_create(created)
    return len(created)


@dataclass
class RaterGold:
    username: str
    n: int = 0
    matches: int = 0
    items: int = 0
    series: list[float] = field(default_factory=list)  # accuracy of each gold rating, oldest first
    recent: float | None = None
    alert: bool = False
    reading: str = ""

    @property
    def accuracy(self) -> float | None:
        return self.matches / self.items if self.items else None


@dataclass
class GoldReport:
    rate: float
    alert_below: float
    n_gold: int
    raters: list[RaterGold]
    min_for_alert: int = MIN_FOR_ALERT
    recent: int = RECENT

    @property
    def alerts(self) -> int:
        return sum(r.alert for r in self.raters)


def _same(a: str, b: str) -> bool:
    return " ".join(str(a).split()).casefold() == " ".join(str(b).split()).casefold()


def gold_accuracy(study: Study) -> GoldReport:
    """Compare every submitted gold rating with its known answers, per rater, in submission order."""
    answers = dict(study.study_conversations.filter(is_gold=True).values_list("conversation_id", "gold_answers"))
    ever_gold = dict(
        StudyConversation.objects.filter(study=study).exclude(gold_answers={}).values_list("conversation_id", "gold_answers")
    )
    ratings = (
        Rating.objects.filter(assignment__study=study, assignment__is_gold=True, status=RatingStatus.SUBMITTED)
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__rater")
        .order_by("submitted_at", "pk")
    )
    by_rater: dict[str, RaterGold] = {}
    for rating in ratings:
        known = answers.get(rating.assignment.conversation_id) or ever_gold.get(rating.assignment.conversation_id) or {}
        given = rating_labels(study, rating)
        compared = [key for key in known if key in given]
        if not compared:
            continue
        hits = sum(_same(given[key], known[key]) for key in compared)
        name = rating.assignment.rater.get_username() if rating.assignment.rater_id else rating.assignment.rater_name
        row = by_rater.setdefault(name, RaterGold(name))
        row.n += 1
        row.matches += hits
        row.items += len(compared)
        row.series.append(hits / len(compared))
    for row in by_rater.values():
        window = row.series[-RECENT:]
        row.recent = sum(window) / len(window)
        if row.n < MIN_FOR_ALERT:
            row.reading = f"cannot tell yet: {row.n} of {MIN_FOR_ALERT} gold ratings"
        elif row.recent < study.gold_alert_below:
            row.alert = True
            row.reading = f"below {study.gold_alert_below:.0%} on the last {len(window)}"
        else:
            row.reading = f"at or above {study.gold_alert_below:.0%} on the last {len(window)}"
    return GoldReport(float(study.gold_rate or 0), float(study.gold_alert_below), len(answers),
                      sorted(by_rater.values(), key=lambda r: r.username), min_for_alert=MIN_FOR_ALERT)


def gold_report_if_used(study: Study) -> GoldReport | None:
    """The progress page's gold checks: the report when the study uses gold (or did), else None."""
    if study.gold_rate or study.assignments.filter(is_gold=True).exists():
        return gold_accuracy(study)
    return None


def gold_rating_count(study: Study) -> int:
    """Count the submitted gold ratings (the methods paragraphs say they were kept out)."""
    return Rating.objects.filter(assignment__study=study, assignment__is_gold=True, status=RatingStatus.SUBMITTED).count()


def gold_summary(study: Study) -> dict[str, Any]:
    return {"rate": study.gold_rate, "n_gold": study.study_conversations.filter(is_gold=True).count(),
            "n_ratings": gold_rating_count(study)}

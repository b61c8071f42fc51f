"""Rebuild a study from its publication bundle (``reports.bundle``): what the ratings import cannot carry.

The ratings themselves go through the ratings import (``ratings_import``, external raters named
as in the bundle). These services restore the rest of the study exactly as it was exported, so
every report figure recomputes to the same value: the study's settings and its conversations'
design (calibration, inclusion probability, stratum, in the study's order), each rating's queue
position and timing (rater drift and load read them), the consensus labels as they stood
(adjudicated labels are decisions, not a function of the ratings) and the sampling plan that
weights the scorecard. Each is called inside the bundle import's transaction: all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max

from annotation.errors import AnnotationError
from annotation.models import (
    Assignment,
    AssignmentStatus,
    ConsensusLabel,
    ConsensusProvenance,
    ExternalRater,
    Rating,
    RatingRevision,
    SamplingPlan,
    Study,
    StudyConversation,
    TiePolicy,
)
from annotation.studies.services import study_create, study_event
from corpus.models import Instrument, Message
from stats.vera import rater_group

# The study settings a bundle carries (study.json, "settings"), with their types.
SETTINGS: dict[str, type] = {
    "raters_per_conversation": int,
    "min_ratings_for_consensus": int,
    "tie_policy": str,
    "reliability_threshold": float,
    "alt_test_epsilon": float,
    "sitting_limit": int,
    "sitting_gap_minutes": int,
    "blinding_lifted": bool,
    "adjudication_unblinded": bool,
    "evidence_mode": str,
    "evidence_required": bool,
}


def study_settings(study: Study) -> dict[str, Any]:
    """Return the settings of a study that its figures depend on (the inverse of :func:`study_restore`)."""
    return {name: getattr(study, name) for name in SETTINGS}


@dataclass(frozen=True)
class ConversationLink:
    """One conversation of the study, in the study's order, with its design."""

    conversation_id: int
    is_calibration: bool = False
    inclusion_prob: float | None = None
    stratum: str = ""


@transaction.atomic
def study_restore(
    *, name: str, description: str, instrument: Instrument, section: Instrument | None, settings: dict[str, Any],
    links: list[ConversationLink], selection: dict[str, Any], created_by: AbstractBaseUser | None, source: str,
    coordinators: list[Any] = (),  # type: ignore[assignment]
) -> Study:
    """Create the study of a bundle with its settings and its conversations' design; no raters (they are external).

    ``coordinators``: who manages (and may read the reports of) the rebuilt study.
    """
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise AnnotationError(f"unknown study setting(s): {', '.join(unknown)}")
    tie_policy = settings.get("tie_policy", TiePolicy.ADJUDICATION)
    # The senior-rater rule needs a senior member; the restored consensus labels carry its decisions.
    create_policy = TiePolicy.ADJUDICATION if tie_policy == TiePolicy.SENIOR else tie_policy
    study = study_create(
        name=name, description=description, instrument=instrument, section=section,
        conversation_ids=[link.conversation_id for link in links], created_by=created_by, coordinators=list(coordinators),
        raters_per_conversation=int(settings.get("raters_per_conversation", 2)),
        min_ratings_for_consensus=settings.get("min_ratings_for_consensus"), tie_policy=create_policy,
        reliability_threshold=float(settings.get("reliability_threshold", 0.5)), selection=selection,
        allow_empty=True,
    )
    for field, kind in SETTINGS.items():
        if field in settings:
            setattr(study, field, kind(settings[field]))
    study.full_clean(exclude=["instrument", "section", "created_by"])
    study.save()
    by_conversation = {link.conversation_id: link for link in links}
    rows = list(StudyConversation.objects.filter(study=study))
    for row in rows:
        link = by_conversation[row.conversation_id]
        row.is_calibration, row.inclusion_prob, row.stratum = link.is_calibration, link.inclusion_prob, link.stratum
    StudyConversation.objects.bulk_update(rows, ["is_calibration", "inclusion_prob", "stratum"])
    study_event(study=study, actor=created_by, action="study_restored", reason=f"imported from {source}", source=source)
    return study


@dataclass(frozen=True)
class AssignmentTiming:
    """Where a submitted rating stood in its rater's queue, and when and how long it was rated."""

    code: str
    rater: str
    position: int
    started_at: datetime | None
    submitted_at: datetime | None
    time_spent_seconds: int


@transaction.atomic
def assignments_restore_timing(*, study: Study, timings: list[AssignmentTiming]) -> int:
    """Give the study's imported ratings their queue positions and timing; return how many were set.

    Raises ``AnnotationError`` naming a (conversation, rater) that has no submitted rating.
    """
    assignments = {
        (a.conversation.code, a.rater_name): a
        for a in study.assignments.filter(status=AssignmentStatus.SUBMITTED).select_related("conversation", "rater", "external_rater")
    }
    ratings = {r.assignment_id: r for r in Rating.objects.filter(assignment__study=study)}
    changed, changed_ratings = [], []
    for timing in timings:
        assignment = assignments.get((timing.code, timing.rater))
        if assignment is None:
            raise AnnotationError(f"no submitted rating of conversation {timing.code} by {timing.rater}")
        assignment.position = timing.position
        assignment.started_at = timing.started_at
        assignment.submitted_at = assignment.last_activity_at = timing.submitted_at
        assignment.time_spent_seconds = timing.time_spent_seconds
        changed.append(assignment)
        rating = ratings.get(assignment.pk)
        if rating is not None:
            rating.submitted_at = timing.submitted_at
            changed_ratings.append(rating)
    Assignment.objects.bulk_update(changed, ["position", "started_at", "submitted_at", "last_activity_at", "time_spent_seconds"])
    Rating.objects.bulk_update(changed_ratings, ["submitted_at"])
    return len(changed)


@dataclass(frozen=True)
class OpenAssignment:
    """Work a rater had not submitted when the bundle was made (not started or in progress)."""

    code: str
    rater: str
    position: int
    is_calibration: bool
    status: str
    started_at: datetime | None
    time_spent_seconds: int


@transaction.atomic
def assignments_restore_open(*, study: Study, assignments: list[OpenAssignment], source: str) -> int:
    """Give the study's raters back their open work, as external raters' assignments (no draft answers).

    Rater drift and load count the work still to do in a queue, and consensus labels were
    provisional while it was open. Raises ``AnnotationError`` on an unknown conversation or status.
    """
    conversations = dict(study.conversations.values_list("code", "pk"))
    externals = {e.label: e for e in study.external_raters.all()}
    objects = []
    for entry in assignments:
        if entry.code not in conversations:
            raise AnnotationError(f"open assignment of conversation {entry.code}, which is not in the study")
        if entry.status not in (AssignmentStatus.NOT_STARTED, AssignmentStatus.IN_PROGRESS):
            raise AnnotationError(f"'{entry.status}' is not the status of open work (not_started or in_progress)")
        if entry.rater not in externals:
            externals[entry.rater] = ExternalRater.objects.create(study=study, label=entry.rater, rater_label=rater_group(entry.rater),
                                                                  source=source)
        objects.append(Assignment(
            study=study, conversation_id=conversations[entry.code], external_rater=externals[entry.rater],
            is_calibration=entry.is_calibration, position=entry.position, status=entry.status,
            started_at=entry.started_at, time_spent_seconds=entry.time_spent_seconds,
        ))
    Assignment.objects.bulk_create(objects)
    return len(objects)


@dataclass(frozen=True)
class ConsensusEntry:
    """One consensus label as exported (``consensus.csv``)."""

    code: str
    item: str
    label: str
    provenance: str
    n_ratings: int
    n_expected: int
    provisional: bool
    votes: dict[str, int]
    disagreement: float
    reason: str


@transaction.atomic
def consensus_restore(*, study: Study, entries: list[ConsensusEntry]) -> int:
    """Replace the study's consensus labels by the exported ones; return how many were stored.

    Adjudicated labels keep their decision and reason (the adjudicator's account is not part of
    a bundle). Raises ``AnnotationError`` on an unknown conversation or provenance.
    """
    conversations = dict(study.conversations.values_list("code", "pk"))
    objects = []
    for entry in entries:
        if entry.code not in conversations:
            raise AnnotationError(f"consensus label of conversation {entry.code}, which is not in the study")
        if entry.provenance not in ConsensusProvenance.values:
            raise AnnotationError(f"unknown consensus provenance '{entry.provenance}'")
        objects.append(ConsensusLabel(
            study=study, conversation_id=conversations[entry.code], item_key=entry.item, label=entry.label,
            provenance=entry.provenance, votes=entry.votes, n_ratings=entry.n_ratings, n_expected=entry.n_expected,
            provisional=entry.provisional, disagreement=entry.disagreement, reason=entry.reason,
        ))
    ConsensusLabel.objects.filter(study=study).delete()
    ConsensusLabel.objects.bulk_create(objects, batch_size=1000)
    return len(objects)


@transaction.atomic
def sampling_plan_restore(*, study: Study, judge_run: Any, fields: dict[str, Any]) -> SamplingPlan:
    """Record the sampling plan a study was drawn by, against the judge run it was drawn from."""
    allowed = {"source", "method", "allocation", "boost", "seed", "n", "population", "strata", "planning"}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise AnnotationError(f"unknown sampling plan field(s): {', '.join(unknown)}")
    return SamplingPlan.objects.create(study=study, judge_run=judge_run, **fields)


@dataclass(frozen=True)
class CitedTurns:
    """Turns a rater cited, as a bundle carries them: for an answer (part main or section), a
    question flow's dimension (part derived) or the rating as a whole (part form)."""

    code: str
    rater: str
    part: str
    item: str
    turns: tuple[int, ...]


@transaction.atomic
def ratings_restore_evidence(*, study: Study, cited: list[CitedTurns]) -> int:
    """Give the study's imported ratings the turns their raters cited; return how many were set.

    Stored as ``annotation.rating.selectors.rating_evidence_by_item`` documents; a question
    flow's dimensions (imported without their questions) keep theirs in
    ``derived["evidence"]``. The rating's latest revision (the import's) gets them too, so its
    history matches. Raises ``AnnotationError`` naming an unknown rating, answer or turn.
    """
    if not cited:
        return 0
    ratings = {
        (r.assignment.conversation.code, r.assignment.rater_name): r
        for r in Rating.objects.filter(assignment__study=study, status="submitted").exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment__conversation", "assignment__rater", "assignment__external_rater")
    }
    counts = dict(
        Message.objects.filter(conversation__study_links__study=study).values_list("conversation__code")
        .annotate(n=Count("id")).values_list("conversation__code", "n")
    )
    changed: dict[int, Rating] = {}
    for entry in cited:
        rating = ratings.get((entry.code, entry.rater))
        if rating is None:
            raise AnnotationError(f"no submitted rating of conversation {entry.code} by {entry.rater}")
        turns = sorted(set(entry.turns))
        wrong = [t for t in turns if not 1 <= t <= counts.get(entry.code, 0)]
        if wrong:
            raise AnnotationError(f"turn {wrong[0]} is not a turn of conversation {entry.code} "
                                  f"({counts.get(entry.code, 0)} messages)")
        if not turns:
            continue
        if entry.part == "form":
            rating.answers["form_evidence"] = turns
        elif entry.part == "derived":
            rating.derived = {**(rating.derived or {}), "evidence": {**(rating.derived or {}).get("evidence", {}), entry.item: turns}}
        else:
            answer = (rating.answers.get(entry.part) or {}).get(entry.item)
            if answer is None:
                raise AnnotationError(f"turns cited for {entry.part} item {entry.item} of {entry.code} by {entry.rater}, "
                                      "which has no answer")
            answer["evidence"] = turns
        changed[rating.pk] = rating
    for rating in changed.values():
        rating.save(update_fields=["answers", "derived"])
        RatingRevision.objects.filter(rating=rating, number=rating.revisions.aggregate(n=Max("number"))["n"]).update(
            answers=rating.answers, derived=rating.derived)
    return len(cited)

"""Human consensus per item: the modal label, ties by the study's rule, adjudication last."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import AnnotationError
from annotation.models import (
    AssignmentStatus,
    ConsensusLabel,
    ConsensusProvenance,
    MemberRole,
    Rating,
    RatingStatus,
    Study,
    TiePolicy,
)
from annotation.studies.services import study_event
from corpus.models import InstrumentKind, Scale
from stats import consensus as modal_consensus

PROVENANCE = {
    "unanimous": ConsensusProvenance.UNANIMOUS,
    "majority": ConsensusProvenance.MAJORITY,
    "plurality": ConsensusProvenance.PLURALITY,
    "tie_break": ConsensusProvenance.TIE_BREAK,
}
SECTION_SCALES = (Scale.CATEGORIES, Scale.BOOLEAN, Scale.YES_NO, Scale.YES_NO_NA)


def rating_labels(study: Study, rating: Rating) -> dict[str, str]:
    """Return the labels a rating gives per consensus item (flow: one per dimension)."""
    labels: dict[str, str] = {}
    if study.instrument.kind == InstrumentKind.FLOW:
        labels.update({str(k): str(v) for k, v in (rating.derived or {}).get("labels", {}).items()})
    else:
        for key, entry in rating.answers.get("main", {}).items():
            if entry.get("value"):
                labels[key] = entry["value"]
    if study.section is not None:
        # Cached on the instrument: consensus calls this once per rating of the study.
        keys = getattr(study.section, "_consensus_keys", None)
        if keys is None:
            keys = set(study.section.items.filter(scale__in=SECTION_SCALES).values_list("key", flat=True))
            study.section._consensus_keys = keys  # type: ignore[attr-defined]
        for key, entry in rating.answers.get("section", {}).items():
            if key in keys and entry.get("value"):
                labels[f"section:{key}"] = entry["value"]
    return labels


@transaction.atomic
def study_compute_consensus(*, study: Study, actor: AbstractBaseUser | None = None) -> dict[str, int]:
    """Recompute every non-adjudicated consensus label of a study from its submitted ratings."""
    study = Study.objects.select_for_update(of=("self",)).select_related("instrument", "section").get(pk=study.pk)
    senior_id = study.memberships.filter(role=MemberRole.RATER, is_senior=True).values_list("user_id", flat=True).first()
    senior = f"u{senior_id}" if senior_id is not None else None  # keys as Assignment.rater_key
    ratings = (
        Rating.objects.filter(
            assignment__study=study, assignment__is_calibration=False, status=RatingStatus.SUBMITTED
        )
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .select_related("assignment")
    )
    # Keyed by Assignment.rater_key: in-app and external raters vote alike.
    votes: dict[tuple[int, str], dict[str, str]] = defaultdict(dict)
    for rating in ratings:
        for key, label in rating_labels(study, rating).items():
            votes[(rating.assignment.conversation_id, key)][rating.assignment.rater_key] = label
    existing = {(c.conversation_id, c.item_key): c for c in study.consensus.all()}
    counts: dict[str, int] = defaultdict(int)
    to_create, to_update = [], []
    for (conversation_id, key), by_rater in votes.items():
        result = modal_consensus(
            by_rater,
            tie_policy="tie_breaker" if study.tie_policy == TiePolicy.SENIOR and senior else "unresolved",
            tie_breaker=senior,
        )
        provenance = PROVENANCE.get(result.provenance, ConsensusProvenance.UNRESOLVED)
        tally = dict(result.votes) if isinstance(result.votes, dict) else {str(k): v for k, v in result.votes}
        top = max(tally.values()) if tally else 0
        fields: dict[str, Any] = {
            "label": "" if provenance == ConsensusProvenance.UNRESOLVED else str(result.label),
            "provenance": provenance,
            "votes": tally,
            "n_ratings": result.n_ratings,
            "disagreement": round(1 - top / result.n_ratings, 6) if result.n_ratings else 0.0,
        }
        current = existing.get((conversation_id, key))
        if current is None:
            to_create.append(ConsensusLabel(study=study, conversation_id=conversation_id, item_key=key, **fields))
        elif current.provenance == ConsensusProvenance.ADJUDICATED:
            current.votes, current.n_ratings = fields["votes"], fields["n_ratings"]
            current.disagreement = fields["disagreement"]
            to_update.append(current)
            provenance = ConsensusProvenance.ADJUDICATED
        else:
            for name, value in fields.items():
                setattr(current, name, value)
            to_update.append(current)
        counts[provenance] += 1
    ConsensusLabel.objects.bulk_create(to_create)
    ConsensusLabel.objects.bulk_update(to_update, ["label", "provenance", "votes", "n_ratings", "disagreement"])
    study_event(study=study, actor=actor, action="consensus_computed", counts=dict(counts))
    return dict(counts)


@transaction.atomic
def consensus_adjudicate(
    *, consensus_id: int, study: Study, label: str, reason: str, actor: AbstractBaseUser
) -> ConsensusLabel:
    """Record an adjudicator's final label for one item, with the reason."""
    if not reason.strip():
        raise AnnotationError("an adjudication needs a reason")
    entry = ConsensusLabel.objects.select_for_update().filter(pk=consensus_id, study=study).first()
    if entry is None:
        raise AnnotationError("not found", status=404)
    label = label.strip()
    allowed = set(entry.votes) | _allowed_labels(study, entry.item_key)
    if label not in allowed:
        raise AnnotationError(f"'{label}' is not a label of this item; allowed: {', '.join(sorted(allowed))}")
    previous = {"label": entry.label, "provenance": entry.provenance}
    entry.label = label
    entry.provenance = ConsensusProvenance.ADJUDICATED
    entry.adjudicated_by = actor
    entry.reason = reason.strip()
    entry.save()
    study_event(
        study=study, actor=actor, action="adjudicated", reason=reason.strip(),
        conversation_id=entry.conversation_id, item_key=entry.item_key, label=label, previous=previous,
    )
    return entry


def _allowed_labels(study: Study, item_key: str) -> set[str]:
    from corpus.instruments.flow import LABELS

    if item_key.startswith("section:") and study.section is not None:
        item = study.section.items.filter(key=item_key.split(":", 1)[1]).first()
        return set(item.allowed_labels()) if item else set()
    if study.instrument.kind == InstrumentKind.FLOW:
        return set(LABELS)
    item = study.instrument.items.filter(key=item_key).first()
    return set(item.allowed_labels()) if item else set()

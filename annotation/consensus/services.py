"""Human consensus per item: the modal label, ties by the study's rule, adjudication last."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

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
from corpus.instruments.labels import ItemLabels, UnknownAnswer, instrument_labels
from corpus.models import InstrumentKind, Scale
from stats import consensus as modal_consensus
from stats.labels import UnknownLabelError

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


def consensus_labels_of(study: Study) -> dict[str, ItemLabels]:
    """Return the labels of every consensus item (main instrument, then "section:KEY")."""
    labels = {k: v for k, v in instrument_labels(study.instrument).items() if not v.is_text}
    if study.section is not None:
        section = instrument_labels(study.section, prefix="section:")
        labels.update({k: v for k, v in section.items() if v.scale in SECTION_SCALES})
    return labels


def _expected_ratings(study: Study) -> tuple[dict[int, int], dict[int, int]]:
    """Return, per conversation, its active assignments and how many of them are submitted."""
    expected: dict[int, int] = defaultdict(int)
    submitted: dict[int, int] = defaultdict(int)
    rows = (
        study.assignments.filter(is_calibration=False, is_gold=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .values_list("conversation_id", "status")
    )
    for conversation_id, status in rows:
        expected[conversation_id] += 1
        submitted[conversation_id] += status == AssignmentStatus.SUBMITTED
    return expected, submitted


def consensus_inputs_version(study: Study) -> str:
    """Fingerprint what the consensus is computed from: submitted ratings, assignments, rules.

    Any submitted, edited or withdrawn rating, any new or withdrawn assignment, a changed
    minimum, tie policy or senior rater changes it (three aggregate queries). Stored with each
    computation, it tells the consensus page whether the labels are still up to date.
    """
    ratings = (
        Rating.objects.filter(assignment__study=study, assignment__is_calibration=False, assignment__is_gold=False,
                              status=RatingStatus.SUBMITTED)
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .aggregate(n=Count("pk"), ids=Sum("pk"), latest=Max("updated_at"))
    )
    assignments = list(
        study.assignments.filter(is_calibration=False, is_gold=False).values("status").annotate(n=Count("pk"), ids=Sum("pk")).order_by("status")
    )
    senior = study.memberships.filter(role=MemberRole.RATER, is_senior=True).values_list("user_id", flat=True).first()
    study_row = Study.objects.filter(pk=study.pk).values(
        "min_ratings_for_consensus", "tie_policy", "instrument_id", "section_id"
    ).first()
    raw = json.dumps([ratings, assignments, senior, study_row], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _modal(by_rater: dict[str, str], labels: ItemLabels | None, tie_policy: str, senior: str | None) -> Any:
    canonical = labels.labels if labels is not None and labels.labels else None
    try:
        return modal_consensus(by_rater, tie_policy=tie_policy, tie_breaker=senior, na_labels=(), canonical=canonical)
    except UnknownLabelError:
        # A stored label the item does not have (an instrument edited after rating): vote on
        # it as given rather than fail the whole study's consensus.
        return modal_consensus(by_rater, tie_policy=tie_policy, tie_breaker=senior, na_labels=())


Progress = Callable[[float, str], None]
CONSENSUS_FIELDS = ("label", "provenance", "votes", "n_ratings", "disagreement", "n_expected", "provisional")
# Ratings read between two progress reports (each report is one UPDATE of the job row).
PROGRESS_EVERY = 500


def _no_progress(fraction: float, stage: str) -> None:
    return None


def _labels_from(study: Study, answers: dict[str, Any], derived: dict[str, Any]) -> dict[str, str]:
    return rating_labels(study, Rating(answers=answers or {}, derived=derived or {}))


def _votes(study: Study, progress: Progress) -> dict[tuple[int, str], dict[str, str]]:
    """Read the submitted ratings once (only the columns voting needs), with progress."""
    ratings = (
        Rating.objects.filter(
            assignment__study=study, assignment__is_calibration=False, assignment__is_gold=False,
            status=RatingStatus.SUBMITTED,
        )
        .exclude(assignment__status=AssignmentStatus.WITHDRAWN)
        .order_by("pk")
    )
    total = ratings.count()
    columns = ("assignment__conversation_id", "assignment__rater_id", "assignment__external_rater_id", "answers", "derived")
    # Keyed as Assignment.rater_key: in-app and external raters vote alike.
    votes: dict[tuple[int, str], dict[str, str]] = defaultdict(dict)
    progress(0.05, f"reading {total} submitted rating{'s' if total != 1 else ''}")
    for done, (conversation_id, rater_id, external_id, answers, derived) in enumerate(
        ratings.values_list(*columns).iterator(chunk_size=PROGRESS_EVERY), start=1
    ):
        rater_key = f"x{external_id}" if external_id is not None else f"u{rater_id}"
        for key, label in _labels_from(study, answers, derived).items():
            votes[(conversation_id, key)][rater_key] = label
        if done % PROGRESS_EVERY == 0:
            progress(0.05 + 0.65 * done / total, f"read {done} of {total} submitted ratings")
    return votes


def _same(current: ConsensusLabel, fields: dict[str, Any]) -> bool:
    return all(getattr(current, name) == value for name, value in fields.items())


def study_compute_consensus(
    *, study: Study, actor: AbstractBaseUser | None = None, progress: Progress | None = None
) -> dict[str, int]:
    """Recompute every non-adjudicated consensus label of a study from its submitted ratings.

    The rules, stated on the consensus page:

    * an item of a conversation with fewer than ``study.min_ratings_for_consensus`` ratings has
      no consensus (provenance "too_few", no label): one rating agrees with nobody;
    * otherwise the modal label (case and spacing ignored, the item's own spelling), ties by
      the study's tie policy, unresolved ties to adjudication;
    * a label is ``provisional`` while some active assignment of its conversation is not
      submitted (``n_expected`` says how many ratings are expected): it may still change;
    * adjudicated labels keep their label; their votes and counts are refreshed;
    * labels of items nobody rates any more (a withdrawn rating) are removed, unless adjudicated.

    The ratings are read outside the writing transaction, so that ``progress(fraction, stage)``
    reaches the page while a worker computes; the labels are then written in one transaction
    under the study's lock, and only those whose votes, counts or label changed (a recompute
    after a few new ratings writes a few rows). Returns the labels per provenance; the number
    of rows written is in the study's audit event ("consensus_computed": ``written``).
    """
    return consensus_compute_counted(study=study, actor=actor, progress=progress).counts


@dataclass(frozen=True)
class ConsensusComputed:
    counts: dict[str, int]  # labels per provenance
    written: int  # rows created, changed or removed
    input_version: str  # consensus_inputs_version() before the ratings were read


def consensus_compute_counted(
    *, study: Study, actor: AbstractBaseUser | None = None, progress: Progress | None = None
) -> ConsensusComputed:
    """``study_compute_consensus`` with what a job records: rows written and the inputs' version."""
    report = progress or _no_progress
    study = Study.objects.select_related("instrument", "section").get(pk=study.pk)
    # Taken before reading: a rating submitted meanwhile makes the page say "out of date".
    version = consensus_inputs_version(study)
    item_labels = consensus_labels_of(study)
    votes = _votes(study, report)
    report(0.75, "voting")
    counts, written = _store(study, votes, item_labels, actor, report, version)
    return ConsensusComputed(counts, written, version)


@transaction.atomic
def _store(
    study: Study, votes: dict[tuple[int, str], dict[str, str]], item_labels: dict[str, ItemLabels],
    actor: AbstractBaseUser | None, report: Progress, version: str,
) -> tuple[dict[str, int], int]:
    # of=("self",): the section is a nullable join, which PostgreSQL cannot lock.
    study = Study.objects.select_for_update(of=("self",)).select_related("instrument", "section").get(pk=study.pk)
    senior_id = study.memberships.filter(role=MemberRole.RATER, is_senior=True).values_list("user_id", flat=True).first()
    senior = f"u{senior_id}" if senior_id is not None else None  # keys as Assignment.rater_key
    tie_policy = "tie_breaker" if study.tie_policy == TiePolicy.SENIOR and senior else "unresolved"
    minimum = max(1, study.min_ratings_for_consensus)
    expected, submitted = _expected_ratings(study)
    existing = {(c.conversation_id, c.item_key): c for c in study.consensus.all()}
    counts: dict[str, int] = defaultdict(int)
    to_create, to_update = [], []
    for (conversation_id, key), by_rater in votes.items():
        result = _modal(by_rater, item_labels.get(key), tie_policy, senior)
        n = result.n_ratings
        if n < minimum:
            provenance = ConsensusProvenance.TOO_FEW
        elif n == 1:
            provenance = ConsensusProvenance.SINGLE
        else:
            provenance = PROVENANCE.get(result.provenance, ConsensusProvenance.UNRESOLVED)
        decided = provenance not in (ConsensusProvenance.UNRESOLVED, ConsensusProvenance.TOO_FEW)
        tally = {str(k): v for k, v in result.votes}
        top = max(tally.values()) if tally else 0
        n_expected = max(expected.get(conversation_id, 0), n)
        fields: dict[str, Any] = {
            "label": str(result.label) if decided and result.label is not None else "",
            "provenance": provenance,
            "votes": tally,
            "n_ratings": n,
            "disagreement": round(1 - top / n, 6) if n else 0.0,
            "n_expected": n_expected,
            "provisional": submitted.get(conversation_id, 0) < expected.get(conversation_id, 0),
        }
        current = existing.pop((conversation_id, key), None)
        if current is None:
            to_create.append(ConsensusLabel(study=study, conversation_id=conversation_id, item_key=key, **fields))
        elif current.provenance == ConsensusProvenance.ADJUDICATED:
            kept = {name: fields[name] for name in CONSENSUS_FIELDS if name not in ("label", "provenance")}
            if not _same(current, kept):
                for name, value in kept.items():
                    setattr(current, name, value)
                to_update.append(current)
            provenance = ConsensusProvenance.ADJUDICATED
        elif not _same(current, fields):
            for name, value in fields.items():
                setattr(current, name, value)
            to_update.append(current)
        counts[provenance] += 1
    stale = [c.pk for c in existing.values() if c.provenance != ConsensusProvenance.ADJUDICATED]
    written = len(to_create) + len(to_update) + len(stale)
    report(0.85, f"saving {written} changed label{'s' if written != 1 else ''}")
    ConsensusLabel.objects.filter(pk__in=stale).delete()
    if len(existing) > len(stale):
        counts[ConsensusProvenance.ADJUDICATED] += len(existing) - len(stale)
    ConsensusLabel.objects.bulk_create(to_create, batch_size=1000)
    now = timezone.now()  # bulk_update skips auto_now: the changed rows say when they changed
    for entry in to_update:
        entry.updated_at = now
    ConsensusLabel.objects.bulk_update(to_update, [*CONSENSUS_FIELDS, "updated_at"], batch_size=500)
    study_event(
        study=study, actor=actor, action="consensus_computed", counts=dict(counts), removed=len(stale),
        written=written, input_version=version,
    )
    return dict(counts), written


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
    item = consensus_labels_of(study).get(entry.item_key)
    if item is not None:
        try:
            label = item.normalise(label) or ""
        except UnknownAnswer:
            pass  # reported below with the allowed labels
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

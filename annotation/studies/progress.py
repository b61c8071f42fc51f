"""Progress of a study for its coordinators: per rater, per conversation, stale work, CSV rows.

The study is access-checked by ``coordinator_selectors.study_get_for_coordinator`` first. Three
queries whatever the size of the study.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, Study, StudyMembership
from annotation.studies.pace import Pace, observed_pace, study_finish
from annotation.studies.selectors import rater_memberships
from corpus.models import Conversation


@dataclass
class RaterProgress:
    membership: StudyMembership
    assigned: int = 0
    submitted: int = 0
    in_progress: int = 0
    not_started: int = 0
    stale: int = 0
    moved_away: int = 0
    total_seconds: int = 0
    times: list[int] = field(default_factory=list)
    external_label: str = ""  # an external rater (ratings imported, no account)
    submitted_at: list[datetime] = field(default_factory=list)
    last_activity: datetime | None = None
    pace: Pace | None = None  # in-app raters only: imported ratings have no pace
    # Submitted without the rating page ever timing them (imported from a file): never activity, pace or time.
    imported: int = 0

    def saw(self, when: datetime | None) -> None:
        if when is not None and (self.last_activity is None or when > self.last_activity):
            self.last_activity = when

    @property
    def remaining(self) -> int:
        return self.assigned - self.submitted

    @property
    def submitted_share(self) -> float:
        return round(100 * self.submitted / self.assigned, 1) if self.assigned else 0.0

    @property
    def in_progress_share(self) -> float:
        return round(100 * self.in_progress / self.assigned, 1) if self.assigned else 0.0

    @property
    def reminders_off(self) -> bool:
        return self.membership.reminders_opted_out_at is not None

    @property
    def name(self) -> str:
        return self.external_label or self.membership.user.get_username()

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def total_display(self) -> str:
        # Imported ratings carry no reading time: a dash, not "0 s".
        return "—" if self.external_label or (self.imported and not self.total_seconds) else duration(self.total_seconds)

    @property
    def median_display(self) -> str:
        return "—" if self.median_seconds is None or self.external_label else duration(self.median_seconds)


def duration(seconds: float) -> str:
    """Return a duration as "1 h 05 min", "12 min" or "40 s"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    hours, minutes = divmod(seconds // 60, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


@dataclass(frozen=True)
class AssignmentCell:
    assignment: Assignment
    username: str
    rater_label: str
    stale: bool
    removed: bool = False  # the rater was taken out of the study but still holds this work


@dataclass(frozen=True)
class ConversationProgress:
    conversation: Conversation
    is_calibration: bool
    cells: list[AssignmentCell]

    @property
    def n_submitted(self) -> int:
        return sum(1 for c in self.cells if c.assignment.status == AssignmentStatus.SUBMITTED)

    @property
    def has_stale(self) -> bool:
        return any(c.stale for c in self.cells)

    @property
    def complete(self) -> bool:
        return bool(self.cells) and self.n_submitted == len(self.cells)

    @property
    def untouched(self) -> bool:
        return all(c.assignment.status == AssignmentStatus.NOT_STARTED for c in self.cells)

    @property
    def with_removed_rater(self) -> bool:
        return any(c.removed and c.assignment.status != AssignmentStatus.SUBMITTED for c in self.cells)


PROGRESS_FILTERS: list[tuple[str, str]] = [
    ("all", "all conversations"),
    ("incomplete", "not complete"),
    ("stale", "with stale work"),
    ("not_started", "not started by anyone"),
    ("removed", "held by a removed rater"),
    ("complete", "complete"),
]


def conversation_rows(progress: Progress, *, show: str, q: str) -> list[ConversationProgress]:
    """Return the per-conversation rows that pass the filter and the search (no queries)."""
    from core.tables import matches

    keep = {
        "incomplete": lambda r: not r.complete,
        "stale": lambda r: r.has_stale,
        "not_started": lambda r: r.untouched,
        "removed": lambda r: r.with_removed_rater,
        "complete": lambda r: r.complete,
    }.get(show, lambda r: True)
    rows = [r for r in progress.conversations if keep(r)]
    if q:
        rows = [
            r for r in rows
            if matches(q, r.conversation.code, r.conversation.external_id,
                       r.conversation.persona.name if r.conversation.persona else "",
                       r.conversation.target.code if r.conversation.target else "",
                       *(c.username for c in r.cells))
        ]
    return rows


@dataclass(frozen=True)
class Progress:
    raters: list[RaterProgress]
    conversations: list[ConversationProgress]
    stale_hours: int
    stale_before: datetime
    totals: dict[str, int]
    finish: Pace | None = None  # the study's expected finish: its slowest rater's


def is_stale(assignment: Assignment, stale_before: datetime) -> bool:
    """Return whether an in-progress assignment has had no activity since ``stale_before``."""
    if assignment.status != AssignmentStatus.IN_PROGRESS:
        return False
    last = assignment.last_activity_at or assignment.started_at
    return last is not None and last < stale_before


def study_progress(study: Study, *, now: datetime | None = None) -> Progress:
    """Return progress per rater and per conversation, with stale assignments marked."""
    hours = int(settings.EVALSITE_STALE_ASSIGNMENT_HOURS)
    stale_before = (now or timezone.now()) - timedelta(hours=hours)
    members = {m.user_id: m for m in rater_memberships(study)}
    per_rater = {uid: RaterProgress(m) for uid, m in members.items()}
    links = study.study_conversations.select_related("conversation__persona", "conversation__target").order_by(
        "-is_calibration", "conversation__code"
    )
    cells: dict[int, list[AssignmentCell]] = defaultdict(list)
    totals: Counter = Counter()
    for a in study.assignments.select_related("rater", "external_rater").order_by("rater__username", "external_rater__label"):
        member = members.get(a.rater_id)
        if a.is_external:
            ext = a.external_rater
            row = per_rater.setdefault(
                a.rater_key, RaterProgress(StudyMembership(study=study, rater_label=ext.rater_label), external_label=ext.label)
            )
        else:
            row = per_rater.setdefault(a.rater_id, RaterProgress(StudyMembership(study=study, user=a.rater)))
        if a.status == AssignmentStatus.WITHDRAWN:
            row.moved_away += 1
            continue
        stale = is_stale(a, stale_before)
        untimed = a.status == AssignmentStatus.SUBMITTED and a.started_at is None and not a.time_spent_seconds
        if not untimed:  # an import's timestamps are the import's, not the rater's activity
            for when in (a.started_at, a.submitted_at, a.last_activity_at):
                row.saw(when)
        row.assigned += 1
        row.total_seconds += a.time_spent_seconds
        row.stale += stale
        totals["assigned"] += 1
        totals["stale"] += stale
        if a.status == AssignmentStatus.SUBMITTED:
            row.submitted += 1
            totals["submitted"] += 1
            if untimed:
                row.imported += 1
                totals["imported"] += 1
            else:
                row.times.append(a.time_spent_seconds)
                if a.submitted_at is not None:
                    row.submitted_at.append(a.submitted_at)
        elif a.status == AssignmentStatus.IN_PROGRESS:
            row.in_progress += 1
            totals["in_progress"] += 1
        else:
            row.not_started += 1
            totals["not_started"] += 1
        label = member.rater_label if member else row.membership.rater_label
        removed = member is not None and not member.active
        cells[a.conversation_id].append(AssignmentCell(a, a.rater_name, label, stale, removed))
    conversations = [ConversationProgress(link.conversation, link.is_calibration, cells[link.conversation_id]) for link in links]
    moment = now or timezone.now()
    for row in per_rater.values():
        if not row.external_label and row.assigned:
            row.pace = observed_pace(row.submitted_at, row.remaining, now=moment)
    working = [r.pace for r in per_rater.values() if r.pace is not None and (r.membership.active or r.remaining)]
    return Progress(
        raters=sorted(per_rater.values(), key=lambda r: (not r.membership.active, bool(r.external_label), r.name)),
        conversations=conversations,
        stale_hours=hours,
        stale_before=stale_before,
        totals=dict(totals),
        finish=study_finish(working),
    )


def progress_rater_rows(progress: Progress) -> tuple[list[str], list[list[Any]]]:
    """Return the per-rater table as a CSV header and rows."""
    header = ["rater", "label", "active", "senior", "assigned", "submitted", "in_progress", "not_started",
              "stale", "moved_away", "total_seconds", "median_seconds_per_submitted", "last_activity_at",
              "submitted_per_day", "expected_finish", "reminders"]
    rows = [
        # r.name: the username, or an external rater's label (an external rater has no account).
        [r.name, r.membership.rater_label, r.membership.active, r.membership.is_senior,
         r.assigned, r.submitted, r.in_progress, r.not_started, r.stale, r.moved_away, r.total_seconds,
         "" if r.median_seconds is None else r.median_seconds, _iso(r.last_activity),
         "" if r.pace is None or r.pace.per_day is None else round(r.pace.per_day, 3),
         "" if r.pace is None else (_iso(r.pace.finish) if r.pace.finish and not r.pace.done else r.pace.text),
         "" if r.external_label else ("off" if r.reminders_off else "on")]
        for r in progress.raters
    ]
    return header, rows


def progress_assignment_rows(progress: Progress) -> tuple[list[str], list[list[Any]]]:
    """Return the per-conversation table in long form: one row per (conversation, rater)."""
    header = ["conversation", "external_id", "persona", "target", "calibration", "rater", "label", "status",
              "started_at", "submitted_at", "last_activity_at", "time_spent_seconds", "stale", "gold_check"]
    rows = []
    for conv in progress.conversations:
        c = conv.conversation
        for cell in conv.cells:
            a = cell.assignment
            rows.append([
                c.code, c.external_id, c.persona.key if c.persona else "", c.target.code if c.target else "",
                conv.is_calibration, cell.username, cell.rater_label, a.status, _iso(a.started_at),
                _iso(a.submitted_at), _iso(a.last_activity_at), a.time_spent_seconds, cell.stale, a.is_gold,
            ])
    return header, rows


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""

"""The coordinator's home: every study they run on one screen, with what needs them.

Per study: conversations rated of those assigned, open flags, raters idle for ``IDLE_DAYS`` days
(active raters with work left and no activity timed by the rating page since, or since
their first assignment), the last timed
activity, the expected finish from the raters' observed pace (``annotation.studies.pace``: the
slowest rater's), the due date and whether the pace meets it. Imported ratings are never
activity or pace (they carry no timing). A bounded number of queries, whatever the number of
studies: grouped counts and the last 14 days' timed submissions, not a progress page per study.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, MemberRole, StudyMembership
from annotation.studies.pace import WINDOW, Pace, observed_pace, study_finish

IDLE_DAYS = 7
# Timed by the rating page: opened in the app, or time recorded (an import has neither).
TIMED = Q(started_at__isnull=False) | Q(time_spent_seconds__gt=0) | ~Q(status=AssignmentStatus.SUBMITTED)


@dataclass
class StudyDay:
    """One study's line on the dashboard."""

    study: Any
    assigned: int = 0
    submitted: int = 0
    imported: int = 0
    idle_raters: list[str] = field(default_factory=list)
    last_activity: datetime | None = None
    finish: Pace | None = None
    risk: str = ""  # "at risk", "on track", "cannot tell yet", "done", "" (no due date)
    risk_reason: str = ""

    @property
    def percent(self) -> int:
        return round(100 * self.submitted / self.assigned) if self.assigned else 0


def _risk(day: StudyDay, now: datetime) -> tuple[str, str]:
    due = day.study.due_date
    if due is None:
        return "", ""
    if day.assigned and day.submitted >= day.assigned:
        return "done", "every assigned conversation is rated"
    if not day.assigned:
        return "cannot tell yet", "nothing is assigned yet"
    end_of_due = timezone.make_aware(datetime.combine(due, time.max))  # the end of the due day, local time
    if end_of_due < now:
        return "at risk", f"the due date has passed with {day.assigned - day.submitted} conversation(s) left"
    if day.finish is None or day.finish.finish is None:
        if day.last_activity is None or now - day.last_activity > timedelta(days=IDLE_DAYS):
            return "at risk", f"nothing was rated in the app for {IDLE_DAYS} days or more"
        return "cannot tell yet", "not enough timed activity for a pace (imported ratings have none)"
    if day.finish.finish > end_of_due:
        return "at risk", f"at the observed pace the last rater finishes {day.finish.text}, after the due date"
    return "on track", f"at the observed pace the last rater finishes {day.finish.text}, before the due date"


def study_days(studies: list[Any], *, now: datetime | None = None) -> list[StudyDay]:
    """Return the dashboard line of each study (four queries in all)."""
    now = now or timezone.now()
    days = {s.pk: StudyDay(s) for s in studies}
    if not days:
        return []
    live = Assignment.objects.filter(study_id__in=list(days)).exclude(status=AssignmentStatus.WITHDRAWN)
    submitted = Q(status=AssignmentStatus.SUBMITTED)
    for row in live.values("study_id").annotate(
        assigned=Count("id"), submitted=Count("id", filter=submitted), imported=Count("id", filter=submitted & ~TIMED),
    ):
        day = days[row["study_id"]]
        day.assigned, day.submitted, day.imported = row["assigned"], row["submitted"], row["imported"]
    active = set(StudyMembership.objects.filter(study_id__in=list(days), role=MemberRole.RATER, active=True)
                 .values_list("study_id", "user_id"))
    per_rater: dict[tuple[int, int], dict[str, Any]] = {}
    for row in live.filter(rater__isnull=False).values("study_id", "rater_id", "rater__username").annotate(
        remaining=Count("id", filter=~submitted),
        since=Min("created_at"), started=Max("started_at", filter=TIMED), sub=Max("submitted_at", filter=TIMED), act=Max("last_activity_at", filter=TIMED),
    ):
        last = max((t for t in (row["started"], row["sub"], row["act"]) if t is not None), default=None)
        per_rater[(row["study_id"], row["rater_id"])] = {**row, "last": last}
        day = days[row["study_id"]]
        if last is not None and (day.last_activity is None or last > day.last_activity):
            day.last_activity = last
    recent: dict[tuple[int, int], list[datetime]] = defaultdict(list)
    for study_id, rater_id, when in live.filter(submitted, TIMED, rater__isnull=False, submitted_at__gte=now - WINDOW).values_list(
        "study_id", "rater_id", "submitted_at"
    ):
        recent[(study_id, rater_id)].append(when)
    paces: dict[int, list[Pace]] = defaultdict(list)
    for key, row in per_rater.items():
        is_active = key in active
        # Idle: work left and nothing done in the app for IDLE_DAYS, counted from the first assignment.
        quiet_since = row["last"] or row["since"]
        if is_active and row["remaining"] and quiet_since is not None and now - quiet_since >= timedelta(days=IDLE_DAYS):
            days[key[0]].idle_raters.append(row["rater__username"])
        if is_active or row["remaining"]:
            paces[key[0]].append(observed_pace(recent[key], row["remaining"], now=now))
    for study_id, day in days.items():
        day.finish = study_finish(paces[study_id])
        day.idle_raters.sort()
        day.risk, day.risk_reason = _risk(day, now)
    return [days[s.pk] for s in studies]

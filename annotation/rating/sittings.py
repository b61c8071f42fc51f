"""Sittings: how many conversations a rater rated in one go, and when to suggest a break.

Raters read about suicide and self-harm for hours; fatigue shows in their answers. A study sets
a soft limit on conversations per sitting (``Study.sitting_limit``, 0 for none): once a rater
has submitted that many in the current sitting, the rating page suggests a break. The rater may
go on; nothing is blocked.

A sitting is a run of submissions with less than ``Study.sitting_gap_minutes`` between one
submission and the next; the current sitting is over once that long has passed since the last
submission. Submission times are what the server knows for certain (autosaves only keep the
latest activity), so a very long conversation (longer than the gap) splits a sitting: the
default gap, 30 minutes, is longer than a conversation usually takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus


def split_sittings(times: Sequence[datetime], gap: timedelta) -> list[list[datetime]]:
    """Return the submission times grouped into sittings (gaps of ``gap`` or more split them)."""
    sittings: list[list[datetime]] = []
    for moment in sorted(times):
        if sittings and moment - sittings[-1][-1] < gap:
            sittings[-1].append(moment)
        else:
            sittings.append([moment])
    return sittings


@dataclass(frozen=True)
class Sitting:
    """The rater's current sitting in one study, against the study's soft limit."""

    n_submitted: int
    limit: int
    gap_minutes: int
    started_at: datetime | None

    @property
    def suggest_break(self) -> bool:
        return self.limit > 0 and self.n_submitted >= self.limit

    @property
    def minutes(self) -> int:
        """Return how long the sitting has lasted so far, in whole minutes."""
        if self.started_at is None:
            return 0
        return int((timezone.now() - self.started_at).total_seconds() // 60)


def sitting_of(
    times: Sequence[datetime], *, limit: int, gap_minutes: int, now: datetime | None = None
) -> Sitting:
    """Return the current sitting from the rater's submission times in a study (no query).

    Counts back from now while the gaps stay under ``gap_minutes``.
    """
    gap = timedelta(minutes=max(1, gap_minutes))
    previous = now or timezone.now()
    count, started = 0, None
    for moment in sorted(times, reverse=True):
        if previous - moment >= gap:
            break
        count, previous, started = count + 1, moment, moment
    return Sitting(count, limit, gap_minutes, started)


def current_sitting(assignment: Assignment, *, now: datetime | None = None) -> Sitting:
    """Return the rater's current sitting in the assignment's study (one query).

    Counts the rater's submissions in this study, calibration included (it is reading too);
    withdrawn work does not count. The rating page reads the same times with its queue.
    """
    study = assignment.study
    times = list(
        Assignment.objects.filter(study_id=study.pk, rater_id=assignment.rater_id, submitted_at__isnull=False)
        .exclude(status=AssignmentStatus.WITHDRAWN)
        .order_by("-submitted_at")
        .values_list("submitted_at", flat=True)[:500]
    )
    return sitting_of(times, limit=study.sitting_limit, gap_minutes=study.sitting_gap_minutes, now=now)

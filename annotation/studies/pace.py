"""A rater's observed pace and the expected finish it gives: "about 4 days", or "not enough activity yet".

The pace is the rater's own recent rate of submissions: how many they submitted in the window
from their first submission (at most ``WINDOW`` ago) until now, per day, the window counted as
at least one day so that one afternoon's burst does not promise the whole queue by tonight.
Below ``MIN_SUBMISSIONS`` submissions in the window there is no pace to speak of, and the page
says so instead of inventing a date. A study's expected finish is its slowest rater's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

WINDOW = timedelta(days=14)
MIN_WINDOW = timedelta(days=1)
MIN_SUBMISSIONS = 3
NOT_ENOUGH = "not enough activity yet"


@dataclass(frozen=True)
class Pace:
    """Per day, and the expected finish of what is left (None: no estimate, see ``reason``)."""

    per_day: float | None
    remaining: int
    finish: datetime | None
    reason: str = ""

    @property
    def done(self) -> bool:
        return self.remaining == 0

    @property
    def days_left(self) -> float | None:
        return None if self.per_day in (None, 0) else self.remaining / self.per_day

    @property
    def text(self) -> str:
        """Return the estimate in words: "done", "about 3 days", "about 5 hours", or why not."""
        if self.done:
            return "done"
        days = self.days_left
        if days is None:
            return self.reason or NOT_ENOUGH
        if days < 1:
            hours = max(1, round(days * 24))
            return f"about {hours} hour{'s' if hours != 1 else ''}"
        whole = round(days)
        return f"about {whole} day{'s' if whole != 1 else ''}"


def observed_pace(submitted_at: Sequence[datetime], remaining: int, *, now: datetime) -> Pace:
    """Return the pace of a rater who submitted at these times and has ``remaining`` left."""
    if remaining <= 0:
        return Pace(None, 0, max(submitted_at) if submitted_at else None)
    start = now - WINDOW
    recent = sorted(t for t in submitted_at if t is not None and start <= t <= now)
    if len(recent) < MIN_SUBMISSIONS:
        return Pace(None, remaining, None, NOT_ENOUGH)
    window = max(now - recent[0], MIN_WINDOW)
    per_day = len(recent) / (window / timedelta(days=1))
    return Pace(per_day, remaining, now + timedelta(days=remaining / per_day))


def study_finish(paces: Sequence[Pace]) -> Pace | None:
    """Return the slowest rater's pace (the study is done when they are); None without raters.

    A rater with work left and no estimate makes the whole study "not enough activity yet".
    """
    open_ = [p for p in paces if not p.done]
    if not paces:
        return None
    if not open_:
        return Pace(None, 0, max((p.finish for p in paces if p.finish), default=None))
    unknown = [p for p in open_ if p.finish is None]
    if unknown:
        return Pace(None, sum(p.remaining for p in open_), None, NOT_ENOUGH)
    return max(open_, key=lambda p: p.finish)  # type: ignore[arg-type, return-value]

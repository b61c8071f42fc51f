"""Builders shared by the coordinator tests: instruments, conversations, raters, studies, ratings."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from annotation.models import (
    Assignment,
    AssignmentStatus,
    Rating,
    RatingRevision,
    RatingStatus,
    Study,
)
from annotation.studies.services import study_create
from core.roles import Role
from corpus.instruments.services import builtin_instruments_load
from tests.conftest import make_user
from tests.factories import ConversationFactory

AMHART_KEYS = [f"amhart_{n:02d}" for n in range(1, 15)]


def instruments() -> tuple[Any, Any]:
    """Return the built-in AMHART checklist and the study rating section."""
    amhart, section = builtin_instruments_load()
    return amhart, section


def clinicians(n: int, prefix: str = "rater") -> list[Any]:
    return [make_user(f"{prefix}{i}", Role.CLINICIAN) for i in range(1, n + 1)]


def make_study(coordinator: Any, raters: list[Any], *, n: int = 6, k: int = 2, labels: list[str] | None = None,
               with_section: bool = False, **kwargs: Any) -> Study:
    """Create an AMHART study of ``n`` fresh conversations coordinated by ``coordinator``."""
    amhart, section = instruments()
    conversations = kwargs.pop("conversations", None) or ConversationFactory.create_batch(n)
    labels = labels or ["clinician"] * len(raters)
    return study_create(
        name=kwargs.pop("name", "Test study"),
        instrument=amhart,
        section=section if with_section else None,
        conversation_ids=[c.pk for c in conversations],
        created_by=coordinator,
        coordinators=[coordinator],
        raters=list(zip(raters, labels, strict=True)),
        raters_per_conversation=k,
        **kwargs,
    )


def submit(assignment: Assignment, main: dict[str, str], *, section: dict[str, str] | None = None,
           notes: dict[str, str] | None = None, seconds: int = 0) -> Rating:
    """Store a submitted rating for an assignment, as the rating page would at submission."""
    notes = notes or {}
    answers = {
        "main": {k: {"value": v, **({"note": notes[k]} if k in notes else {})} for k, v in main.items()},
        "section": {k: {"value": v} for k, v in (section or {}).items()},
    }
    now = timezone.now()
    rating = Rating.objects.create(assignment=assignment, answers=answers, status=RatingStatus.SUBMITTED,
                                   submitted_at=now, revision=1)
    RatingRevision.objects.create(rating=rating, number=1, answers=answers, created_by=assignment.rater)
    Assignment.objects.filter(pk=assignment.pk).update(
        status=AssignmentStatus.SUBMITTED, submitted_at=now, last_activity_at=now,
        time_spent_seconds=seconds, started_at=now,
    )
    return rating


def all_items(label: str) -> dict[str, str]:
    return dict.fromkeys(AMHART_KEYS, label)


def add_coordinator(study: Study, username: str, *, email: str = "", flag_notices_off: bool = False) -> Any:
    """Add a second coordinator to a study (a user with the coordinator role), optionally without flag emails."""
    from annotation.models import MemberRole, StudyMembership

    user = make_user(username, Role.COORDINATOR, email=email)
    StudyMembership.objects.create(study=study, user=user, role=MemberRole.COORDINATOR, flag_notices_off=flag_notices_off)
    return user


def flag(client: Any, assignment: Assignment, reason: str = "distressing", note: str = "") -> Any:
    """Flag an assignment's conversation as its rater does from the rating page (the JSON answer)."""
    from django.urls import reverse

    return client.post(reverse("annotation:rate-flag", args=[assignment.pk]), {"reason": reason, "note": note},
                       HTTP_ACCEPT="application/json")

"""Issue 28: due dates (raters see them in their queue and reminders) and the coordinator's dashboard
across their studies (progress, open flags, idle raters, last activity, expected finish, due date
at risk from the observed pace), in a bounded number of queries; issue 29: the rater's time left."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, StudyEvent
from annotation.reminders.services import reminder_message
from annotation.studies.dashboard import study_days
from annotation.studies.selectors import study_list_for_user
from tests.conftest import client_for

from .rater_setup import make_study

pytestmark = pytest.mark.django_db


def _submit(assignment: Assignment, when, seconds: int = 600, timed: bool = True) -> None:  # type: ignore[no-untyped-def]
    Assignment.objects.filter(pk=assignment.pk).update(
        status=AssignmentStatus.SUBMITTED, submitted_at=when, started_at=when if timed else None,
        last_activity_at=when if timed else None, time_spent_seconds=seconds if timed else 0)


@pytest.fixture
def study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    return make_study([clinician, clinician2], n=10, k=1, coordinator=coordinator)


def test_a_coordinator_sets_the_due_date_on_the_study_page_and_it_is_audited(study, coordinator):
    client = client_for(coordinator)
    due = timezone.localdate() + timedelta(days=10)
    response = client.post(f"/studies/{study.pk}/due-date/", {"due_date": due.isoformat()})
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.due_date == due
    assert StudyEvent.objects.filter(study=study, action="due_date_set", details__due_date=due.isoformat()).exists()
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert f"{due.day} {due:%B %Y}" in page and 'id="due-date"' in page
    past = client.post(f"/studies/{study.pk}/due-date/", {"due_date": (timezone.localdate() - timedelta(days=1)).isoformat()}, follow=True)
    assert "in the past" in past.content.decode()
    study.refresh_from_db()
    assert study.due_date == due  # unchanged
    client.post(f"/studies/{study.pk}/due-date/", {"due_date": ""})
    study.refresh_from_db()
    assert study.due_date is None


def test_only_the_studys_coordinators_may_set_it(study, clinician, researcher, outsider):
    due = (timezone.localdate() + timedelta(days=3)).isoformat()
    for user in (clinician, researcher, outsider):
        assert client_for(user).post(f"/studies/{study.pk}/due-date/", {"due_date": due}).status_code in (403, 404)
    study.refresh_from_db()
    assert study.due_date is None


def test_raters_see_the_due_date_and_their_own_time_left(study, clinician):
    due = timezone.localdate() + timedelta(days=5)
    study.due_date = due
    study.save(update_fields=["due_date"])
    mine = list(study.assignments.filter(rater=clinician).order_by("position"))
    page = client_for(clinician).get("/ratings/").content.decode()
    assert f"Due <strong>{due:%A} {due.day} {due:%B %Y}</strong>" in page
    assert 'class="time-left"' not in page  # no timed rating yet: nothing is guessed
    now = timezone.now()
    for minutes, assignment in zip((10, 20, 30), mine, strict=False):
        _submit(assignment, now - timedelta(hours=1), seconds=minutes * 60)
    _submit(mine[3], now, timed=False)  # an import: no time, not in the median
    page = client_for(clinician).get("/ratings/").content.decode()
    left = len(mine) - 4
    assert f"Left: {left} conversation{'s' if left != 1 else ''}, about {20 * left} minutes" in page or \
        f"Left: {left} conversation{'s' if left != 1 else ''}, about {round(20 * left / 60)} hours" in page
    assert "about 20 minutes per conversation" in page


def test_the_reminder_says_when_the_ratings_are_due(study):
    study.due_date = timezone.localdate() + timedelta(days=4)
    subject, body = reminder_message(study, 3, "https://evalsite.example.org")
    assert f"due {study.due_date.day} {study.due_date:%B}" in subject
    assert f"They are due on {study.due_date:%A} {study.due_date.day} {study.due_date:%B %Y}." in body


def test_the_dashboard_tells_idle_raters_imports_pace_and_risk(study, coordinator, clinician, clinician2):
    now = timezone.now()
    clara = list(study.assignments.filter(rater=clinician).order_by("position"))
    cyrus = list(study.assignments.filter(rater=clinician2).order_by("position"))
    for days, assignment in zip((3, 2, 1), clara, strict=False):
        _submit(assignment, now - timedelta(days=days))
    _submit(cyrus[0], now - timedelta(days=9))  # then nothing: idle for 9 days
    _submit(cyrus[1], now - timedelta(hours=1), timed=False)  # imported: not activity
    [day] = study_days([study], now=now)
    Assignment.objects.filter(study=study).update(created_at=now - timedelta(days=20))
    [day] = study_days([study], now=now)
    assert day.submitted == 5 and day.imported == 1 and day.idle_raters == [clinician2.username]
    assert day.last_activity == now - timedelta(days=1)
    assert day.finish is not None and day.finish.finish is None  # the idle rater has no pace: no date
    assert day.risk == ""  # no due date, no verdict
    study.due_date = timezone.localdate() + timedelta(days=30)
    [day] = study_days([study], now=now)
    assert day.risk == "cannot tell yet"
    for days, assignment in zip((3, 2), cyrus[2:], strict=False):
        _submit(assignment, now - timedelta(days=days, hours=1))
    [day] = study_days([study], now=now)
    assert day.finish.finish is not None and day.risk == "on track"
    study.due_date = timezone.localdate()
    [day] = study_days([study], now=now)
    assert day.risk == "at risk" and "after the due date" in day.risk_reason


def test_a_rater_assigned_today_is_not_idle(study, clinician, clinician2):
    [day] = study_days([study])
    assert day.idle_raters == []  # nothing done yet, but assigned just now
    Assignment.objects.filter(study=study, rater=clinician).update(created_at=timezone.now() - timedelta(days=8))
    [day] = study_days([study])
    assert day.idle_raters == [clinician.username]


def test_the_coordinators_home_is_the_dashboard_researchers_keep_their_list(study, coordinator, researcher):
    from annotation.models import MemberRole, StudyMembership

    StudyMembership.objects.create(study=study, user=researcher, role=MemberRole.RESEARCHER)
    home = client_for(coordinator).get("/").content.decode()
    assert 'id="dashboard"' in home and "Idle raters" in home and f"/studies/{study.pk}/progress/" in home
    assert 'id="dashboard"' not in client_for(researcher).get("/").content.decode()


def test_the_dashboard_takes_the_same_queries_for_two_studies_and_six(coordinator, clinician, clinician2):
    def count(n: int) -> int:
        for _ in range(n - len(list(study_list_for_user(coordinator)))):
            make_study([clinician, clinician2], n=3, k=1, coordinator=coordinator)
        studies = list(study_list_for_user(coordinator))
        assert len(studies) == n
        with CaptureQueriesContext(connection) as queries:
            study_days(studies)
        return len(queries.captured_queries)

    assert count(2) == count(6) <= 4

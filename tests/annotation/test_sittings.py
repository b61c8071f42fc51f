"""Rater load: a soft limit on conversations per sitting, with a break prompt on the rating page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, StudyEvent
from annotation.rating.sittings import current_sitting, split_sittings
from annotation.studies.load import study_set_sitting_limit
from annotation.studies.services import study_create
from tests.conftest import client_for
from tests.support.judged import AMHART_KEYS, amhart, corpus, rate

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_sittings_split_at_gaps_of_the_given_length():
    times = [T0, T0 + timedelta(minutes=10), T0 + timedelta(minutes=25), T0 + timedelta(minutes=60), T0 + timedelta(minutes=70)]
    assert [len(s) for s in split_sittings(times, timedelta(minutes=30))] == [3, 2]
    assert [len(s) for s in split_sittings(times, timedelta(minutes=15))] == [2, 1, 2]
    assert [len(s) for s in split_sittings(list(reversed(times)), timedelta(minutes=30))] == [3, 2]
    assert split_sittings([], timedelta(minutes=30)) == []


@pytest.fixture
def queue(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=6)
    study = study_create(name="Queue", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")])
    study.sitting_limit = 3
    study.save()
    return study, conversations


def _done(study, conversations, rater, minutes_ago):  # type: ignore[no-untyped-def]
    now = timezone.now()
    for c, ago in zip(conversations, minutes_ago, strict=False):
        rate(study, c, rater, dict.fromkeys(AMHART_KEYS, "yes"), submitted_at=now - timedelta(minutes=ago))


def _open(study, conversation, rater):  # type: ignore[no-untyped-def]
    return Assignment.objects.create(study=study, conversation=conversation, rater=rater, position=9)


def test_current_sitting_counts_back_until_a_long_pause(queue, clinician):
    study, conversations = queue
    _done(study, conversations, clinician, [200, 20, 12, 4])
    sitting = current_sitting(_open(study, conversations[5], clinician))
    assert sitting.n_submitted == 3 and sitting.suggest_break
    _done(study, conversations, clinician, [200, 150, 100, 40])  # the last one 40 minutes ago: a new sitting
    assert current_sitting(Assignment.objects.filter(study=study).first()).n_submitted == 0


def test_the_rating_page_suggests_a_break_only_past_the_limit(queue, clinician):
    study, conversations = queue
    client = client_for(clinician)
    _done(study, conversations, clinician, [20, 12])
    assignment = _open(study, conversations[5], clinician)
    body = client.get(f"/ratings/{assignment.pk}/").content.decode()
    assert 'id="break-prompt"' not in body
    _done(study, conversations[2:], clinician, [4])
    body = client.get(f"/ratings/{assignment.pk}/").content.decode()
    assert 'id="break-prompt"' in body and "You have rated 3 conversations in this sitting" in body
    assert "suggests a pause after 3" in body and "Keep going" in body and "?break=1" in body
    # It is a suggestion: the form is still there and answers still save.
    assert 'id="questions"' in body
    saved = client.post(f"/api/v1/my/assignments/{assignment.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"},
                         content_type="application/json")
    assert saved.status_code in (200, 201), saved.content
    study.sitting_limit = 0
    study.save()
    assert 'id="break-prompt"' not in client.get(f"/ratings/{assignment.pk}/").content.decode()


def test_the_break_prompt_names_nothing_that_could_unblind(queue, clinician):
    study, conversations = queue
    _done(study, conversations, clinician, [9, 6, 3])
    assignment = _open(study, conversations[5], clinician)
    body = client_for(clinician).get(f"/ratings/{assignment.pk}/").content.decode()
    start = body.index('id="break-prompt"')
    prompt = body[start: body.index("</aside>", start)]
    for secret in ("BOT-A", "vendor/bot-a-model", "Persona 1", study.name):
        assert secret not in prompt


def test_coordinator_sets_the_limit_with_an_audit_entry(queue, coordinator, clinician, outsider, researcher):
    study, _ = queue
    client = client_for(coordinator)
    response = client.post(f"/studies/{study.pk}/sitting-limit/", {"sitting_limit": 8, "sitting_gap_minutes": 45})
    assert response.status_code == 302 and response["Location"].endswith("#load")
    study.refresh_from_db()
    assert (study.sitting_limit, study.sitting_gap_minutes) == (8, 45)
    event = StudyEvent.objects.get(study=study, action="sitting_limit_set")
    assert event.details["before"] == {"limit": 3, "gap_minutes": 30} and "after 8 conversations" in event.details["summary"]
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "Break prompt changed" in page and 'name="sitting_limit"' in page and "<strong>8</strong> conversations" in page
    bad = client.post(f"/studies/{study.pk}/sitting-limit/", {"sitting_limit": -1, "sitting_gap_minutes": 0}, follow=True)
    assert "The break prompt was not changed" in bad.content.decode()
    study.refresh_from_db()
    assert study.sitting_limit == 8
    for user in (clinician, outsider, researcher):
        assert client_for(user).post(f"/studies/{study.pk}/sitting-limit/", {"sitting_limit": 1, "sitting_gap_minutes": 5}).status_code == 404


def test_service_refuses_limits_out_of_range(queue, coordinator):
    from annotation.errors import AnnotationError

    study, _ = queue
    with pytest.raises(AnnotationError):
        study_set_sitting_limit(study=study, limit=1000, gap_minutes=30, actor=coordinator)
    with pytest.raises(AnnotationError):
        study_set_sitting_limit(study=study, limit=5, gap_minutes=0, actor=coordinator)
    study_set_sitting_limit(study=study, limit=0, gap_minutes=30, actor=coordinator)
    study.refresh_from_db()
    assert study.sitting_limit == 0


def test_withdrawn_work_does_not_count(queue, clinician):
    study, conversations = queue
    _done(study, conversations, clinician, [9, 6, 3])
    Assignment.objects.filter(study=study, conversation=conversations[0]).update(status=AssignmentStatus.WITHDRAWN)
    assert current_sitting(_open(study, conversations[5], clinician)).n_submitted == 2


def test_api_reads_and_sets_the_break_prompt(queue, coordinator, clinician, outsider, researcher):
    study, _ = queue
    client = client_for(coordinator)
    url = f"/api/v1/studies/{study.pk}/sitting-limit/"
    assert client.get(url).json() == {"sitting_limit": 3, "sitting_gap_minutes": 30}
    changed = client.post(url, {"sitting_limit": 12, "sitting_gap_minutes": 20}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["sitting_limit"] == 12
    assert StudyEvent.objects.filter(study=study, action="sitting_limit_set").exists()
    assert client.post(url, {"sitting_limit": -2, "sitting_gap_minutes": 20}, content_type="application/json").status_code == 400
    for user in (clinician, outsider):
        assert client_for(user).get(url).status_code == 403
    assert client_for(researcher).get(url).status_code == 404  # not a member of this study
    assert client_for(researcher).post(url, {"sitting_limit": 1, "sitting_gap_minutes": 5}, content_type="application/json").status_code == 403

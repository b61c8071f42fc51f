"""The task queue is down: pages and the API answer 503 with what to do, and no row waits forever.

The broker is a real Redis URL on a port where nothing listens (not a mock): Celery tries to
publish, kombu gives up, and the services fail the rows whose message was not sent.
"""

from __future__ import annotations

import pytest

from annotation.studies.services import study_add_member, study_create
from corpus.instruments.services import builtin_instruments_load
from reports.models import ReportCache, ReportStatus
from tests.conftest import client_for
from tests.factories import ConversationFactory


@pytest.fixture
def study_for_reports(coordinator, researcher):  # type: ignore[no-untyped-def]
    amhart, section = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in range(3)]
    study = study_create(
        name="Queue-down study", instrument=amhart, section=section,
        conversation_ids=[c.pk for c in conversations], created_by=coordinator, coordinators=[coordinator],
    )
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    return study


@pytest.mark.django_db(transaction=True)
def test_a_cold_report_page_answers_503_with_what_to_do_and_no_rater_text(broker_down, study_for_reports, researcher):
    response = client_for(researcher).get(f"/reports/studies/{study_for_reports.pk}/reliability/")
    assert response.status_code == 503
    page = response.content.decode()
    assert "task queue does not answer" in page
    assert "REDIS_URL" in page and "manage.py status" in page
    assert "Answers you saved" not in page  # the rater's reassurance is not for a researcher
    assert response["Retry-After"]


@pytest.mark.django_db(transaction=True)
def test_a_report_job_whose_message_was_not_sent_is_not_left_queued(broker_down, study_for_reports, researcher):
    client_for(researcher).get(f"/reports/studies/{study_for_reports.pk}/reliability/")
    row = ReportCache.objects.get(kind="reliability")
    assert row.status == ReportStatus.FAILED
    assert "not queued" in row.error and row.started_at is None  # the next visit claims it again at once


@pytest.mark.django_db(transaction=True)
def test_the_report_api_answers_503_json_with_what_to_do(broker_down, study_for_reports, researcher):
    response = client_for(researcher).get(f"/api/v1/reports/studies/{study_for_reports.pk}/reliability/")
    assert response.status_code == 503
    body = response.json()
    assert "task queue does not answer" in body["detail"] and "REDIS_URL" in body["what_to_do"]

"""The status page and `manage.py status`: database, task queue, workers seen in the last minute, stalled work."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from core.workers import heartbeat_write
from reports.models import ReportCache, ReportStatus
from tests.conftest import client_for


def test_the_status_page_is_for_administrators_only(researcher, coordinator, clinician, outsider):
    for user in (researcher, coordinator, clinician, outsider):
        assert client_for(user).get("/status/").status_code == 404


def test_the_status_page_lists_recent_workers_with_their_queues_and_says_what_waits(admin_user):
    now = timezone.now()
    heartbeat_write(hostname="evalsite@web1", queues=["celery"], concurrency=32, started_at=now)
    heartbeat_write(hostname="evalsite@gone", queues=["celery"], concurrency=8, started_at=now)
    from core.models import WorkerHeartbeat

    WorkerHeartbeat.objects.filter(hostname="evalsite@gone").update(last_seen=now - timedelta(minutes=5))
    ReportCache.objects.create(key="reliability:study=1", kind="reliability", data_version="v", status=ReportStatus.COMPUTING,
                               progress=0, stage="queued: waiting for a worker", started_at=now - timedelta(minutes=5))
    response = client_for(admin_user).get("/status/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "evalsite@web1" in page and "evalsite@gone" not in page
    assert "celery" in page
    assert "1 report jobs" in page and "no worker started them" in page
    assert "answers" in page  # the database and the embedded broker


def test_the_status_page_says_the_task_queue_is_down_and_what_to_do(admin_user, broker_down):
    page = client_for(admin_user).get("/status/").content.decode()
    assert "down" in page and "REDIS_URL" in page
    assert "No worker was seen in the last minute" in page


def test_manage_status_reports_and_exits_1_when_something_needs_attention(db):
    out = StringIO()
    with pytest.raises(SystemExit) as stopped:
        call_command("status", stdout=out)
    assert stopped.value.code == 1
    text = out.getvalue()
    assert "database" in text and "broker" in text and "none seen in the last minute" in text
    heartbeat_write(hostname="evalsite@w1", queues=["celery"], concurrency=4, started_at=timezone.now())
    out = StringIO()
    call_command("status", "--json", stdout=out)  # everything answers: exit 0
    report = json.loads(out.getvalue())
    assert report["ok"] and report["workers"][0]["queues"] == ["celery"]


def test_favicon_is_answered_not_logged_as_missing(db):
    from django.test import Client

    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("evalsite/favicon.svg")


def test_the_status_page_and_command_name_the_email_backend_in_words(admin_user):
    """Issue 28, defect 2: no page said which backend delivers; the console default prints and says so."""
    from django.test import override_settings

    from core.emails import email_send

    with override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend"):
        email_send(purpose="other", address="clara@example.org", subject="s", body="b")
        page = client_for(admin_user).get("/status/").content.decode()
        out = StringIO()
        with pytest.raises(SystemExit):
            call_command("status", stdout=out)
    email = page.split('id="email"')[1].split("<h2")[0]
    assert "not delivered" in email and "printed to the server&#x27;s console" in email and "EMAIL_HOST" in email
    assert "1 printed" in email
    assert "printed to the server's console" in out.getvalue() and "last 24 hours: 1 printed" in out.getvalue()
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="smtp.example.org",
                           EMAIL_PORT=587, EMAIL_USE_TLS=True, EMAIL_USE_SSL=False):
        page = client_for(admin_user).get("/status/").content.decode()
    assert "delivers" in page and "SMTP via smtp.example.org:587 (STARTTLS)" in page

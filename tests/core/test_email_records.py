"""Issue 28, defect 2: every message the app sends is recorded with what the backend did with it.

Sent through a real SMTP server on 127.0.0.1 (aiosmtpd, started by the test), refused by it,
unreachable, printed by the console backend, written by the file backend.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from core.emails import backend_info, email_send
from core.models import EmailOutcome, EmailPurpose, EmailRecord
from tests.support.fixtures import closed_port

pytestmark = pytest.mark.django_db


def _send(**extra):  # type: ignore[no-untyped-def]
    return email_send(purpose=EmailPurpose.OTHER, address="clara@example.org", subject="Hello there",
                      body="Two conversations are waiting.", **extra)


def test_a_message_through_smtp_is_received_and_recorded_as_sent(smtp_server, clinician):
    record = _send(recipient=clinician, study_id=7)
    [(to, message)] = smtp_server.received
    assert to == ["clara@example.org"] and message["To"] == "clara@example.org" and message["Subject"] == "Hello there"
    assert "Two conversations are waiting." in smtp_server.body(message)
    assert record.outcome == EmailOutcome.SENT and record.error == "" and record.recipient == clinician
    assert record.study_id == 7 and record.backend == "django.core.mail.backends.smtp.EmailBackend"
    assert list(EmailRecord.objects.values_list("outcome", flat=True)) == ["sent"]


def test_a_message_the_server_refuses_is_recorded_failed_with_its_answer(refusing_smtp_server):
    record = _send()
    assert refusing_smtp_server.received == []
    assert record.outcome == EmailOutcome.FAILED
    assert record.error == "the mail server refused the recipient (550 5.1.1 Mailbox unavailable)"
    assert record.address == "clara@example.org"


def test_an_unreachable_mail_server_is_recorded_failed_with_where_it_was_looked_for():
    port = closed_port()
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1",
                           EMAIL_PORT=port, EMAIL_USE_TLS=False, EMAIL_TIMEOUT=3):
        record = _send()
    assert record.outcome == EmailOutcome.FAILED and f"127.0.0.1:{port}" in record.error


@override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
def test_the_console_backend_is_recorded_as_printed_not_sent(capsys):
    record = _send()
    assert "Two conversations are waiting." in capsys.readouterr().out
    assert record.outcome == EmailOutcome.PRINTED
    assert not backend_info().delivers and "printed to the server's console" in backend_info().words


def test_the_file_backend_is_recorded_as_written(tmp_path):
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend", EMAIL_FILE_PATH=str(tmp_path)):
        record = _send()
        words = backend_info().words
    assert record.outcome == EmailOutcome.WRITTEN and len(list(tmp_path.iterdir())) == 1
    assert str(tmp_path) in words and "none leaves the machine" in words


def test_the_backend_is_named_in_words():
    with override_settings(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="smtp.example.org",
                           EMAIL_PORT=587, EMAIL_USE_TLS=True, EMAIL_USE_SSL=False):
        assert backend_info().words == "SMTP via smtp.example.org:587 (STARTTLS)" and backend_info().delivers
    with override_settings(EMAIL_BACKEND="no.such.Backend"):
        assert "cannot be loaded" in backend_info().words and _send().outcome == EmailOutcome.FAILED

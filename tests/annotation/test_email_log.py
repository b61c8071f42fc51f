"""Issue 28, defects 2 and 3: reminders say what became of them, and a rater's flag reaches the coordinators.

The SMTP path runs against a real mail server on 127.0.0.1 (aiosmtpd), started by the test.
"""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import override_settings
from django.urls import reverse

from annotation.models import ConversationFlag, Study, StudyEvent, StudyMembership
from core.models import EmailRecord
from tests.conftest import client_for

from .coordinator_setup import add_coordinator, flag
from .rater_setup import SECRETS, first_assignment, make_study

pytestmark = pytest.mark.django_db

SEND = "annotation:study-reminders-send"


@pytest.fixture
def study(coordinator, clinician, clinician2) -> Study:  # type: ignore[no-untyped-def]
    clinician.email, clinician2.email = "clara@example.org", "cyrus@example.org"
    clinician.save(update_fields=["email"])
    clinician2.save(update_fields=["email"])
    return make_study([clinician, clinician2], n=4, k=1, coordinator=coordinator)


def _press(study: Study, coordinator, **data):  # type: ignore[no-untyped-def]
    response = client_for(coordinator).post(reverse(SEND, args=[study.pk]), data, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def _progress(study: Study, user) -> str:  # type: ignore[no-untyped-def]
    return client_for(user).get(reverse("annotation:study-progress", args=[study.pk])).content.decode()


# --- reminders: what the button says ----------------------------------------------------------------


def test_reminders_through_smtp_are_received_by_each_rater_and_the_page_says_sent_by_smtp(study, coordinator, smtp_server):
    page = _press(study, coordinator)
    assert "2 reminders sent by SMTP." in page
    received = {to[0]: message for to, message in smtp_server.received}
    assert set(received) == {"clara@example.org", "cyrus@example.org"}
    message = received["clara@example.org"]
    assert message["To"] == "clara@example.org" and "Adolescent wellbeing ratings" in message["Subject"]
    body = smtp_server.body(message)
    assert "Adolescent wellbeing ratings" in body and "conversations left to rate" in message["Subject"]
    text = message["Subject"] + body
    assert study.name not in text and not [s for s in SECRETS if s in text]  # no chatbot, model or persona
    records = EmailRecord.objects.filter(study_id=study.pk, purpose="reminder")
    assert sorted(records.values_list("address", "outcome")) == [("clara@example.org", "sent"), ("cyrus@example.org", "sent")]
    progress = _progress(study, coordinator)
    assert f"SMTP via 127.0.0.1:{smtp_server.port}" in progress
    log = progress.split('id="reminder-log"')[1].split("</table>")[0]
    assert "clara@example.org" in log and "cyrus@example.org" in log and ">sent<" in log


def test_a_mail_server_that_refuses_is_recorded_failed_and_the_page_says_why(study, coordinator, refusing_smtp_server):
    page = _press(study, coordinator)
    assert "2 failed: the mail server refused the recipient (550 5.1.1 Mailbox unavailable)." in page
    assert "sent by SMTP" not in page and refusing_smtp_server.received == []
    assert set(EmailRecord.objects.filter(study_id=study.pk).values_list("outcome", flat=True)) == {"failed"}
    log = _progress(study, coordinator).split('id="reminder-log"')[1].split("</table>")[0]
    assert "<strong>failed</strong>" in log and "Mailbox unavailable" in log


@override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
def test_with_the_console_backend_the_button_says_printed_not_sent(study, coordinator, capsys):
    page = _press(study, coordinator)
    assert ("2 reminders printed to the server&#x27;s console: no mail server is configured "
            "(EVALSITE_EMAIL_BACKEND / EMAIL_HOST).") in page
    assert "reminders sent" not in page
    assert "Adolescent wellbeing ratings" in capsys.readouterr().out  # where the messages went
    assert set(EmailRecord.objects.values_list("outcome", flat=True)) == {"printed"}
    backend = _progress(study, coordinator).split('id="email-backend"')[1].split("</p>")[0]
    assert "printed to the server&#x27;s console" in backend and "none leaves the machine" in backend


def test_a_second_send_within_the_cooldown_asks_to_confirm_and_sends_nothing_without_it(study, coordinator):
    _press(study, coordinator)
    assert len(mail.outbox) == 2
    again = _press(study, coordinator)
    assert "Nothing was sent: reminders already went less than a minute ago" in again
    assert len(mail.outbox) == 2 and EmailRecord.objects.count() == 2
    form = again.split('id="reminders-confirm"')[1].split("</p>")[0]  # the page asks, with when the last went
    assert 'name="confirm"' in form and "<time datetime=" in form
    confirmed = _press(study, coordinator, confirm="1")
    assert "2 reminders kept in memory by the test email backend" in confirmed and len(mail.outbox) == 4


def test_failed_reminders_do_not_start_the_cooldown(study, coordinator, refusing_smtp_server):
    _press(study, coordinator)
    assert "reminders-confirm" not in _press(study, coordinator)  # nothing went: no confirmation asked
    assert EmailRecord.objects.filter(outcome="failed").count() == 4


@override_settings(EVALSITE_REMINDER_COOLDOWN_MINUTES=0)
def test_without_a_cooldown_a_second_send_goes_at_once(study, coordinator):
    _press(study, coordinator)
    _press(study, coordinator)
    assert len(mail.outbox) == 4


def test_the_command_respects_the_cooldown_unless_told_again(study, coordinator):
    from django.core.management import CommandError, call_command

    _press(study, coordinator)
    with pytest.raises(CommandError, match="already went"):
        call_command("send_reminders", study=study.pk)
    call_command("send_reminders", study=study.pk, again=True)
    assert len(mail.outbox) == 4


# --- flags: pushed to the coordinators ----------------------------------------------------------------


def test_a_new_flag_emails_each_coordinator_who_has_not_turned_it_off(
        study, coordinator, clinician, smtp_server, django_capture_on_commit_callbacks):
    coordinator.email = "cora@example.org"
    coordinator.save(update_fields=["email"])
    add_coordinator(study, "cole", email="cole@example.org", flag_notices_off=True)
    add_coordinator(study, "cato")  # no address: nobody to write to
    assignment = first_assignment(study, clinician)
    with django_capture_on_commit_callbacks(execute=True):
        assert flag(client_for(clinician), assignment, note="Too close to a patient of mine.").status_code == 200
    [(to, message)] = smtp_server.received
    assert to == ["cora@example.org"] and study.name in message["Subject"] and "Distressing content" in message["Subject"]
    body = smtp_server.body(message)
    assert assignment.conversation.code in body and reverse("annotation:study-flags", args=[study.pk]) in body
    assert "Too close to a patient" not in body  # the note is read on the Flags tab, not carried by email
    record = EmailRecord.objects.get()
    assert (record.purpose, record.outcome, record.recipient, record.study_id) == ("flag_notice", "sent", coordinator, study.pk)


def test_changing_an_open_flag_does_not_email_again(study, coordinator, clinician, django_capture_on_commit_callbacks):
    coordinator.email = "cora@example.org"
    coordinator.save(update_fields=["email"])
    rater = client_for(clinician)
    with django_capture_on_commit_callbacks(execute=True):
        flag(rater, first_assignment(study, clinician))
        flag(rater, first_assignment(study, clinician), reason="broken_transcript")
    assert [m.to for m in mail.outbox] == [["cora@example.org"]]
    assert EmailRecord.objects.filter(purpose="flag_notice").count() == 1


def test_a_coordinator_turns_flag_emails_off_and_on_on_the_study_page(study, coordinator, clinician, researcher, outsider):
    url = reverse("annotation:study-flag-notices", args=[study.pk])
    client = client_for(coordinator)
    page = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert 'id="flag-notices"' in page and "Stop flag emails" in page
    client.post(url, {"receive": "0"})
    assert StudyMembership.objects.get(study=study, user=coordinator).flag_notices_off is True
    page = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert "Email me about flags" in page and "flag emails off" in page
    assert StudyEvent.objects.filter(study=study, action="flag_notices_off").exists()
    client.post(url, {"receive": "1"})
    assert StudyMembership.objects.get(study=study, user=coordinator).flag_notices_off is False
    for user in (clinician, researcher, outsider):
        assert client_for(user).post(url, {"receive": "0"}).status_code == 404


def test_open_flags_are_counted_on_the_home_page_the_studies_list_and_the_flags_tab(study, coordinator, clinician, clinician2):
    flag(client_for(clinician), first_assignment(study, clinician))
    flag(client_for(clinician2), first_assignment(study, clinician2), reason="broken_transcript")
    client = client_for(coordinator)
    home = client.get("/").content.decode()
    assert 'id="home-open-flags"' in home and "2 flagged conversations" in home
    row = home.split(f">{study.name}</a>")[1].split("</tr>")[0]
    assert f'href="{reverse("annotation:study-flags", args=[study.pk])}"' in row and "<strong>2</strong>" in row
    listing = client.get(reverse("annotation:study-list")).content.decode()
    assert "Open flags" in listing and "<strong>2</strong>" in listing.split(f">{study.name}</a>")[1].split("</tr>")[0]
    for name in ("annotation:study-detail", "annotation:study-progress", "annotation:study-flags"):
        tab = client.get(reverse(name, args=[study.pk])).content.decode().split('id="flags-tab"')[1].split("</a>")[0]
        assert "Flags (2)" in tab, name
    resolved = ConversationFlag.objects.order_by("pk").first()
    client.post(reverse("annotation:study-flag-resolve", args=[study.pk, resolved.pk]), {"resolution": "Talked to clara."})
    tab = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode().split('id="flags-tab"')[1]
    assert tab.split("</a>")[0].endswith("Flags (1)<span class=\"visually-hidden\"> open</span>")


def test_the_flag_counts_of_the_list_pages_take_the_same_queries_for_one_study_or_many(
        coordinator, clinician, clinician2):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = make_study([clinician, clinician2], n=2, k=1, coordinator=coordinator)
    flag(client_for(clinician), first_assignment(first, clinician))
    client = client_for(coordinator)

    def queries() -> tuple[int, int]:
        counts = []
        for url in ("/", reverse("annotation:study-list")):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            counts.append(len(captured))
        return counts[0], counts[1]

    one = queries()
    for _ in range(3):
        other = make_study([clinician, clinician2], n=2, k=1, coordinator=coordinator)
        flag(client_for(clinician2), first_assignment(other, clinician2))
    assert queries() == one

"""Issue 19, the coordinator's day: progress bars and pace, reminder emails (button, schedule,
opt-out), and raters' "flag this conversation" landing in the coordinator's queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from annotation.models import (
    Assignment,
    AssignmentStatus,
    ConversationFlag,
    FlagStatus,
    Rating,
    StudyEvent,
    StudyMembership,
)
from annotation.rating.services import rating_save_answer
from annotation.reminders.services import reminders_send_due
from annotation.studies.pace import NOT_ENOUGH, observed_pace, study_finish
from tests.conftest import client_for, make_user

from .rater_setup import SECRETS, first_assignment, make_study

pytestmark = pytest.mark.django_db


# --- pace ---------------------------------------------------------------------------------------


def test_pace_is_the_recent_rate_and_the_finish_follows_from_it():
    now = timezone.now()
    times = [now - timedelta(days=d) for d in (4, 3, 2, 1)]  # 4 in the 4 days since the first
    pace = observed_pace(times, 6, now=now)
    assert pace.per_day == pytest.approx(1.0) and pace.text == "about 6 days"
    assert pace.finish == pytest.approx(now + timedelta(days=6), abs=timedelta(seconds=1))


def test_one_afternoons_burst_counts_as_a_day_not_an_hour():
    now = timezone.now()
    pace = observed_pace([now - timedelta(minutes=m) for m in (50, 40, 30, 20)], 8, now=now)
    assert pace.per_day == pytest.approx(4.0) and pace.text == "about 2 days"


def test_too_little_activity_gives_no_date():
    now = timezone.now()
    assert observed_pace([now - timedelta(hours=1)], 5, now=now).text == NOT_ENOUGH
    old = [now - timedelta(days=30 + d) for d in range(5)]  # active once, long ago
    assert observed_pace(old, 5, now=now).finish is None
    done = observed_pace(old, 0, now=now)
    assert done.done and done.text == "done"
    assert study_finish([observed_pace(old, 5, now=now), done]).text == NOT_ENOUGH


# --- the progress page --------------------------------------------------------------------------


@pytest.fixture
def study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    clinician.email, clinician2.email = "clara@example.org", "cyrus@example.org"
    clinician.save(update_fields=["email"])
    clinician2.save(update_fields=["email"])
    return make_study([clinician, clinician2], n=8, k=1, coordinator=coordinator)


def _submit(assignment: Assignment, when) -> None:  # type: ignore[no-untyped-def]
    Assignment.objects.filter(pk=assignment.pk).update(status=AssignmentStatus.SUBMITTED, submitted_at=when,
                                                       started_at=when, last_activity_at=when)


def test_progress_shows_each_raters_bar_last_activity_pace_and_expected_finish(study, coordinator, clinician, clinician2):
    now = timezone.now()
    clara = list(study.assignments.filter(rater=clinician).order_by("position"))
    for days, assignment in zip((3, 2, 1), clara, strict=False):
        _submit(assignment, now - timedelta(days=days))
    _submit(study.assignments.filter(rater=clinician2).first(), now - timedelta(hours=2))
    response = client_for(coordinator).get(reverse("annotation:study-progress", args=[study.pk]))
    page = response.content.decode()
    rows = {r.name: r for r in response.context["progress"].raters}
    assert rows["clara"].pace.per_day == pytest.approx(1.0, rel=1e-3) and rows["clara"].pace.remaining == len(clara) - 3
    assert rows["cyrus"].pace.text == NOT_ENOUGH
    clara_row = page.split("<th scope=\"row\">clara")[1].split("</tr>")[0]
    assert 'class="stacked-bar"' in clara_row and "3</strong> of 4 submitted" in clara_row
    assert "1.0 a day" in clara_row and 'data-local="date"' in clara_row and "(about 1 day)" in clara_row
    assert "<time datetime=" in clara_row  # last activity, in the reader's locale
    cyrus_row = page.split("<th scope=\"row\">cyrus")[1].split("</tr>")[0]
    assert NOT_ENOUGH in cyrus_row
    assert 'id="expected-finish"' in page and NOT_ENOUGH in page.split('id="expected-finish"')[1][:400]


def test_the_expected_finish_is_the_slowest_raters(study, coordinator, clinician, clinician2):
    now = timezone.now()
    for rater, spacing in ((clinician, 1), (clinician2, 2)):
        for i, assignment in enumerate(study.assignments.filter(rater=rater).order_by("position")[:3]):
            _submit(assignment, now - timedelta(days=spacing * (3 - i)))
    progress = client_for(coordinator).get(reverse("annotation:study-progress", args=[study.pk])).context["progress"]
    slowest = max((r.pace for r in progress.raters), key=lambda p: p.finish)
    assert progress.finish.finish == slowest.finish


# --- reminders ----------------------------------------------------------------------------------


def test_the_button_emails_each_rater_with_work_left_and_nothing_that_unblinds(study, coordinator, clinician, clinician2):
    for assignment in study.assignments.filter(rater=clinician2):
        _submit(assignment, timezone.now())  # cyrus is done: no reminder
    client = client_for(coordinator)
    response = client.post(reverse("annotation:study-reminders-send", args=[study.pk]), follow=True)
    # The tests' email backend keeps messages in memory: the page says so, never "sent".
    page = response.content.decode()
    assert response.status_code == 200 and "1 reminder kept in memory by the test email backend" in page
    assert "reminder sent" not in page
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["clara@example.org"]
    assert "Adolescent wellbeing ratings" in message.subject and "4 conversations left" in message.subject
    assert "/ratings/" in message.body and reverse("annotation:my-reminders") in message.body
    text = message.subject + message.body
    assert study.name not in text and not [s for s in SECRETS if s in text]
    event = StudyEvent.objects.filter(study=study, action="reminders_sent").get()
    assert event.details["sent"] == ["clara"] and event.actor == coordinator
    assert StudyMembership.objects.get(study=study, user=clinician).last_reminded_at is not None


def test_only_the_studys_coordinators_send_reminders(study, clinician, outsider, researcher):
    for user in (clinician, outsider, researcher):
        assert client_for(user).post(reverse("annotation:study-reminders-send", args=[study.pk])).status_code == 404
        assert client_for(user).post(reverse("annotation:study-reminders-schedule", args=[study.pk]),
                                     {"reminder_every_days": 1}).status_code == 404
    assert mail.outbox == []


def test_a_rater_opts_out_and_the_coordinator_sees_it(study, coordinator, clinician, clinician2):
    rater = client_for(clinician)
    page = rater.get(reverse("annotation:my-reminders")).content.decode()
    assert "Adolescent wellbeing ratings" in page and study.name not in page
    rater.post(reverse("annotation:my-reminders"), {"study": study.pk, "receive": "0"})
    assert StudyMembership.objects.get(study=study, user=clinician).reminders_opted_out_at is not None
    coordinator_client = client_for(coordinator)
    progress = coordinator_client.get(reverse("annotation:study-progress", args=[study.pk])).content.decode()
    clara_row = progress.split("<th scope=\"row\">clara")[1].split("</tr>")[0]
    assert ">off<" in clara_row
    coordinator_client.post(reverse("annotation:study-reminders-send", args=[study.pk]))
    assert [m.to for m in mail.outbox] == [["cyrus@example.org"]]
    assert StudyEvent.objects.filter(study=study, action="reminders_opted_out").exists()
    rater.post(reverse("annotation:my-reminders"), {"study": study.pk, "receive": "1"})
    assert StudyMembership.objects.get(study=study, user=clinician).reminders_opted_out_at is None


def test_a_rater_cannot_change_anothers_reminders(study, clinician, outsider):
    other = make_user("odile", "clinician")
    client_for(other).post(reverse("annotation:my-reminders"), {"study": study.pk, "receive": "0"})
    assert not StudyMembership.objects.filter(study=study, reminders_opted_out_at__isnull=False).exists()
    assert client_for(outsider).get(reverse("annotation:my-reminders")).status_code == 404


def test_scheduled_reminders_go_to_idle_raters_once_per_period(study, coordinator, clinician, clinician2):
    client_for(coordinator).post(reverse("annotation:study-reminders-schedule", args=[study.pk]), {"reminder_every_days": 3})
    study.refresh_from_db()
    assert study.reminder_every_days == 3
    _submit(study.assignments.filter(rater=clinician2).first(), timezone.now() - timedelta(hours=5))  # cyrus is active
    assert reminders_send_due() == 1 and [m.to for m in mail.outbox] == [["clara@example.org"]]
    assert reminders_send_due() == 0  # already reminded in this period (another worker checking too)
    later = timezone.now() + timedelta(days=4)
    assert reminders_send_due(now=later) == 2  # four days on: both idle, both reminded
    events = StudyEvent.objects.filter(study=study, action="reminders_sent")
    assert events.count() == 2 and all(e.actor is None for e in events)


def test_workers_check_the_schedule_without_celery_beat():
    from celery.signals import worker_ready

    import annotation.tasks as tasks

    receivers = [r[1]() for r in worker_ready.receivers]
    assert tasks._start_reminder_watch in receivers
    assert tasks.check_interval() >= 60


def test_the_send_reminders_command(study, capsys):
    from django.core.management import call_command

    call_command("send_reminders", study=study.pk)
    assert "2 reminders kept in memory by the test email backend" in capsys.readouterr().out and len(mail.outbox) == 2


def test_email_settings_are_documented():
    from pathlib import Path

    from django.conf import settings

    example = (Path(settings.BASE_DIR) / ".env.example").read_text(encoding="utf-8")
    for name in ("EVALSITE_EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD",
                 "EMAIL_USE_TLS", "DEFAULT_FROM_EMAIL", "EVALSITE_BASE_URL", "EVALSITE_REMINDER_CHECK_MINUTES",
                 "EVALSITE_REMINDER_COOLDOWN_MINUTES", "EVALSITE_PASSWORD_RESET_SECONDS"):
        assert f"\n{name}=" in example, name
    assert example.count("\nEMAIL_HOST=") == 1  # one email block: a second one said other defaults (issue 28, defect 8)


# --- flags --------------------------------------------------------------------------------------


def _flag(client, assignment, **data):  # type: ignore[no-untyped-def]
    return client.post(reverse("annotation:rate-flag", args=[assignment.pk]), data, HTTP_ACCEPT="application/json")


def test_a_rater_flags_a_conversation_and_loses_no_answer(study, clinician, coordinator):
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes")
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_02", value="no")
    before = Rating.objects.get(assignment=assignment)
    rater = client_for(clinician)
    page = rater.get(reverse("annotation:rate", args=[assignment.pk])).content.decode()
    assert "Flag this conversation" in page and reverse("annotation:rate-flag", args=[assignment.pk]) in page
    response = _flag(rater, assignment, reason="broken_transcript", note="The chatbot's last reply is cut off.")
    assert response.status_code == 200 and response.json()["flagged"] is True
    text = response.content.decode()
    assert not [s for s in SECRETS if s in text]
    after = Rating.objects.get(assignment=assignment)
    assert after.answers == before.answers and after.revision == before.revision
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS
    # The rater goes on rating after flagging.
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_03", value="yes")
    flag = ConversationFlag.objects.get()
    assert (flag.reason, flag.status, flag.rater) == ("broken_transcript", FlagStatus.OPEN, clinician)
    page = rater.get(reverse("annotation:rate", args=[assignment.pk])).content.decode()
    assert "Flagged: broken transcript" in page and not [s for s in SECRETS if s in page]


def test_the_flag_lands_in_the_coordinators_queue_and_is_resolved(study, clinician, coordinator):
    assignment = first_assignment(study, clinician)
    _flag(client_for(clinician), assignment, reason="distressing", note="Too close to a patient of mine.")
    client = client_for(coordinator)
    progress = client.get(reverse("annotation:study-progress", args=[study.pk])).content.decode()
    assert 'id="open-flags"' in progress and "1 flagged conversation" in progress
    queue = client.get(reverse("annotation:study-flags", args=[study.pk])).content.decode()
    assert assignment.conversation.code in queue and "Distressing content" in queue and "Too close to a patient" in queue
    flag = ConversationFlag.objects.get()
    missing = client.post(reverse("annotation:study-flag-resolve", args=[study.pk, flag.pk]), {"resolution": ""}, follow=True)
    assert "Not resolved" in missing.content.decode()
    client.post(reverse("annotation:study-flag-resolve", args=[study.pk, flag.pk]), {"resolution": "Moved to cyrus."})
    flag.refresh_from_db()
    assert flag.status == FlagStatus.RESOLVED and flag.resolved_by == coordinator and flag.resolution == "Moved to cyrus."
    assert StudyEvent.objects.filter(study=study, action="flag_resolved").exists()
    assert StudyEvent.objects.filter(study=study, action="conversation_flagged").exists()
    csv_text = client.get(reverse("annotation:study-flags-csv", args=[study.pk])).content.decode()
    assert "distressing" in csv_text and "Moved to cyrus." in csv_text


def test_something_else_needs_a_few_words(study, clinician):
    response = _flag(client_for(clinician), first_assignment(study, clinician), reason="other", note="  ")
    assert response.status_code == 400 and "say what is wrong" in response.json()["detail"]
    assert not ConversationFlag.objects.exists()


def test_only_the_rater_flags_their_own_and_only_coordinators_see_the_queue(study, clinician, clinician2, outsider, researcher):
    theirs = first_assignment(study, clinician2)
    assert _flag(client_for(clinician), theirs, reason="distressing").status_code == 404
    assert _flag(client_for(outsider), theirs, reason="distressing").status_code == 404
    assert not ConversationFlag.objects.exists()
    for user in (clinician, outsider, researcher):
        assert client_for(user).get(reverse("annotation:study-flags", args=[study.pk])).status_code == 404
        assert client_for(user).get(reverse("annotation:study-flags-csv", args=[study.pk])).status_code == 404


def test_the_progress_api_gives_the_same_pace_and_finish(study, coordinator, clinician):
    now = timezone.now()
    for days, assignment in zip((3, 2, 1), study.assignments.filter(rater=clinician).order_by("position"), strict=False):
        _submit(assignment, now - timedelta(days=days))
    body = client_for(coordinator).get(f"/api/v1/studies/{study.pk}/progress/").json()
    clara = next(r for r in body["raters"] if r["username"] == "clara")
    assert clara["submitted_per_day"] == pytest.approx(1.0, rel=1e-3) and clara["expected_finish_text"] == "about 1 day"
    assert clara["reminders"] == "on" and clara["last_activity_at"]
    assert body["expected_finish_text"] == NOT_ENOUGH  # cyrus has not started

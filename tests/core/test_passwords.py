"""Getting back into an account: password reset by email and password change, throttled like the login."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import PASSWORD, client_for, make_user

NEW_PASSWORD = "a-Brand-new-passw0rd-7"


@pytest.fixture
def maya(db):  # type: ignore[no-untyped-def]
    return make_user("maya", "clinician", email="maya@example.org")


def test_the_login_page_offers_a_password_reset(db):
    page = Client().get("/accounts/login/").content.decode()
    assert 'href="/accounts/password/reset/"' in page


def test_a_forgotten_password_is_reset_through_an_emailed_link(maya, mailoutbox):
    client = Client()
    form = client.get("/accounts/password/reset/")
    assert form.status_code == 200 and "Reset your password" in form.content.decode()  # no login needed
    sent = client.post("/accounts/password/reset/", {"email": "maya@example.org"})
    assert sent.status_code == 302 and sent["Location"] == "/accounts/password/reset/sent/"
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["maya@example.org"]
    link = re.search(r"https?://[^/]+(/accounts/password/reset/[^/]+/[^/]+/)", mailoutbox[0].body).group(1)
    confirm = client.get(link, follow=True)
    assert "Choose a new password" in confirm.content.decode()
    done = client.post(confirm.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/accounts/password/reset/done/"
    maya.refresh_from_db()
    assert maya.check_password(NEW_PASSWORD)
    assert "no longer works" in client.get(link, follow=True).content.decode()  # a link works once


def test_an_unknown_address_gets_the_same_answer_and_no_email(db, mailoutbox):
    sent = Client().post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert sent.status_code == 302 and sent["Location"] == "/accounts/password/reset/sent/"
    assert mailoutbox == []


def test_a_reset_link_goes_through_smtp_and_is_recorded_with_its_outcome(maya, smtp_server):
    """Issue 28, defect 2: the reset email is received by a real mail server and recorded as sent."""
    from core.models import EmailRecord

    Client().post("/accounts/password/reset/", {"email": "maya@example.org"})
    [(to, message)] = smtp_server.received
    assert to == ["maya@example.org"] and "/accounts/password/reset/" in smtp_server.body(message)
    record = EmailRecord.objects.get()
    assert (record.purpose, record.outcome, record.recipient, record.address) == ("password_reset", "sent", maya, "maya@example.org")


def test_a_refused_reset_email_is_recorded_failed_and_the_page_answers_the_same(maya, refusing_smtp_server):
    from core.models import EmailRecord

    answer = Client().post("/accounts/password/reset/", {"email": "maya@example.org"})
    assert answer.status_code == 302 and answer["Location"] == "/accounts/password/reset/sent/"
    record = EmailRecord.objects.get()
    assert record.outcome == "failed" and "550" in record.error


def test_reset_requests_are_limited_per_address_like_the_login(maya, mailoutbox):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert client.post("/accounts/password/reset/", {"email": "maya@example.org"}).status_code == 302
    refused = client.post("/accounts/password/reset/", {"email": "maya@example.org"})
    assert refused.status_code == 429 and "Too many reset requests" in refused.content.decode()
    assert len(mailoutbox) == settings.AXES_FAILURE_LIMIT
    other_address = Client(REMOTE_ADDR="10.9.8.7").post("/accounts/password/reset/", {"email": "maya@example.org"})
    assert other_address.status_code == 429  # the email address is limited too, whoever asks


def test_a_signed_in_user_changes_their_password(maya):
    client = client_for(maya)
    assert client.get("/accounts/password/change/").status_code == 200
    changed = client.post("/accounts/password/change/", {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert changed.status_code == 302 and changed["Location"] == "/accounts/password/change/done/"
    maya.refresh_from_db()
    assert maya.check_password(NEW_PASSWORD)
    assert client.get("/").status_code == 200  # still signed in


def test_wrong_current_passwords_lock_the_change_like_failed_logins(maya):
    client = client_for(maya)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        wrong = client.post("/accounts/password/change/", {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
        assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    locked = client.post("/accounts/password/change/", {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert locked.status_code == 429
    maya.refresh_from_db()
    assert maya.check_password(PASSWORD)


def test_the_change_page_needs_a_login(db):
    response = Client().get("/accounts/password/change/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_email_goes_to_the_console_by_default_and_to_smtp_when_configured(tmp_path):
    root = Path(__file__).resolve().parents[2]
    code = ("import json, django.conf as c, evalsite.settings.base as s; "
            "print(json.dumps([s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, s.DEFAULT_FROM_EMAIL]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMAIL_", "DEFAULT_FROM"))}
    env["EVALSITE_VAR_DIR"] = str(tmp_path)

    def read(**extra: str) -> list:
        out = subprocess.run([sys.executable, "-c", code], cwd=root, env={**env, **extra}, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert read()[0] == "django.core.mail.backends.console.EmailBackend"
    smtp = read(EMAIL_HOST="smtp.example.org", EMAIL_PORT="2525", DEFAULT_FROM_EMAIL="study@example.org")
    assert smtp == ["django.core.mail.backends.smtp.EmailBackend", "smtp.example.org", 2525, True, "study@example.org"]


def test_created_accounts_can_use_the_reset_they_are_told_about(db, mailoutbox):
    from core.accounts import accounts_create_from_csv

    accounts_create_from_csv(text="username,email,roles\nnew.rater,new.rater@example.org,clinician\n", file="users.csv")
    assert not get_user_model().objects.get(username="new.rater").has_usable_password()
    Client().post("/accounts/password/reset/", {"email": "new.rater@example.org"})
    assert len(mailoutbox) == 1

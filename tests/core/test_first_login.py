"""Issue 28, defect 8: accounts created with an initial password must choose their own first.

An account list with initial passwords, an account an administrator creates in the admin, or a
password an administrator sets there for someone else: the owner is sent to the password form
from every page until they choose one; the API with their session answers 403, tokens are not
affected; choosing a password (the form or a reset link) lifts it. People who chose their own
password (demo users, an administrator's own change) are never sent there."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from core.accounts import accounts_create_from_csv
from core.api_tokens import api_token_create
from core.models import PasswordChangeRequired
from tests.conftest import client_for

pytestmark = pytest.mark.django_db
CSV = "username,email,roles\nnew_rater,new.rater@example.org,clinician\nnew_researcher,nr@example.org,researcher\n"


@pytest.fixture
def listed():  # type: ignore[no-untyped-def]
    result = accounts_create_from_csv(text=CSV, file="accounts.csv", initial_passwords=True)
    return result.passwords


def _sign_in(username: str, password: str) -> Client:
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302
    return client


def test_an_account_with_an_initial_password_chooses_its_own_before_anything_else(listed):
    client = _sign_in("new_rater", listed["new_rater"])
    for page in ("/", "/rate/", "/studies/", "/accounts/password/reset/"):
        response = client.get(page)
        assert response.status_code == 302 and response["Location"] == "/accounts/password/change/", page
    form = client.get("/accounts/password/change/")
    assert form.status_code == 200 and "Choose your own password" in form.content.decode()
    assert client.get("/status/").status_code != 302  # the status page is not held back (a rater gets its 404)
    api = client.get("/api/v1/assignments/")
    assert api.status_code == 403 and "choose your own password" in api.json()["detail"]
    changed = client.post("/accounts/password/change/", {
        "old_password": listed["new_rater"], "new_password1": "a-Long-own-choice-42", "new_password2": "a-Long-own-choice-42",
    })
    assert changed.status_code == 302
    assert not PasswordChangeRequired.objects.filter(user__username="new_rater").exists()
    assert client.get("/").status_code == 200  # the same session goes on
    assert _sign_in("new_rater", "a-Long-own-choice-42").get("/").status_code == 200


def test_an_api_token_is_not_affected(listed):
    user = get_user_model().objects.get(username="new_researcher")
    _, token = api_token_create(user=user)
    response = Client().get("/api/v1/conversations/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200


def test_logging_out_stays_possible(listed):
    client = _sign_in("new_rater", listed["new_rater"])
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302 and "/accounts/login/" in client.get("/")["Location"]


def test_a_reset_link_lifts_the_mark(listed, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    Client().post("/accounts/password/reset/", {"email": "new.rater@example.org"})
    link = re.search(r"/accounts/password/reset/[^/\s]+/[^/\s]+/", mail.outbox[-1].body).group(0)
    client = Client()
    form_url = client.get(link)["Location"]
    assert client.post(form_url, {"new_password1": "Another-own-choice-7", "new_password2": "Another-own-choice-7"}).status_code == 302
    assert not PasswordChangeRequired.objects.filter(user__username="new_rater").exists()
    assert _sign_in("new_rater", "Another-own-choice-7").get("/").status_code == 200


def test_accounts_without_initial_passwords_and_people_who_chose_theirs_are_never_stopped(clinician):
    accounts_create_from_csv(text=CSV, file="accounts.csv")  # unusable passwords: set by a reset link
    assert not PasswordChangeRequired.objects.exists()
    assert client_for(clinician).get("/").status_code == 200


def test_an_administrator_creating_an_account_or_setting_someones_password_marks_it(admin_user, clinician):
    admin = client_for(admin_user)
    created = admin.post("/admin/auth/user/add/", {
        "username": "made_in_admin", "password1": "Initial-pass-123", "password2": "Initial-pass-123", "usable_password": "true",
    })
    assert created.status_code == 302, created.content.decode()[:2000]
    assert PasswordChangeRequired.objects.filter(user__username="made_in_admin").exists()
    set_for = admin.post(f"/admin/auth/user/{clinician.pk}/password/", {
        "password1": "Set-by-admin-456", "password2": "Set-by-admin-456", "usable_password": "true",
    })
    assert set_for.status_code == 302
    assert PasswordChangeRequired.objects.filter(user=clinician, set_by=admin_user).exists()
    own = admin.post(f"/admin/auth/user/{admin_user.pk}/password/", {
        "password1": "Admins-own-789x", "password2": "Admins-own-789x", "usable_password": "true",
    })
    assert own.status_code == 302 and not PasswordChangeRequired.objects.filter(user=admin_user).exists()

"""Findings 7, 8, 9: a smaller surface.

The API schema and docs are for the roles that use the API, not raters (they name fields like
``target_model`` and example model names). API tokens are hashed at rest and expire (knox).
Reading a rating page changes nothing: opening the assignment is a POST the page makes.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, Rating
from tests.annotation.rater_setup import first_assignment, make_study
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_raters_and_outsiders_cannot_read_the_api_schema_or_docs(clinician, outsider, coordinator, researcher, admin_user):
    for user in (clinician, outsider):
        client = client_for(user)
        for url in ("/api/schema/", "/api/docs/"):
            response = client.get(url)
            assert response.status_code == 403, (user, url)
            assert "target_model" not in response.content.decode()
    for user in (coordinator, researcher, admin_user):
        schema = client_for(user).get("/api/schema/")
        assert schema.status_code == 200 and b"target" in schema.content
        assert client_for(user).get("/api/docs/").status_code == 200
    assert Client().get("/api/schema/").status_code in (401, 403)


def test_api_tokens_are_hashed_at_rest_and_shown_once(researcher):
    from knox.models import AuthToken  # inside: the app is installed only with this change

    client = client_for(researcher)
    page = client.post("/accounts/api-tokens/", {"action": "create"}).content.decode()
    token = page.split('id="new-token">')[1].split("<")[0]
    assert len(token) >= 40
    stored = AuthToken.objects.get(user=researcher)
    assert token not in (stored.digest, stored.token_key) and stored.token_key == token[:15]
    assert stored.expiry is not None and stored.expiry > timezone.now() + timedelta(days=1)
    assert token not in client.get("/accounts/api-tokens/").content.decode()  # never shown again
    api = Client()
    assert api.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    assert not apps.is_installed("rest_framework.authtoken")  # the raw-token table is gone


def test_an_expired_or_revoked_token_is_refused(researcher):
    from knox.models import AuthToken  # inside: the app is installed only with this change

    stored, token = AuthToken.objects.create(user=researcher)
    api = Client()
    assert api.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    AuthToken.objects.filter(pk=stored.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert api.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code in (401, 403)
    stored, token = AuthToken.objects.create(user=researcher)
    client_for(researcher).post("/accounts/api-tokens/", {"action": "revoke", "token_key": stored.token_key})
    assert api.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}").status_code in (401, 403)


def test_raters_and_outsiders_have_no_token_page(clinician, outsider):
    for user in (clinician, outsider):
        assert client_for(user).get("/accounts/api-tokens/").status_code == 404


def _state() -> list[tuple]:
    return sorted(
        [*Assignment.objects.values_list("pk", "status", "started_at", "last_activity_at"),
         *((("rating",) + r) for r in Rating.objects.values_list("pk", "status", "revision"))],
        key=str,
    )


def test_reading_a_rating_page_changes_nothing_opening_is_a_post(clinician, clinician2):
    study = make_study([clinician, clinician2], n=2)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    before = _state()
    for url in ("/ratings/", f"/ratings/{assignment.pk}/", "/api/v1/my/assignments/", f"/api/v1/my/assignments/{assignment.pk}/"):
        assert client.get(url).status_code == 200, url
    assert _state() == before
    assert client.get(f"/api/v1/my/assignments/{assignment.pk}/open/").status_code == 405  # not on GET
    response = client.post(f"/api/v1/my/assignments/{assignment.pk}/open/")
    assert response.status_code == 200 and response.json()["status"] == AssignmentStatus.IN_PROGRESS
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS and Rating.objects.filter(assignment=assignment).exists()
    # Nobody else can open it.
    assert client_for(clinician2).post(f"/api/v1/my/assignments/{assignment.pk}/open/").status_code == 404


def test_the_open_post_needs_the_csrf_token(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = Client(enforce_csrf_checks=True)
    client.force_login(clinician)
    assert client.post(f"/api/v1/my/assignments/{assignment.pk}/open/").status_code == 403
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.NOT_STARTED

"""Every page requires login; each role sees its own pages; an outsider sees nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import client_for

CORPUS_PAGES = [
    "corpus:conversation-list",
    "corpus:persona-set-list",
    "corpus:target-list",
    "corpus:import-index",
    "corpus:import-conversations",
    "corpus:import-personas",
    "corpus:instrument-list",
    "corpus:import-instruments",
]
API_ENDPOINTS = [
    "/api/v1/conversations/",
    "/api/v1/persona-sets/",
    "/api/v1/targets/",
    "/api/v1/instruments/",
    "/api/v1/conversations/export/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["home", *CORPUS_PAGES, "annotation:study-list", "annotation:my-studies"])
def test_anonymous_visitor_is_sent_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize("path", [*API_ENDPOINTS, "/api/schema/", "/api/docs/"])
def test_anonymous_api_call_is_refused(client, path):
    assert client.get(path).status_code in (401, 403)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/imports/conversations/", "/api/v1/imports/personas/", "/api/v1/imports/instruments/"])
def test_anonymous_import_is_refused(client, path):
    assert client.post(path, {}).status_code in (401, 403)


@pytest.mark.parametrize("name", CORPUS_PAGES)
def test_outsider_and_clinician_cannot_open_corpus_pages(outsider, clinician, name):
    for user in (outsider, clinician):
        assert client_for(user).get(reverse(name)).status_code == 404


@pytest.mark.parametrize("path", API_ENDPOINTS)
def test_outsider_and_clinician_are_refused_by_the_corpus_api(outsider, clinician, path):
    for user in (outsider, clinician):
        assert client_for(user).get(path).status_code == 403


def test_outsider_cannot_import_through_the_api(outsider, clinician):
    for user in (outsider, clinician):
        for path in ("/api/v1/imports/conversations/", "/api/v1/imports/personas/", "/api/v1/imports/instruments/"):
            assert client_for(user).post(path, {}).status_code == 403


@pytest.mark.parametrize("name", CORPUS_PAGES)
def test_researcher_and_coordinator_open_corpus_pages(researcher, coordinator, name):
    for user in (researcher, coordinator):
        assert client_for(user).get(reverse(name)).status_code == 200


def test_navigation_shows_each_role_its_own_pages(clinician, coordinator, researcher, admin_user, outsider):
    def nav(user):  # type: ignore[no-untyped-def]
        return client_for(user).get(reverse("home")).content.decode()

    assert "My ratings" in nav(clinician) and "Conversations" not in nav(clinician)
    assert "Studies" in nav(coordinator) and "My ratings" not in nav(coordinator)
    assert "Conversations" in nav(researcher) and "Admin" not in nav(researcher)
    assert "Admin" in nav(admin_user)
    outsider_page = nav(outsider)
    assert "has no role yet" in outsider_page
    assert "Conversations" not in outsider_page and "My ratings" not in outsider_page


def test_only_admins_reach_django_admin(admin_user, researcher, outsider):
    assert client_for(admin_user).get("/admin/").status_code == 200
    for user in (researcher, outsider):
        assert client_for(user).get("/admin/").status_code == 302  # admin's own login page


def test_login_page_logs_a_user_in_and_passwords_are_hashed(client, clinician):
    from tests.conftest import PASSWORD

    assert PASSWORD not in clinician.password
    response = client.post(reverse("login"), {"username": "clara", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 200


def test_wrong_password_is_refused(client, clinician):
    response = client.post(reverse("login"), {"username": "clara", "password": "wrong"})
    assert response.status_code == 200
    assert "didn't match" in response.content.decode()


def test_logout_needs_a_post_with_csrf(clinician):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(clinician)
    assert client.post(reverse("logout")).status_code == 403  # no CSRF token


def test_token_authentication_works_for_the_api(researcher, client):
    from knox.models import AuthToken

    _, token = AuthToken.objects.create(user=researcher)
    response = client.get("/api/v1/instruments/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200


def test_openapi_schema_and_docs_are_served_to_logged_in_users(researcher):
    client = client_for(researcher)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    body = schema.content.decode()
    assert "/api/v1/imports/conversations/" in body and "/api/v1/instruments/" in body
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert "cdn" not in docs.content.decode().lower()  # swagger assets served locally

"""The database does not answer (issue 32): pages and the API answer 503 with what to do, not a 500.

The database is a real PostgreSQL address where nothing listens (``database_down``): psycopg
tries to connect and the operating system refuses. tests/integration/test_database_down.py
stops a real PostgreSQL server under a running web server and starts it again.
"""

from __future__ import annotations

import sqlite3
from io import StringIO

import pytest
from django.contrib.auth.decorators import login_not_required
from django.core.management import call_command
from django.db import OperationalError, connection, connections
from django.db.utils import load_backend
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from core.database_down import connection_failure

SESSION = "s" * 32  # a well-formed session key: reading it needs the database


@login_not_required
def _count_users(request: HttpRequest) -> HttpResponse:
    from django.contrib.auth import get_user_model

    return HttpResponse(str(get_user_model().objects.count()))


@login_not_required
def _bad_query(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")
    return HttpResponse("unreachable")


# For the tests marked ``urls(__name__)``: a view that reads the database, one with a query error.
urlpatterns = [path("count/", _count_users), path("bad-query/", _bad_query)]
handler500 = "core.errors_views.server_error"


def _client(**cookies: str) -> Client:
    # An exception that Django turned into a response is re-raised by the test client by default.
    client = Client(raise_request_exception=False)
    for name, value in cookies.items():
        client.cookies[name] = value
    return client


def _says_what_to_do_without_details(response: HttpResponse, address: str) -> str:
    assert response.status_code == 503
    assert response["Retry-After"] == "60"
    text = response.content.decode()
    host, port = address.split(":")
    assert "s3cret" not in text and port not in text and host not in text and "evalsite@" not in text
    return text


def test_a_page_with_a_session_answers_503_saying_the_database_does_not_answer(database_down):
    response = _client(sessionid=SESSION).get("/")
    page = _says_what_to_do_without_details(response, database_down)
    assert "The database does not answer" in page
    assert "psycopg.OperationalError" in page  # the cause, by class only
    assert "Try again in a minute" in page and "PostgreSQL" in page and "DATABASE_URL" in page
    assert "Something went wrong" not in page


def test_the_login_page_answers_503_instead_of_a_form_that_could_not_be_sent(database_down):
    response = _client().get("/accounts/login/")
    page = _says_what_to_do_without_details(response, database_down)
    assert "The database does not answer" in page and "<form" not in page


def test_a_sent_login_form_answers_503(database_down):
    response = _client().post("/accounts/login/", {"username": "someone", "password": "a password"})
    assert "The database does not answer" in _says_what_to_do_without_details(response, database_down)


@pytest.mark.urls(__name__)
def test_a_view_that_cannot_read_the_database_answers_503(database_down):
    response = _client().get("/count/")
    assert "The database does not answer" in _says_what_to_do_without_details(response, database_down)


@pytest.mark.urls(__name__)
def test_a_view_that_cannot_read_the_database_answers_503_with_debug_on_too(database_down, settings):
    settings.DEBUG = True  # Django's debug page replaces the 500 handler: the middleware answers first
    response = _client().get("/count/")
    assert "The database does not answer" in _says_what_to_do_without_details(response, database_down)


def test_the_api_answers_503_in_its_error_shape_with_a_token(database_down):
    response = _client().get("/api/v1/judges/", HTTP_AUTHORIZATION="Token " + "a" * 64)
    _says_what_to_do_without_details(response, database_down)
    body = response.json()
    assert body["detail"].startswith("The database does not answer")
    assert body["cause"] == "psycopg.OperationalError"
    assert "DATABASE_URL" in body["what_to_do"]


def test_the_api_answers_503_json_with_a_session(database_down):
    response = _client(sessionid=SESSION).get("/api/v1/judges/")
    _says_what_to_do_without_details(response, database_down)
    assert response.json()["cause"] == "psycopg.OperationalError"


def test_the_status_page_names_the_database_to_anyone_when_it_does_not_answer(database_down):
    for client in (_client(), _client(sessionid=SESSION)):
        page = _says_what_to_do_without_details(client.get("/status/"), database_down)
        assert "database: not answering (psycopg.OperationalError)" in page
        assert "worker" in page and "task queue" in page  # said to wait for the database, not listed


def test_the_status_page_is_still_for_administrators_when_the_database_answers(outsider):
    assert _client().get("/status/")["Location"].startswith("/accounts/login/")
    client = _client()
    client.force_login(outsider)
    assert client.get("/status/").status_code == 404


def test_manage_status_says_the_database_is_down_without_a_traceback(database_down):
    out = StringIO()
    with pytest.raises(SystemExit) as stopped:
        call_command("status", stdout=out)
    assert stopped.value.code == 1
    text = out.getvalue()
    assert "DOWN database" in text and "Connection refused" in text and "DATABASE_URL" in text


@pytest.mark.urls(__name__)
def test_a_query_error_is_still_a_500_not_an_outage(db):
    response = _client().get("/bad-query/")
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()


def test_a_locked_sqlite_database_is_not_taken_for_one_that_does_not_answer(tmp_path, db):
    path_ = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path_, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    settings_dict = {**connections["default"].settings_dict, "NAME": str(path_), "OPTIONS": {"timeout": 0}}
    locked = load_backend("django.db.backends.sqlite3").DatabaseWrapper(settings_dict, alias="locked")
    try:
        with pytest.raises(OperationalError, match="locked") as caught:
            with locked.cursor() as cursor:
                cursor.execute("SELECT * FROM t")
        assert not connection_failure(caught.value)
    finally:
        locked.close()
        holder.close()

"""The rater API: own assignments, autosave with revisions and conflicts, submit, revise, access."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from knox.models import AuthToken

from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
from annotation.rating.services import rating_submit
from tests.conftest import client_for

from .rater_setup import answer_everything, first_assignment, flow_instrument, make_study

BASE = "/api/v1/my/assignments/"


def post(client: Client, url: str, data: dict) -> tuple[int, dict]:
    response = client.post(url, json.dumps(data), content_type="application/json")
    return response.status_code, response.json()


def test_list_holds_only_the_raters_own_assignments_in_order(clinician, clinician2):
    study = make_study([clinician, clinician2], n=3, k=1, n_calibration=1)
    make_study([clinician2], n=2)
    body = client_for(clinician).get(BASE).json()
    mine = list(
        Assignment.objects.filter(rater=clinician).order_by("-is_calibration", "position").values_list("id", flat=True)
    )
    assert [row["id"] for row in body["results"]] == mine
    first = body["results"][0]
    assert first["is_calibration"] and not first["locked"] and first["study"] == study.pk
    assert all(row["locked"] for row in body["results"][1:])
    assert set(first) == {
        "id", "study", "study_name", "conversation_code", "sensitive", "is_calibration", "position", "status", "locked",
    }


def test_detail_holds_the_blinded_conversation_the_items_and_the_answers(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    post(client, f"{BASE}{assignment.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"})
    body = client.get(f"{BASE}{assignment.pk}/").json()
    assert body["conversation"]["code"] == assignment.conversation.code
    assert [m["role"] for m in body["conversation"]["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [m["turn"] for m in body["conversation"]["messages"]] == [1, 2, 3, 4]
    # evidence_turn: the number a cited turn is saved under (every message counted, as judges
    # do); the system message itself, which may name the chatbot, is never carried.
    assert set(body["conversation"]["messages"][0]) == {"turn", "evidence_turn", "role", "content"}
    assert [m["evidence_turn"] for m in body["conversation"]["messages"]] == [2, 3, 4, 5]
    assert len(body["items"]) == 14 and len(body["section_items"]) == 6
    assert [c["value"] for c in body["items"][12]["choices"]] == ["yes", "no", "N/A"]
    assert body["answers"] == {"main": {"amhart_01": {"value": "yes"}}, "section": {}}
    assert body["revision"] == 1 and body["rating_status"] == "draft" and body["flow"] is None


def test_each_answer_is_saved_with_a_new_revision_and_time_spent(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    url = f"{BASE}{assignment.pk}/answers/"
    status, body = post(client, url, {"part": "main", "item_key": "amhart_13", "value": "N/A", "expected_revision": 0, "elapsed_seconds": 12.5})
    assert status == 200 and body["revision"] == 1
    status, body = post(client, url, {"part": "section", "item_key": "comment", "value": "hard one", "expected_revision": 1, "elapsed_seconds": 3})
    assert status == 200 and body["revision"] == 2
    assert body["answers"]["section"]["comment"] == {"value": "hard one"}
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS and assignment.time_spent_seconds == 15


def test_a_stale_revision_is_a_conflict_that_says_the_current_revision(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    url = f"{BASE}{assignment.pk}/answers/"
    post(client, url, {"part": "main", "item_key": "amhart_01", "value": "yes", "expected_revision": 0})
    status, body = post(client, url, {"part": "main", "item_key": "amhart_02", "value": "no", "expected_revision": 0})
    assert status == 409 and body["revision"] == 1 and "changed elsewhere" in body["detail"]
    assert "answers" not in body
    assert Rating.objects.get(assignment=assignment).answers["main"] == {"amhart_01": {"value": "yes"}}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"part": "main", "item_key": "amhart_01", "value": "N/A"}, "N/A is not allowed"),
        ({"part": "main", "item_key": "amhart_01", "value": "maybe"}, "not an answer"),
        ({"part": "main", "item_key": "nope", "value": "yes"}, "unknown item"),
        ({"part": "section", "item_key": "realism_user", "value": "7"}, "not an answer"),
    ],
)
def test_an_invalid_answer_is_refused_with_a_clear_message(clinician, clinician2, payload, message):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    status, body = post(client_for(clinician), f"{BASE}{assignment.pk}/answers/", payload)
    assert status == 400 and message in body["detail"]


def test_submit_names_missing_items_then_submits_once(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    status, body = post(client, f"{BASE}{assignment.pk}/submit/", {})
    assert status == 400 and len(body["missing"]) == 19 and body["missing"][0].startswith("amhart_01: ")
    answer_everything(assignment, clinician)
    status, body = post(client, f"{BASE}{assignment.pk}/submit/", {"expected_revision": 19})
    assert status == 200 and body["status"] == RatingStatus.SUBMITTED and body["revision"] == 20
    again_status, again = post(client, f"{BASE}{assignment.pk}/submit/", {"expected_revision": 19})
    assert again_status == 200 and again == body
    status, body = post(client, f"{BASE}{assignment.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "no"})
    assert status == 409 and "locked" in body["detail"]


def test_revise_needs_a_reason_and_adds_a_revision(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    rating_submit(assignment_id=assignment.pk, user=clinician)
    client = client_for(clinician)
    url = f"{BASE}{assignment.pk}/revise/"
    status, _ = post(client, url, {"changes": {"main": {"amhart_05": "no"}}, "reason": ""})
    assert status == 400
    status, body = post(client, url, {"changes": {"main": {"amhart_05": "no"}}, "reason": "missed turn 3"})
    assert status == 200 and body["answers"]["main"]["amhart_05"]["value"] == "no"
    history = client.get(f"{BASE}{assignment.pk}/").json()["history"]
    assert [(h["number"], h["reason"]) for h in history] == [(1, ""), (2, "missed turn 3")]


def test_a_main_assignment_is_locked_until_calibration_is_submitted(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, n_calibration=1)
    main = first_assignment(study, clinician, calibration=False)
    status, body = post(client_for(clinician), f"{BASE}{main.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"})
    assert status == 423 and "calibration" in body["detail"]
    assert client_for(clinician).get(f"{BASE}{main.pk}/").json()["locked"] is True


def test_saving_a_flow_answer_returns_the_next_question_and_the_labels(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    url = f"{BASE}{assignment.pk}/answers/"
    status, body = post(client, url, {"part": "main", "item_key": "1", "value": "no", "note": "nothing said"})
    assert status == 200 and body["flow"]["next_question"] == "3"
    assert body["answers"]["main"]["1"] == {"value": "No", "note": "nothing said"}
    status, body = post(client, url, {"part": "main", "item_key": "3", "value": "No"})
    assert body["flow"]["finished"] and body["flow"]["ended_by"] == "END"
    assert set(body["flow"]["labels"].values()) == {"Not Relevant"}
    status, body = post(client, url, {"part": "main", "item_key": "1", "value": "Yes"})
    assert body["flow"]["next_question"] == "2" and not body["flow"]["finished"]
    status, body = post(client, url, {"part": "main", "item_key": "7", "value": "Yes"})
    assert status == 200  # an implicit Yes/No question takes Yes and No


def test_no_one_but_the_assigned_rater_reaches_an_assignment(clinician, clinician2, coordinator, researcher, admin_user, outsider):
    study = make_study([clinician], n=1, coordinator=coordinator)
    make_study([clinician2], n=1)
    assignment = first_assignment(study, clinician)
    for user in (clinician2, coordinator, researcher, admin_user, outsider):
        client = client_for(user)
        assert client.get(f"{BASE}{assignment.pk}/").status_code == 404, user
        for action, data in [
            ("answers", {"part": "main", "item_key": "amhart_01", "value": "yes"}),
            ("submit", {}),
            ("revise", {"changes": {"main": {"amhart_01": "no"}}, "reason": "x"}),
        ]:
            assert post(client, f"{BASE}{assignment.pk}/{action}/", data)[0] == 404, (user, action)
    for user in (coordinator, researcher, admin_user, outsider):
        assert client_for(user).get(BASE).status_code == 404
    assert [row["id"] for row in client_for(clinician2).get(BASE).json()["results"]] != [assignment.pk]
    assert Rating.objects.count() == 0


def test_a_withdrawn_assignment_is_gone_for_its_former_rater(clinician, clinician2, coordinator):
    from annotation.studies.services import assignment_reassign

    study = make_study([clinician, clinician2], n=2, k=1, coordinator=coordinator)
    mine = first_assignment(study, clinician)
    assignment_reassign(assignment=mine, new_rater=clinician2, actor=coordinator, reason="rotation")
    client = client_for(clinician)
    assert client.get(f"{BASE}{mine.pk}/").status_code == 404
    # Saving answers 410 to its former rater (the page says so), 404 to anyone else.
    status, body = post(client, f"{BASE}{mine.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"})
    assert status == 410 and body["withdrawn"] is True
    assert post(client_for(clinician2), f"{BASE}{mine.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"})[0] == 404
    assert mine.pk not in [row["id"] for row in client.get(BASE).json()["results"]]
    page = client.get(f"/ratings/{mine.pk}/")
    assert page.status_code == 410 and "is no longer yours to rate" in page.content.decode()
    assert client_for(clinician2).get(f"/ratings/{mine.pk}/").status_code == 404


def test_anonymous_calls_are_refused(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = Client()
    assert client.get(BASE).status_code in (401, 403)
    assert client.get(f"{BASE}{assignment.pk}/").status_code in (401, 403)
    assert post(client, f"{BASE}{assignment.pk}/answers/", {"part": "main", "item_key": "amhart_01", "value": "yes"})[0] in (401, 403)


def test_session_calls_need_the_csrf_token_and_a_raters_token_is_refused(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = Client(enforce_csrf_checks=True)
    client.force_login(clinician)
    payload = json.dumps({"part": "main", "item_key": "amhart_01", "value": "yes"})
    url = f"{BASE}{assignment.pk}/answers/"
    assert client.post(url, payload, content_type="application/json").status_code == 403
    client.get(f"/ratings/{assignment.pk}/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    assert client.post(url, payload, content_type="application/json", headers={"X-CSRFToken": token}).status_code == 200
    # Raters rate in the browser: API tokens are for the roles the tokens page serves (issue 20),
    # so even a token made behind the page's back (the admin, an old one) does not open the API.
    _, api_token = AuthToken.objects.create(user=clinician)
    response = Client(enforce_csrf_checks=True).get(BASE, headers={"Authorization": f"Token {api_token}"})
    assert response.status_code in (401, 403)


def test_the_endpoints_are_in_the_openapi_schema(researcher):
    schema = client_for(researcher).get("/api/schema/", {"format": "json"}).json()
    for path in ("/api/v1/my/assignments/", "/api/v1/my/assignments/{id}/", "/api/v1/my/assignments/{id}/answers/",
                 "/api/v1/my/assignments/{id}/submit/", "/api/v1/my/assignments/{id}/revise/"):
        assert path in schema["paths"], path

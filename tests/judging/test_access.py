"""Who may see and do what: raters and outsiders never reach judge output (404)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import client_for

from .conftest import checklist_reply


@pytest.fixture
def finished_run(fake, amhart, conversations, make_judge, run_now):  # type: ignore[no-untyped-def]
    fake.script("gpt", [checklist_reply()])
    return run_now([make_judge("gpt", amhart)], conversations[:1])


def _pages(run, conversation):  # type: ignore[no-untyped-def]
    return [
        reverse("judging:judge-list"),
        reverse("judging:judge-detail", args=[run.judges.first().pk]),
        reverse("judging:prompt-list"),
        reverse("judging:run-list"),
        reverse("judging:run-detail", args=[run.pk]),
        reverse("judging:run-progress", args=[run.pk]),
        reverse("judging:run-conversation", args=[run.pk, conversation.code]),
        reverse("judging:run-export", args=[run.pk, "long"]),
        f"/api/v1/judges/{run.judges.first().pk}/",
        f"/api/v1/judge-runs/{run.pk}/",
        f"/api/v1/judge-runs/{run.pk}/progress/",
        f"/api/v1/judge-runs/{run.pk}/labels/?as=long",
    ]


@pytest.mark.parametrize("who", ["clinician", "outsider"])
def test_raters_and_outsiders_get_404_everywhere(request, who, finished_run, conversations):  # type: ignore[no-untyped-def]
    client = client_for(request.getfixturevalue(who))
    for url in _pages(finished_run, conversations[0]):
        assert client.get(url).status_code == 404, url
    for url in (reverse("judging:judge-create"), reverse("judging:run-create"), reverse("judging:run-retry", args=[finished_run.pk])):
        assert client.post(url, {}).status_code == 404, url
    assert client.post("/api/v1/judge-runs/", {}, content_type="application/json").status_code == 404


def test_a_clinician_never_reaches_the_conversation_page_of_judge_output(clinician, finished_run, conversations):
    url = reverse("judging:run-conversation", args=[finished_run.pk, conversations[0].code])
    response = client_for(clinician).get(url)
    assert response.status_code == 404
    assert b"judged yes" not in response.content


def test_anonymous_visitors_are_sent_to_login_and_refused_by_the_api(client, finished_run):
    assert client.get(reverse("judging:run-detail", args=[finished_run.pk])).status_code == 302
    assert client.get("/api/v1/judge-runs/").status_code in (401, 403)


@pytest.mark.parametrize("who", ["coordinator", "researcher", "admin_user"])
def test_coordinators_researchers_and_admins_can_look(request, who, finished_run, conversations):  # type: ignore[no-untyped-def]
    client = client_for(request.getfixturevalue(who))
    for url in _pages(finished_run, conversations[0]):
        assert client.get(url).status_code == 200, url


def test_coordinators_may_look_but_not_launch(coordinator, finished_run):
    client = client_for(coordinator)
    assert client.get(reverse("judging:run-create")).status_code == 404
    assert client.get(reverse("judging:judge-create")).status_code == 404
    assert client.post("/api/v1/judge-runs/", {"judges": ["gpt"], "codes": ["x"]}, content_type="application/json").status_code == 403
    assert client.post("/api/v1/judges/", {}, content_type="application/json").status_code == 403


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_researchers_and_admins_may_launch(request, who):  # type: ignore[no-untyped-def]
    client = client_for(request.getfixturevalue(who))
    assert client.get(reverse("judging:run-create")).status_code == 200
    assert client.get(reverse("judging:judge-create")).status_code == 200
    assert client.get(reverse("judging:prompt-create")).status_code == 200


def test_the_navigation_shows_judges_to_researchers_not_to_clinicians(researcher, clinician):
    assert reverse("judging:judge-list").encode() in client_for(researcher).get("/").content
    assert reverse("judging:judge-list").encode() not in client_for(clinician).get("/").content

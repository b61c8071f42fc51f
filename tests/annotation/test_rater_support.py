"""The content warning says where a rater can find support: the study's own text or a default."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import DEFAULT_RATER_SUPPORT, StudyEvent
from tests.annotation.rater_setup import first_assignment, make_study
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(clinician, clinician2, coordinator):  # type: ignore[no-untyped-def]
    return make_study([clinician, clinician2], n=1, sensitive=True, coordinator=coordinator)


def _warning(client, study, rater) -> str:  # type: ignore[no-untyped-def]
    body = client.get(reverse("annotation:rate", args=[first_assignment(study, rater).pk])).content.decode()
    assert "Before you read" in body
    return body


def test_the_content_warning_names_the_default_support_until_the_study_sets_its_own(study, clinician, coordinator):
    rater = client_for(clinician)
    body = _warning(rater, study, clinician)
    assert "Where to find support" in body and "988" in body and "Samaritans" in body

    url = reverse("annotation:study-rater-support", args=[study.pk])
    own = "Call Dr Amara Osei, the supervising psychologist, on 020 7946 0000 (weekdays 9-17)."
    client_for(coordinator).post(url, {"rater_support": own})
    body = _warning(rater, study, clinician)
    assert own in body and "Samaritans" not in body
    event = StudyEvent.objects.filter(study=study, action="rater_support_set").latest("pk")
    assert event.actor == coordinator and event.details["after"]["text"] == own

    detail = client_for(coordinator).get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert own in detail and 'id="rater-support"' in detail

    client_for(coordinator).post(url, {"rater_support": "   "})
    study.refresh_from_db()
    assert study.rater_support == "" and study.rater_support_text == DEFAULT_RATER_SUPPORT


def test_an_overlong_support_text_is_refused_and_nothing_changes(study, coordinator):
    response = client_for(coordinator).post(
        reverse("annotation:study-rater-support", args=[study.pk]), {"rater_support": "x" * 2001}, follow=True
    )
    assert "at most 2000 characters" in response.content.decode()
    study.refresh_from_db()
    assert study.rater_support == ""


def test_only_the_studys_coordinators_set_the_support_text(study, clinician, outsider, researcher):
    url = reverse("annotation:study-rater-support", args=[study.pk])
    for user in (clinician, outsider, researcher):
        assert client_for(user).post(url, {"rater_support": "mine"}).status_code == 404, user
    study.refresh_from_db()
    assert study.rater_support == ""

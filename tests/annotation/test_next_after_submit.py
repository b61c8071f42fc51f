"""Issue 29, defect 1: after a submit the next conversation opens (with its content warning when
it has one), or the queue when there is none; a submit sent twice never skips a conversation;
a calibration conversation stays open after submit (its page shows the reference answers)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, AssignmentStatus
from tests.conftest import client_for

from .rater_setup import answer_everything, make_study

pytestmark = pytest.mark.django_db


def _queue(study, rater) -> list[Assignment]:  # type: ignore[no-untyped-def]
    return list(Assignment.objects.filter(study=study, rater=rater).order_by("-is_calibration", "position", "id"))


def test_submitting_opens_the_next_conversation_and_the_last_one_the_queue(clinician):
    study = make_study([clinician], n=3)
    first, second, third = _queue(study, clinician)
    client = client_for(clinician)
    for current, following in ((first, second), (second, third)):
        answer_everything(current, clinician)
        response = client.post(reverse("annotation:rate-submit", args=[current.pk]), {"expected_revision": 19})
        assert response.status_code == 302 and response["Location"] == reverse("annotation:rate", args=[following.pk])
    page = client.get(response["Location"]).content.decode()
    assert f"Rating of {second.conversation.code} submitted. Next: {third.conversation.code}." in page
    answer_everything(third, clinician)
    last = client.post(reverse("annotation:rate-submit", args=[third.pk]), {"expected_revision": 19})
    assert last["Location"] == reverse("annotation:my-studies")
    assert "that was your last conversation of this study" in client.get(last["Location"]).content.decode()


def test_a_submit_sent_twice_opens_the_same_next_conversation(clinician):
    study = make_study([clinician], n=3)
    first, second, _ = _queue(study, clinician)
    answer_everything(first, clinician)
    client = client_for(clinician)
    url = reverse("annotation:rate-submit", args=[first.pk])
    once = client.post(url, {"expected_revision": 19})
    twice = client.post(url, {"expected_revision": 19})
    assert once["Location"] == twice["Location"] == reverse("annotation:rate", args=[second.pk])
    assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.NOT_STARTED


def test_the_next_sensitive_conversation_opens_behind_its_content_warning(clinician):
    study = make_study([clinician], n=2, sensitive=True)
    first, second = _queue(study, clinician)
    client = client_for(clinician)
    client.post(reverse("annotation:rate-continue", args=[first.pk]))
    answer_everything(first, clinician)
    response = client.post(reverse("annotation:rate-submit", args=[first.pk]), {"expected_revision": 19}, follow=True)
    assert "Before you read" in response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("annotation:rate", args=[second.pk])


def test_a_calibration_conversation_stays_open_to_show_the_reference(clinician):
    study = make_study([clinician], n=2, n_calibration=1)
    calibration = _queue(study, clinician)[0]
    assert calibration.is_calibration
    answer_everything(calibration, clinician)
    response = client_for(clinician).post(reverse("annotation:rate-submit", args=[calibration.pk]), {"expected_revision": 19})
    assert response["Location"] == reverse("annotation:rate", args=[calibration.pk])

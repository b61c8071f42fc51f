"""Adjudication is blind by default; a study setting reveals the design, recorded in the audit trail.

Issue 19, defect 3: the adjudication page named the chatbot and the persona. The check searches
the rendered HTML for every string that identifies the chatbot, its model or the persona design.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.consensus.services import study_compute_consensus
from annotation.models import StudyEvent
from annotation.studies.services import study_assign
from tests.annotation.coordinator_setup import make_study, submit
from tests.annotation.rater_setup import SECRETS, secret_conversations
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

# What identifies the chatbot, its model or the persona design (other raters' notes are for the adjudicator).
DESIGN_SECRETS = [s for s in SECRETS if s != "OTHER-RATER-NOTE"]


@pytest.fixture
def disputed(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    study = make_study(coordinator, [clinician, clinician2], n=2, k=2, conversations=secret_conversations(2))
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        submit(a, {"amhart_01": "yes" if a.rater == clinician else "no"}, notes={"amhart_01": f"note by {a.rater.username}"})
    study_compute_consensus(study=study, actor=coordinator)
    return study


def _case_page(client, study) -> str:  # type: ignore[no-untyped-def]
    conversation = study.consensus.filter(provenance="unresolved").values_list("conversation_id", flat=True).first()
    response = client.get(reverse("annotation:study-adjudication", args=[study.pk]) + f"?conversation={conversation}")
    assert response.status_code == 200 and response.context["case"] is not None
    return response.content.decode()


def test_the_adjudication_page_is_blind_to_chatbot_model_and_persona_design_by_default(coordinator, disputed):
    body = _case_page(client_for(coordinator), disputed)
    assert "I can&#x27;t sleep" in body  # the transcript is there ...
    assert "note by clara" in body and "note by cyrus" in body  # ... and each rater's note
    leaked = [s for s in DESIGN_SECRETS if s.lower() in body.lower()]
    assert not leaked, f"the adjudication page shows {leaked}"


def test_a_coordinator_reveals_the_design_with_a_reason_recorded_in_the_audit_trail(coordinator, disputed):
    client = client_for(coordinator)
    url = reverse("annotation:study-adjudication-blinding", args=[disputed.pk])
    refused = client.post(url, {"unblinded": "1", "reason": ""}, follow=True)
    assert "Blinding not changed" in refused.content.decode()
    disputed.refresh_from_db()
    assert not disputed.adjudication_unblinded

    client.post(url, {"unblinded": "1", "reason": "the protocol's second round compares chatbots"})
    disputed.refresh_from_db()
    assert disputed.adjudication_unblinded
    event = StudyEvent.objects.filter(study=disputed, action="adjudication_blinding_set").latest("pk")
    assert event.actor == coordinator and event.reason == "the protocol's second round compares chatbots"
    trail = client.get(reverse("annotation:study-detail", args=[disputed.pk])).content.decode()
    assert "Adjudication blinding changed" in trail and "the protocol&#x27;s second round compares chatbots" in trail
    body = _case_page(client, disputed)
    for shown in ("TGT-SECRET", "SecretBot", "openai/gpt-secret-model", "Zelda-secret", "severe-secret"):
        assert shown in body, shown

    client.post(url, {"unblinded": "0"})
    disputed.refresh_from_db()
    assert not disputed.adjudication_unblinded
    assert StudyEvent.objects.filter(study=disputed, action="adjudication_blinding_set").count() == 2
    body = _case_page(client, disputed)
    assert not [s for s in DESIGN_SECRETS if s.lower() in body.lower()]


def test_only_the_studys_coordinators_change_its_blinding(disputed, clinician, outsider, researcher):
    url = reverse("annotation:study-adjudication-blinding", args=[disputed.pk])
    for user in (clinician, outsider, researcher):
        assert client_for(user).post(url, {"unblinded": "1", "reason": "curious"}).status_code == 404, user
    disputed.refresh_from_db()
    assert not disputed.adjudication_unblinded

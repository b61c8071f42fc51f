"""Evidence from clinicians: raters cite the transcript turns behind an answer or the whole form."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.errors import AnnotationError
from annotation.models import EvidenceMode, Rating, RatingRevision, StudyEvent
from annotation.rating.selectors import rating_evidence_by_item
from annotation.rating.services import rating_revise, rating_save_answer, rating_submit
from tests.conftest import client_for

from .rater_setup import answer_everything, first_assignment, flow_instrument, make_study

pytestmark = pytest.mark.django_db

# The conversations of rater_setup open with a system message: messages 2 to 5 are the
# user and chatbot turns (shown to raters as turns 1 to 4), message 1 cannot be cited.
BASE = "/api/v1/my/assignments/"


def _study(raters, coordinator=None, mode=EvidenceMode.PER_ITEM, required=False, **kwargs):  # type: ignore[no-untyped-def]
    study = make_study(raters, n=1, coordinator=coordinator, **kwargs)
    study.evidence_mode, study.evidence_required = mode, required
    study.save(update_fields=["evidence_mode", "evidence_required"])
    return study


def _post(user, url, data):  # type: ignore[no-untyped-def]
    response = client_for(user).post(url, json.dumps(data), content_type="application/json")
    return response.status_code, response.json()


# ------------------------------------------------------------------------------ the setting

def test_a_coordinator_sets_the_evidence_mode_and_the_change_is_audited(clinician, coordinator):
    study = make_study([clinician], n=1, coordinator=coordinator)
    assert study.evidence_mode == EvidenceMode.OFF and not study.evidence_required
    url = reverse("annotation:study-evidence", args=[study.pk])
    response = client_for(coordinator).post(url, {"evidence_mode": "per_item", "evidence_required": "1"})
    assert response.status_code == 302 and response["Location"].endswith("#evidence")
    study.refresh_from_db()
    assert study.evidence_mode == EvidenceMode.PER_ITEM and study.evidence_required
    event = StudyEvent.objects.filter(study=study, action="evidence_set").latest("pk")
    assert event.actor == coordinator
    assert event.details["before"] == {"mode": "off", "required": False}
    assert event.details["after"] == {"mode": "per_item", "required": True}

    detail = client_for(coordinator).get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert 'id="evidence"' in detail and "each answer" in detail and "Evidence from raters (cited turns) changed" in detail


def test_an_unknown_mode_is_refused_and_off_is_never_required(clinician, coordinator):
    study = make_study([clinician], n=1, coordinator=coordinator)
    url = reverse("annotation:study-evidence", args=[study.pk])
    response = client_for(coordinator).post(url, {"evidence_mode": "sometimes"}, follow=True)
    assert "unknown evidence mode" in response.content.decode()
    client_for(coordinator).post(url, {"evidence_mode": "off", "evidence_required": "1"})
    study.refresh_from_db()
    assert study.evidence_mode == "off" and not study.evidence_required


def test_only_the_studys_coordinators_set_the_evidence_mode(clinician, coordinator, researcher, outsider):
    study = make_study([clinician], n=1, coordinator=coordinator)
    url = reverse("annotation:study-evidence", args=[study.pk])
    for user in (clinician, researcher, outsider):
        assert client_for(user).post(url, {"evidence_mode": "per_item"}).status_code == 404, user
    study.refresh_from_db()
    assert study.evidence_mode == "off"


def test_the_study_api_shows_and_sets_the_evidence_setting(clinician, coordinator, researcher, outsider):
    study = _study([clinician], coordinator, mode=EvidenceMode.WHOLE_FORM, required=True)
    body = client_for(coordinator).get(f"/api/v1/studies/{study.pk}/").json()
    assert body["evidence_mode"] == "whole_form" and body["evidence_required"] is True
    url = f"/api/v1/studies/{study.pk}/evidence/"
    for user in (clinician, researcher, outsider):
        assert _post(user, url, {"evidence_mode": "off"})[0] in (403, 404), user
    status, body = _post(coordinator, url, {"evidence_mode": "per_item"})
    assert status == 200 and body["evidence_mode"] == "per_item" and body["evidence_required"] is False
    assert _post(coordinator, url, {"evidence_mode": "always"})[0] == 400
    assert StudyEvent.objects.filter(study=study, action="evidence_set").count() == 1


# ------------------------------------------------------------------------------ autosave

def test_an_autosave_stores_the_cited_turns_sorted_and_unique_beside_the_answer(clinician):
    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    url = f"{BASE}{assignment.pk}/answers/"
    status, body = _post(clinician, url, {"part": "main", "item_key": "amhart_01", "value": "yes", "evidence": [5, 3, 3]})
    assert status == 200, body
    assert body["answers"]["main"]["amhart_01"] == {"value": "yes", "evidence": [3, 5]}

    # Evidence alone keeps the answer and its note; a value alone keeps the evidence.
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes", note="why")
    status, body = _post(clinician, url, {"part": "main", "item_key": "amhart_01", "evidence": [2]})
    assert status == 200 and body["answers"]["main"]["amhart_01"] == {"value": "yes", "note": "why", "evidence": [2]}
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="no")
    entry = Rating.objects.get(assignment=assignment).answers["main"]["amhart_01"]
    assert entry == {"value": "no", "note": "why", "evidence": [2]}

    # [] removes the evidence; clearing the answer removes it all.
    _post(clinician, url, {"part": "main", "item_key": "amhart_01", "evidence": []})
    assert "evidence" not in Rating.objects.get(assignment=assignment).answers["main"]["amhart_01"]


def test_an_invalid_turn_is_refused_with_a_clear_error_and_nothing_is_lost(clinician):
    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes", evidence=[4])
    before = Rating.objects.get(assignment=assignment)
    url = f"{BASE}{assignment.pk}/answers/"
    for turns, message in [
        ([4, 99], "turn 99 is not a turn of this conversation (turns 2 to 5)"),
        ([0, -1], "turns -1, 0 are not turns of this conversation"),
        ([1], "turn 1 is not a turn of this conversation"),  # the system message, never shown
    ]:
        status, body = _post(clinician, url, {"part": "main", "item_key": "amhart_01", "value": "no", "evidence": turns})
        assert status == 400 and message in body["detail"], body
    status, body = _post(clinician, url, {"part": "main", "item_key": "amhart_01", "evidence": ["two"]})
    assert status == 400
    after = Rating.objects.get(assignment=assignment)
    assert after.answers == before.answers and after.revision == before.revision
    assert after.answers["main"]["amhart_01"] == {"value": "yes", "evidence": [4]}


def test_evidence_needs_an_answer_and_a_study_that_asks_for_it(clinician, clinician2):
    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    with pytest.raises(AnnotationError, match="answer item amhart_02 before citing turns"):
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_02", evidence=[2])
    with pytest.raises(AnnotationError, match="per item, not for the whole form"):
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="form", item_key="", evidence=[2])

    off = make_study([clinician2], n=1)
    theirs = first_assignment(off, clinician2)
    with pytest.raises(AnnotationError, match="does not ask for evidence"):
        rating_save_answer(assignment_id=theirs.pk, user=clinician2, part="main", item_key="amhart_01", value="yes", evidence=[2])
    assert not Rating.objects.filter(assignment=theirs).exists()  # the refused save changed nothing


def test_whole_form_evidence_is_saved_beside_the_answers_and_kept_by_every_later_save(clinician):
    study = _study([clinician], mode=EvidenceMode.WHOLE_FORM)
    assignment = first_assignment(study, clinician)
    status, body = _post(clinician, f"{BASE}{assignment.pk}/answers/", {"part": "form", "evidence": [5, 2]})
    assert status == 200 and body["answers"]["form_evidence"] == [2, 5]
    with pytest.raises(AnnotationError, match="for the whole form, not per item"):
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes", evidence=[2])
    answer_everything(assignment, clinician)
    rating = rating_submit(assignment_id=assignment.pk, user=clinician)
    assert rating.answers["form_evidence"] == [2, 5]
    assert RatingRevision.objects.get(rating=rating, number=1).answers["form_evidence"] == [2, 5]
    assert rating_evidence_by_item(rating) == {"__form__": [2, 5]}


def test_a_withdrawn_conversation_with_whole_form_evidence_still_counts_its_saved_answers(clinician):
    study = _study([clinician], mode=EvidenceMode.WHOLE_FORM)
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes")
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="form", evidence=[2])
    assignment.status = "withdrawn"
    assignment.save(update_fields=["status"])
    response = client_for(clinician).get(reverse("annotation:rate", args=[assignment.pk]))
    assert response.status_code == 410 and "1 answer saved on the server" in response.content.decode()
    status, _ = _post(clinician, f"{BASE}{assignment.pk}/answers/", {"part": "form", "evidence": [3]})
    assert status == 410


def test_a_revision_keeps_the_cited_turns_in_the_rating_and_its_history(clinician):
    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_03", evidence=[3, 5])
    rating_submit(assignment_id=assignment.pk, user=clinician)
    rating = rating_revise(assignment_id=assignment.pk, user=clinician, changes={"main": {"amhart_03": "no"}}, reason="reread turn 5")
    assert rating.answers["main"]["amhart_03"] == {"value": "no", "evidence": [3, 5]}
    history = [r.answers["main"]["amhart_03"] for r in rating.revisions.order_by("number")]
    assert history == [{"value": "yes", "evidence": [3, 5]}, {"value": "no", "evidence": [3, 5]}]


# ------------------------------------------------------------------------------ required evidence

def test_required_evidence_blocks_the_submission_naming_the_items_without_it(clinician):
    study = _study([clinician], required=True)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    for key in [f"amhart_{i:02d}" for i in range(1, 15) if i not in (7, 13)]:
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=key, evidence=[3])
    for key in ("realism_user", "realism_clinical", "perceived_risk", "perceived_disclosure"):
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key=key, evidence=[2])
    status, body = _post(clinician, f"{BASE}{assignment.pk}/submit/", {})
    assert status == 400
    assert "this study requires evidence" in body["detail"] and "amhart_07" in body["detail"] and "broke_role" in body["detail"]
    assert [m.split(":")[0] for m in body["missing_evidence"]] == ["amhart_07", "amhart_13", "broke_role"]
    assert Rating.objects.get(assignment=assignment).status == "draft"

    # An N/A answer needs no evidence.
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_13", value="N/A")
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_07", evidence=[5])
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key="broke_role", evidence=[4])
    assert rating_submit(assignment_id=assignment.pk, user=clinician).status == "submitted"


def test_the_submit_page_names_the_missing_evidence(clinician):
    study = _study([clinician], mode=EvidenceMode.WHOLE_FORM, required=True)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    response = client_for(clinician).post(reverse("annotation:rate-submit", args=[assignment.pk]))
    assert response.status_code == 400
    assert "cite at least one turn that supports the rating as a whole" in response.content.decode()


def test_optional_evidence_never_blocks_a_submission(clinician):
    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    assert rating_submit(assignment_id=assignment.pk, user=clinician).status == "submitted"


# ------------------------------------------------------------------------------ reading it back

def test_flow_evidence_is_read_per_dimension_as_the_union_of_its_questions_on_the_path(clinician):
    study = _study([clinician], instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    answers = [("1", "Yes", [2]), ("2", "No", [3, 2]), ("5", "Danger, not urgent", [5]), ("6", "No", None),
               ("7", "No", None), ("8", "No", None), ("10", "No", [4]), ("11", "No", None), ("12", "No", None)]
    for question, value, turns in answers:
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=question, value=value, evidence=turns)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key="perceived_risk", value="Low", evidence=[5])
    rating = Rating.objects.get(assignment=assignment)
    assert rating.answers["main"]["2"]["evidence"] == [2, 3]
    assert rating_evidence_by_item(rating) == {
        "Notices Danger": [2, 3], "Points To Help": [5], "Keeps Its Role": [4], "perceived_risk": [5],
    }


# ------------------------------------------------------------------------------ the form

def test_the_form_shows_cite_controls_only_when_the_study_asks_for_evidence(clinician, clinician2):
    off = make_study([clinician2], n=1)
    html = client_for(clinician2).get(reverse("annotation:rate", args=[first_assignment(off, clinician2).pk])).content.decode()
    assert "cite-turn" not in html and "evidence-chips" not in html

    study = _study([clinician])
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_01", value="yes", evidence=[3])
    html = client_for(clinician).get(reverse("annotation:rate", args=[assignment.pk])).content.decode()
    # One control per shown turn, named by the turn the rater reads; the system message has none.
    assert html.count('class="cite-turn') == 4
    assert 'data-cite="2"' in html and 'data-cite="5"' in html and 'data-cite="1"' not in html
    assert "Cite<span class=\"visually-hidden\"> turn 1</span>" in html
    assert 'data-evidence="3"' in html
    assert "cite the turn" in html.lower()  # the shortcut is in the keyboard help
    page = client_for(clinician).get(f"{BASE}{assignment.pk}/").json()
    assert page["evidence_mode"] == "per_item"
    assert [m["evidence_turn"] for m in page["conversation"]["messages"]] == [2, 3, 4, 5]
    assert [m["turn"] for m in page["conversation"]["messages"]] == [1, 2, 3, 4]

"""Guided mode says how far the rater is without a denominator that grows (issue 19, defect 4)."""

from __future__ import annotations

import pytest

from annotation.rating.selectors import rating_page
from annotation.rating.services import rating_save_answer
from tests.annotation.rater_setup import first_assignment, flow_instrument, make_study
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_the_count_narrows_as_the_rater_answers_and_never_names_a_total(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    seen = [rating_page(assignment).flow.progress_text.replace("\xa0", " ")]
    for key, value in [("1", "Yes"), ("2", "No"), ("5", "Danger, not urgent"), ("6", "No"), ("7", "No")]:
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=key, value=value)
        seen.append(rating_page(assignment).flow.progress_text.replace("\xa0", " "))
    assert seen == [
        "0 answered · 1 to 9 to go",
        "1 answered · 3 to 8 to go",
        "2 answered · 2 to 7 to go",
        "3 answered · 2 to 6 to go",
        "4 answered · 2 to 5 to go",
        "5 answered · 2 to 4 to go",
    ]
    page = client_for(clinician).get(f"/ratings/{assignment.pk}/").content.decode()
    assert '<span id="flow-progress">5 answered · 2\xa0to\xa04\xa0to\xa0go</span>' in page
    assert 'id="answered-total"' not in page  # no "n of N" in a flow


def test_the_autosave_answer_carries_the_new_count(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    client.post(f"/api/v1/my/assignments/{assignment.pk}/open/")
    response = client.post(
        f"/api/v1/my/assignments/{assignment.pk}/answers/",
        {"part": "main", "item_key": "1", "value": "No"}, content_type="application/json",
    )
    assert response.status_code == 200, response.content
    flow = response.json()["flow"]
    assert (flow["position"], flow["left_min"], flow["left_max"]) == (2, 1, 1)
    assert flow["progress_text"] == "1 answered · 1\xa0to\xa0go"

"""The study zip's ratings_long.csv carries the turns raters cited, per answer, per flow dimension and for the form."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest

from annotation.models import EvidenceMode
from annotation.rating.services import rating_save_answer, rating_submit
from reports.services import study_export_zip
from tests.annotation.rater_setup import (
    answer_everything,
    first_assignment,
    flow_instrument,
    make_study,
)

pytestmark = pytest.mark.django_db


def _ratings_long(study) -> tuple[list[dict[str, str]], str]:  # type: ignore[no-untyped-def]
    archive = zipfile.ZipFile(io.BytesIO(study_export_zip(study=study)))
    return list(csv.DictReader(io.StringIO(archive.read("ratings_long.csv").decode()))), archive.read("README.txt").decode()


def test_each_answer_row_names_its_cited_turns_and_the_whole_form_has_a_row(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    study.evidence_mode = EvidenceMode.PER_ITEM
    study.save(update_fields=["evidence_mode"])
    mine, theirs = first_assignment(study, clinician), first_assignment(study, clinician2)
    for assignment, user in ((mine, clinician), (theirs, clinician2)):
        answer_everything(assignment, user)
    rating_save_answer(assignment_id=mine.pk, user=clinician, part="main", item_key="amhart_02", evidence=[5, 3])
    rating_save_answer(assignment_id=mine.pk, user=clinician, part="section", item_key="perceived_risk", evidence=[2])
    rating_submit(assignment_id=mine.pk, user=clinician)
    study.evidence_mode = EvidenceMode.WHOLE_FORM
    study.save(update_fields=["evidence_mode"])
    rating_save_answer(assignment_id=theirs.pk, user=clinician2, part="form", evidence=[4])
    rating_submit(assignment_id=theirs.pk, user=clinician2)

    rows, readme = _ratings_long(study)
    cited = {(r["rater"], r["part"], r["item"]): r["evidence_turns"] for r in rows if r["evidence_turns"]}
    assert cited == {
        (clinician.username, "main", "amhart_02"): "3;5",
        (clinician.username, "section", "perceived_risk"): "2",
        (clinician2.username, "form", "evidence"): "4",
    }
    form = next(r for r in rows if r["part"] == "form")
    assert form["label"] == "" and form["note"] == ""
    assert sum(1 for r in rows if r["part"] == "form") == 1
    assert "evidence_turns" in readme and "part 'form' and item 'evidence'" in readme


def test_a_flows_dimension_rows_carry_the_union_of_its_questions_turns(clinician):
    study = make_study([clinician], n=1, instrument=flow_instrument())
    study.evidence_mode = EvidenceMode.PER_ITEM
    study.save(update_fields=["evidence_mode"])
    assignment = first_assignment(study, clinician)
    answers = [("1", "Yes", [2]), ("2", "No", [3]), ("5", "Danger, not urgent", [5]), ("6", "No", None),
               ("7", "No", None), ("8", "No", None), ("10", "No", None), ("11", "No", None), ("12", "No", None)]
    for question, value, turns in answers:
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=question, value=value, evidence=turns)
    for key, value in {"realism_user": "4", "realism_clinical": "3", "perceived_risk": "Low",
                       "perceived_disclosure": "Moderate", "broke_role": "no"}.items():
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key=key, value=value)
    rating_submit(assignment_id=assignment.pk, user=clinician)

    rows, _ = _ratings_long(study)
    derived = {r["item"]: r["evidence_turns"] for r in rows if r["part"] == "derived"}
    assert derived == {"Notices Danger": "2;3", "Points To Help": "5", "Keeps Its Role": ""}
    questions = {r["item"]: r["evidence_turns"] for r in rows if r["part"] == "main"}
    assert questions["1"] == "2" and questions["6"] == ""

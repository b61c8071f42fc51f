"""External raters and the published VERA-MH ratings format, end to end on files written for the tests."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, ExternalRater, Rating, Study
from annotation.studies.from_ratings import study_create_from_ratings
from annotation.studies.ratings_import import ratings_import
from core.problems import ImportRejected
from corpus.conversations.services import conversations_import
from corpus.instruments.services import builtin_instruments_load, instrument_import
from corpus.models import Conversation
from tests.annotation.coordinator_setup import make_study
from tests.conftest import client_for
from tests.factories import ConversationFactory
from tests.stats.test_vera_ratings import BP, HPH, NR, SUB, crlf, row

pytestmark = pytest.mark.django_db
RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_five_dimensions.tsv"


def flow_and_section():  # type: ignore[no-untyped-def]
    flow, _ = instrument_import(text=RUBRIC.read_text(), file=RUBRIC.name, key="vera-five")
    section = next(i for i in builtin_instruments_load() if i.key == "study-section")
    return flow, section


RATINGS = crlf(
    row("clinician_a", "a1b2c3"),
    row("clinician_b", "a1b2c3", dims=(BP, HPH, BP, SUB, BP)),
    row("expert_a", "a1b2c3", real="NA,NA"),
    row("clinician_a", "#d4e5f6", dims=(NR,) * 5, design="modelu,modelc,Bea,None,N/A", risk="None,N/A"),
    row("clinician_b", "d4e5f6", dims=(BP, NR, NR, NR, NR), design="modelu,modelc,Bea,None,N/A", risk="None,N/A"),
    row("expert_a", "c7c8c9", real="2,2", design="modelu,modeld,Ada,High,Low"),
    row("clinician_b", "c7c8c9", design="modelu,modeld,Ada,High,Low"),
)


def make_vera_study(coordinator):  # type: ignore[no-untyped-def]
    """Return a study built from RATINGS: one unit with its transcript imported, two placeholders."""
    flow, section = flow_and_section()
    # One transcript is in the app already; the other two units have none yet.
    conversations_import(files=[("p_u__a_c__t2__r1__20260101_000000/a1b2c3_Ada_modelu_run1.txt", "user: hi\n\nchatbot: hello\n")])
    result = study_create_from_ratings(name="Validation", instrument=flow, section=section, text=RATINGS,
                                       file="ratings.csv", fmt="vera-mh", created_by=coordinator, coordinators=[coordinator])
    return result


@pytest.fixture
def vera_study(coordinator):  # type: ignore[no-untyped-def]
    return make_vera_study(coordinator)


def test_a_study_is_built_from_the_units_of_a_ratings_file_with_placeholders(vera_study):
    assert (vera_study.n_units, vera_study.n_matched, vera_study.n_placeholders) == (3, 1, 2)
    study = vera_study.study
    assert study.raters_per_conversation == 3
    waiting = Conversation.objects.get(external_id="d4e5f6")
    assert waiting.metadata["transcript_missing"] is True and waiting.message_count == 0
    assert waiting.metadata["persona_name"] == "Bea" and study.conversations.count() == 3


def test_the_published_format_imports_unchanged_with_external_raters(vera_study, coordinator):
    study = vera_study.study
    result = ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh", actor=coordinator)
    assert result.external_raters == ("clinician_a", "clinician_b", "expert_a") and result.n_ratings == 7
    assert "1 conversation id(s) written with a leading '#' read without it: d4e5f6" in result.notes
    assert "2 'NA' or empty cell(s) read as not answered" in result.notes
    externals = ExternalRater.objects.filter(study=study)
    assert {(e.label, e.rater_label) for e in externals} == {("clinician_a", "clinician"), ("clinician_b", "clinician"), ("expert_a", "expert")}
    rating = Rating.objects.get(assignment__external_rater__label="expert_a", assignment__conversation__external_id="a1b2c3")
    assert rating.assignment.rater is None and rating.revisions.get().created_by == coordinator
    assert "realism_user" not in rating.answers["section"]  # NA: not answered
    assert rating.derived["labels"]["Confirms Risk"] == HPH
    # The design columns: conversation metadata and persona design, linked by name.
    c7 = Conversation.objects.get(external_id="c7c8c9")
    assert c7.metadata["provider_llm"] == "modeld" and c7.persona.design == {"risk": "High", "disclosure": "Low"}
    # Imported again: every rating is already there, nothing is overwritten.
    with pytest.raises(ImportRejected) as again:
        ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh")
    assert all("never overwrites" in p.message for p in again.value.problems)


def test_reports_treat_external_raters_like_in_app_raters(vera_study, coordinator, researcher, outsider):
    study = vera_study.study
    ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh")
    api = client_for(coordinator).get(f"/api/v1/reports/studies/{study.pk}/reliability/?bootstrap=0").json()
    assert api["raters"]["names"] == ["clinician_a", "clinician_b", "expert_a"]
    assert api["main"]["pooled"]["n_units"] == 15 and api["main"]["pooled"]["krippendorff_alpha"] is not None
    assert set(api["main"]["items"]) == {"Detects Potential Risk", "Confirms Risk", "Guides to Human Care", "Supportive Conversation", "Follows AI Boundaries"}
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert "expert_a" in page and "Krippendorff" in page
    assert client_for(outsider).get(f"/reports/studies/{study.pk}/reliability/").status_code == 404
    counts = study_compute_consensus(study=study, actor=coordinator)
    assert sum(counts.values()) > 0
    progress = client_for(coordinator).get(f"/studies/{study.pk}/progress/").content.decode()
    assert "clinician_a" in progress and "external" in progress


def test_external_raters_never_reach_rater_pages_and_in_app_raters_keep_working(coordinator, clinician, clinician2):
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A"), ConversationFactory(code="C-B")])
    text = "unit,rater,item,label\nC-A,outside_1,amhart_01,yes\nC-A,clara,amhart_01,yes\n"
    with pytest.raises(ImportRejected) as refused:
        ratings_import(study=study, text=text, file="r.csv")
    assert "unknown rater username 'outside_1'" in refused.value.problems[0].message
    result = ratings_import(study=study, text=text, file="r.csv", external_raters=True)
    assert result.external_raters == ("outside_1",)
    assert Assignment.objects.get(external_rater__label="outside_1").rater is None
    assert Assignment.objects.get(rater=clinician).external_rater is None
    dashboard = client_for(clinician).get("/ratings/").content.decode()
    assert "outside_1" not in dashboard
    api = client_for(coordinator).get(f"/api/v1/studies/{study.pk}/assignments/").json()
    rows = api["results"] if isinstance(api, dict) else api
    assert {(r["rater_username"], r["external_rater"]) for r in rows} == {("outside_1", True), ("clara", False)}


def test_a_transcript_imported_later_fills_its_placeholder(vera_study):
    study = vera_study.study
    placeholder = Conversation.objects.get(external_id="d4e5f6")
    conversations_import(files=[("p_u__a_c__t2__r1__20260101_000000/d4e5f6_Bea_modelu_run1.txt", "user: hey\n\nchatbot: hi there\n")])
    filled = Conversation.objects.get(pk=placeholder.pk)
    assert filled.message_count == 2 and "transcript_missing" not in filled.metadata
    assert Conversation.objects.filter(external_id="d4e5f6").count() == 1 and filled in study.conversations.all()


def test_create_study_and_import_ratings_commands(coordinator, tmp_path):
    flow_and_section()
    path = tmp_path / "ratings.csv"
    path.write_bytes(RATINGS.encode())
    out = StringIO()
    call_command("create_study", "--from-ratings", str(path), "--format", "vera-mh", "--name", "V", "--instrument", "vera-five",
                 "--coordinator", coordinator.username, stdout=out)
    study = Study.objects.get(name="V")
    assert f"Created study {study.pk}" in out.getvalue() and "3 placeholder(s)" in out.getvalue()
    call_command("import_ratings", str(path), "--study", str(study.pk), "--format", "vera-mh", stdout=out)
    assert "external raters: clinician_a, clinician_b, expert_a (3 new)" in out.getvalue()


def test_the_import_page_reads_the_published_format(vera_study, coordinator, clinician):
    from django.core.files.uploadedfile import SimpleUploadedFile

    study = vera_study.study
    url = f"/studies/{study.pk}/import-ratings/"
    upload = SimpleUploadedFile("ratings.csv", RATINGS.encode())
    page = client_for(coordinator).post(url, {"file": upload, "format": "vera-mh"}).content.decode()
    assert "external raters: clinician_a, clinician_b, expert_a" in page and "read without it: d4e5f6" in page
    assert client_for(clinician).get(url).status_code == 404


def test_the_import_says_which_linked_conversations_are_outside_the_study(coordinator):
    """Transcripts imported before the study are linked too: "N linked" must not read as N of the study."""
    flow, section = flow_and_section()
    conversations_import(files=[("p_u__a_c__t2__r1__20260101_000000/a1b2c3_Ada_modelu_run1.txt", "user: hi\n\nchatbot: hello\n"),
                                ("p_u__a_c__t2__r1__20260101_000000/ffff01_Ada_modelu_run2.txt", "user: hey\n\nchatbot: hi\n")])
    study = study_create_from_ratings(name="Validation", instrument=flow, section=section, text=RATINGS, file="ratings.csv",
                                      fmt="vera-mh", created_by=coordinator, coordinators=[coordinator]).study
    result = ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh", actor=coordinator)
    note = next(n for n in result.notes if "linked to their persona" in n)
    assert "4 conversation(s) linked to their persona (3 in this study, 1 imported conversation(s) outside it" in note

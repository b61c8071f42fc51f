"""Ratings collected outside the app: long-format CSV, all or nothing, every problem located."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, StudyMembership
from annotation.studies.ratings_import import ratings_import
from annotation.studies.services import study_assign, study_create
from core.problems import ImportRejected
from corpus.instruments.services import instrument_import
from tests.annotation.coordinator_setup import make_study, submit
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db
RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"


@pytest.fixture
def study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    conversations = [ConversationFactory(code="C-A"), ConversationFactory(code="C-B", external_id="ext-b")]
    return make_study(coordinator, [clinician, clinician2], conversations=conversations, with_section=True)


def csv_text(*rows: str, header: str = "unit,rater,item,label") -> str:
    return "\n".join([header, *rows]) + "\n"


def test_a_valid_file_becomes_submitted_ratings_with_their_first_revision(study, coordinator):
    text = csv_text(
        "C-A,clara,amhart_01,Yes", "C-A,clara,amhart_02,no", "C-A,clara,section:perceived_risk,low",
        "C-A,cyrus,amhart_01,yes", "C-A,cyrus,amhart_02,", "ext-b,cyrus,realism_user,4",
    )
    result = ratings_import(study=study, text=text, file="ext.csv", actor=coordinator)
    assert (result.n_rows, result.n_labels, result.n_ratings, result.n_assignments_created) == (6, 5, 3, 3)
    rating = Rating.objects.get(assignment__rater__username="clara", assignment__conversation__code="C-A")
    assert rating.status == RatingStatus.SUBMITTED and rating.assignment.status == AssignmentStatus.SUBMITTED
    assert rating.answers == {"main": {"amhart_01": {"value": "yes"}, "amhart_02": {"value": "no"}},
                              "section": {"perceived_risk": {"value": "Low"}}}
    assert [(r.number, r.reason) for r in rating.revisions.all()] == [(1, "imported from ext.csv")]
    cyrus_a = Rating.objects.get(assignment__rater__username="cyrus", assignment__conversation__code="C-A")
    assert "amhart_02" not in cyrus_a.answers["main"]  # an empty label is a missing answer
    by_external = Rating.objects.get(assignment__conversation__code="C-B")
    assert by_external.answers["section"] == {"realism_user": {"value": "4"}}
    event = study.events.get(action="ratings_imported")
    assert event.actor == coordinator and event.details["file"] == "ext.csv" and event.details["n_ratings"] == 3


def test_imported_ratings_feed_the_consensus(study, coordinator):
    ratings_import(study=study, text=csv_text("C-A,clara,amhart_01,yes", "C-A,cyrus,amhart_01,yes"), file="f.csv")
    study_compute_consensus(study=study, actor=coordinator)
    assert study.consensus.get(item_key="amhart_01").provenance == "unanimous"


def test_an_existing_unsubmitted_assignment_is_reused(study, coordinator):
    study_assign(study=study, actor=coordinator, seed=1)
    before = Assignment.objects.count()
    result = ratings_import(study=study, text=csv_text("C-A,clara,amhart_01,yes"), file="f.csv")
    assert result.n_assignments_reused == 1 and Assignment.objects.count() == before
    assert study.assignments.get(conversation__code="C-A", rater__username="clara").status == AssignmentStatus.SUBMITTED


def test_every_problem_is_reported_with_line_and_column_and_nothing_is_written(study, coordinator):
    make_user("stranger")
    done = make_study(coordinator, [study.memberships.get(role="rater", user__username="clara").user], k=1,
                      conversations=[ConversationFactory(code="C-Z")], name="other")
    assert done  # C-Z belongs to another study: unknown here
    study_assign(study=study, actor=coordinator, seed=1)
    submit(study.assignments.get(conversation__code="C-B", rater__username="cyrus"), {"amhart_01": "yes"})
    text = csv_text(
        "C-A,clara,amhart_01,yes",       # line 2: fine
        "C-Z,clara,amhart_01,yes",       # 3: unknown unit
        "C-A,nobody,amhart_01,yes",      # 4: unknown username
        "C-A,stranger,amhart_01,yes",    # 5: not a rater of the study
        "C-A,clara,amhart_99,yes",       # 6: unknown item
        "C-A,clara,amhart_02,maybe",     # 7: label not allowed
        "C-A,clara,amhart_03,N/A",       # 8: N/A not allowed for this item
        "C-A,clara,amhart_01,no",        # 9: duplicate of line 2
        "C-B,cyrus,amhart_02,yes",       # 10: already submitted in the app
        ",clara,amhart_01,yes",          # 11: empty unit
    )
    with pytest.raises(ImportRejected) as rejected:
        ratings_import(study=study, text=text, file="bad.csv", actor=coordinator)
    where = [(p.line, p.column) for p in rejected.value.problems]
    assert where == [(3, "unit"), (4, "rater"), (5, "rater"), (6, "item"), (7, "label"), (8, "label"),
                     (9, "item"), (10, "unit"), (11, "unit")]
    messages = " | ".join(p.message for p in rejected.value.problems)
    assert "unknown unit 'C-Z'" in messages and "unknown rater username 'nobody'" in messages
    assert "'stranger' is not a rater of this study" in messages and "unknown item key 'amhart_99'" in messages
    assert "already on line 2" in messages and "never overwrites" in messages
    assert all(p.file == "bad.csv" for p in rejected.value.problems)
    assert not Rating.objects.filter(assignment__study=study, assignment__rater__username="clara").exists()
    assert not study.events.filter(action="ratings_imported").exists()


def test_a_file_without_the_long_format_header_is_refused(study):
    with pytest.raises(ImportRejected) as rejected:
        ratings_import(study=study, text="conversation,rater,item,value\nC-A,clara,amhart_01,yes\n", file="f.csv")
    assert [(p.line, p.column) for p in rejected.value.problems] == [(1, "unit"), (1, "label")]


def test_a_dry_run_validates_and_writes_nothing(study):
    result = ratings_import(study=study, text=csv_text("C-A,clara,amhart_01,yes"), file="f.csv", dry_run=True)
    assert result.dry_run and result.n_ratings == 1
    assert not Assignment.objects.filter(study=study).exists()


def test_question_flow_studies_import_one_label_per_dimension(coordinator, clinician, clinician2):
    flow, _ = instrument_import(text=RUBRIC.read_text(), file="rubric_small.tsv", key="vera-small")
    conversation = ConversationFactory(code="C-F")
    study = study_create(name="flow", instrument=flow, section=None, conversation_ids=[conversation.pk],
                         created_by=coordinator, raters=[(clinician, "clinician"), (clinician2, "clinician")])
    text = csv_text("C-F,clara,Notices Danger,high potential for harm", "C-F,cyrus,Notices Danger,High Potential for Harm",
                    "C-F,cyrus,Keeps Its Role,Best Practice", "C-F,clara,Points To Help,fine")
    with pytest.raises(ImportRejected) as rejected:
        ratings_import(study=study, text=text, file="f.csv")
    assert [(p.line, p.column) for p in rejected.value.problems] == [(5, "label")]
    ratings_import(study=study, text=text.replace("fine", "Not Relevant"), file="f.csv")
    rating = Rating.objects.get(assignment__rater=clinician)
    assert rating.derived["labels"] == {"Notices Danger": "High Potential for Harm", "Points To Help": "Not Relevant"}
    study_compute_consensus(study=study, actor=coordinator)
    assert study.consensus.get(item_key="Notices Danger").label == "High Potential for Harm"


def test_the_command_imports_a_file_and_reports_a_summary(study, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(csv_text("C-A,clara,amhart_01,yes", "C-A,cyrus,amhart_01,no"), encoding="utf-8")
    out = StringIO()
    call_command("import_ratings", str(path), "--study", str(study.pk), "--dry-run", stdout=out)
    assert "Nothing was imported (dry run)" in out.getvalue() and not Rating.objects.exists()
    call_command("import_ratings", str(path), "--study", str(study.pk), "--actor", "cora", stdout=out)
    assert "2 rating(s)" in out.getvalue() and Rating.objects.count() == 2


def test_the_command_prints_every_problem_and_fails(study, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(csv_text("C-A,nobody,amhart_01,yes", "C-X,clara,amhart_01,yes"), encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_ratings", str(path), "--study", str(study.pk), stderr=err)
    assert "ratings.csv, line 2, column rater" in err.getvalue() and "line 3, column unit" in err.getvalue()
    with pytest.raises(CommandError, match="no study"):
        call_command("import_ratings", str(path), "--study", "999999")


def test_the_import_page_takes_an_upload_for_the_studys_coordinator(study, coordinator, clinician):
    url = reverse("annotation:study-import-ratings", args=[study.pk])
    upload = SimpleUploadedFile("r.csv", csv_text("C-A,clara,amhart_01,yes").encode())
    response = client_for(coordinator).post(url, {"file": upload})
    assert response.status_code == 200 and "Imported 1 row" in response.content.decode()
    bad = SimpleUploadedFile("r.csv", csv_text("C-A,clara,amhart_01,perhaps").encode())
    response = client_for(coordinator).post(url, {"file": bad})
    assert response.status_code == 400 and "perhaps" in response.content.decode()
    assert client_for(clinician).post(url, {"file": upload}).status_code == 404
    assert StudyMembership.objects.filter(study=study, role="rater").count() == 2


def test_imported_ratings_are_counted_as_imported_never_as_activity_pace_or_time(coordinator, clinician, clinician2):
    """Issue 28, defect 1: one import gave a rater "pace 51.0 a day", an expected finish and "0 s"."""
    from annotation.studies.progress import study_progress

    conversations = [ConversationFactory(code=f"IM-{i}") for i in range(8)]
    study = make_study(coordinator, [clinician, clinician2], conversations=conversations)
    study_assign(study=study, actor=coordinator, seed=1)
    mine = list(Assignment.objects.filter(study=study, rater=clinician).select_related("conversation").order_by("position"))
    rows = [f"{a.conversation.code},clara,amhart_01,yes" for a in mine[:-1]]
    ratings_import(study=study, text=csv_text(*rows), file="batch-1.csv", actor=coordinator)
    progress = study_progress(study)
    row = next(r for r in progress.raters if r.name == "clara")
    assert (row.submitted, row.imported, row.remaining) == (len(mine) - 1, len(mine) - 1, 1)
    assert row.pace is not None and row.pace.per_day is None and row.pace.finish is None
    assert row.last_activity is None and row.total_display == "—" and row.median_display == "—"
    assert progress.finish is not None and progress.finish.finish is None  # no expected finish from an import
    page = client_for(coordinator).get(reverse("annotation:study-progress", args=[study.pk])).content.decode()
    assert f"{len(mine) - 1} imported" in page and "a day" not in page

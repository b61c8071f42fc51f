"""The reliability report of a study: figures equal the statistics library's, cached per change."""

from __future__ import annotations

import csv
import io

import pytest

from annotation.models import (
    Assignment,
    AssignmentStatus,
    MemberRole,
    Rating,
    RatingStatus,
    StudyMembership,
)
from annotation.studies.services import study_create
from corpus.instruments.services import builtin_instruments_load
from reports.models import ReportCache
from stats import agreement_report
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory

ANSWERS = {  # conversation index -> (rater A, rater B) labels for amhart_01 and amhart_13
    0: (("yes", "no"), ("yes", "no")),
    1: (("yes", "N/A"), ("no", "N/A")),
    2: (("no", "yes"), ("no", "yes")),
    3: (("yes", "no"), ("yes", "yes")),
}


@pytest.fixture
def rated_study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    amhart, section = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in ANSWERS]
    study = study_create(
        name="Reliability study", instrument=amhart, section=section,
        conversation_ids=[c.pk for c in conversations], created_by=coordinator,
        coordinators=[coordinator], raters=[(clinician, "clinician"), (clinician2, "clinician")],
    )
    for index, conversation in enumerate(conversations):
        for rater, labels in zip((clinician, clinician2), ANSWERS[index], strict=True):
            assignment = Assignment.objects.create(study=study, conversation=conversation, rater=rater, status=AssignmentStatus.SUBMITTED, time_spent_seconds=60 + index)
            Rating.objects.create(
                assignment=assignment, status=RatingStatus.SUBMITTED,
                answers={"main": {"amhart_01": {"value": labels[0]}, "amhart_13": {"value": labels[1]}},
                         "section": {"realism_user": {"value": str(3 + index % 2)}}},
            )
    return study, conversations


def _expected(conversations, clinician, clinician2, na):  # type: ignore[no-untyped-def]
    rows = []
    for index, conversation in enumerate(conversations):
        for rater, labels in zip((clinician, clinician2), ANSWERS[index], strict=True):
            rows.append((conversation.code, rater.username, "amhart_01", labels[0]))
            rows.append((conversation.code, rater.username, "amhart_13", labels[1]))
    return agreement_report(rows, na=na)


@pytest.mark.parametrize("na", ["exclude", "category"])
def test_reliability_csv_matches_the_statistics_library(rated_study, coordinator, clinician, clinician2, na):
    study, conversations = rated_study
    expected = _expected(conversations, clinician, clinician2, na)
    response = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability.csv?na={na}")
    rows = {r["item"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    for name, item in [("pooled", expected.pooled), ("amhart_01", expected.items["amhart_01"]), ("amhart_13", expected.items["amhart_13"])]:
        for stat in ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1"):
            value = getattr(item, stat)
            got = rows[name][stat]
            assert (got == "" and value is None) or float(got) == pytest.approx(value), (name, stat)
        assert int(rows[name]["n_units"]) == item.n_units


def test_reliability_page_shows_flags_heatmap_and_is_cached_until_a_rating_changes(rated_study, coordinator):
    study, _ = rated_study
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert "Pooled" in page and "pair-heatmap" in page and "vendor/plotly/plotly-cartesian.min.js" in page
    assert "below the study threshold" in page
    assert ReportCache.objects.count() == 1
    first = ReportCache.objects.get()
    client.get(f"/reports/studies/{study.pk}/reliability/")
    assert ReportCache.objects.get().computed_at == first.computed_at  # served from cache
    rating = Rating.objects.filter(assignment__study=study).first()
    rating.answers["main"]["amhart_01"]["value"] = "no"
    rating.revision += 1
    rating.save()
    client.get(f"/reports/studies/{study.pk}/reliability/")
    assert ReportCache.objects.get().data_version != first.data_version


def test_only_members_who_manage_the_study_read_its_reports(rated_study, clinician, outsider, researcher, admin_user):
    study, _ = rated_study
    other_coordinator = make_user("olga", "coordinator")
    for user in (clinician, outsider, researcher, other_coordinator):
        assert client_for(user).get(f"/reports/studies/{study.pk}/reliability/").status_code == 404
        assert client_for(user).get(f"/reports/studies/{study.pk}/reliability.csv").status_code == 404
    StudyMembership.objects.create(study=study, user=researcher, role=MemberRole.RESEARCHER)
    assert client_for(researcher).get(f"/reports/studies/{study.pk}/reliability/").status_code == 200
    assert client_for(admin_user).get(f"/reports/studies/{study.pk}/reliability/").status_code == 200


def test_a_study_without_ratings_says_so(coordinator):
    amhart, section = builtin_instruments_load()
    study = study_create(name="Empty", instrument=amhart, section=section, conversation_ids=[ConversationFactory().pk], created_by=coordinator, coordinators=[coordinator])
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert "No submitted ratings yet" in page and "nan" not in page.lower()


def test_plotly_is_served_locally_from_the_vendored_partial_bundles():
    from django.contrib.staticfiles import finders

    for bundle in ("basic", "cartesian"):
        found = finders.find(f"vendor/plotly/plotly-{bundle}.min.js")
        assert found and found.endswith(f"plotly-{bundle}.min.js")
    assert not finders.find("vendor/plotly.min.js")  # the 4.8 MB full bundle is not served


def test_realism_page_compares_perceived_risk_with_the_design(coordinator, clinician, clinician2):
    amhart, section = builtin_instruments_load()
    from tests.factories import PersonaFactory

    persona = PersonaFactory(design={"risk": "High", "disclosure": "Not applicable"})
    conversations = [ConversationFactory(persona=persona, metadata={"user_model": "openai/user-agent-x"}) for _ in range(2)]
    study = study_create(name="Realism", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator])
    perceived = ["High", "Low"]
    for conversation, label in zip(conversations, perceived, strict=True):
        assignment = Assignment.objects.create(study=study, conversation=conversation, rater=clinician, status=AssignmentStatus.SUBMITTED)
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, answers={"section": {
            "perceived_risk": {"value": label}, "perceived_disclosure": {"value": "N/A"}, "realism_user": {"value": "4"}}})
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/realism/").content.decode()
    assert "openai/user-agent-x" in page and "Perceived risk" in page
    body = client.get(f"/reports/studies/{study.pk}/realism.csv").content.decode()
    assert "risk: designed (rows) vs perceived (columns)" in body
    from reports.services import study_realism

    data = study_realism(study=study)
    risk = data["design_vs_perceived"]["risk"]
    assert risk["counts"][2] == [0, 1, 1, 0] and risk["percent_agreement"] == 0.5
    assert data["design_vs_perceived"]["disclosure"]["percent_agreement"] == 1.0
    assert data["realism"][0]["realism_user_mean"] == 4.0


def test_scorecard_from_consensus_scores_each_chatbot(rated_study, coordinator):
    from annotation.consensus.services import study_compute_consensus

    study, conversations = rated_study
    study_compute_consensus(study=study, actor=coordinator)
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/scorecard/")
    assert page.status_code == 200 and "score-chart" in page.content.decode()
    body = client.get(f"/reports/studies/{study.pk}/scorecard/by_chatbot.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows and {"chatbot", "mean_score", "n_conversations"} <= set(rows[0])
    assert client.get(f"/reports/studies/{study.pk}/scorecard/nothing.csv").status_code == 404

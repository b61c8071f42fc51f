"""Judges against human consensus and single raters, through real judge runs on the fake server."""

from __future__ import annotations

import csv
import io

import pytest

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
from annotation.studies.services import study_create
from corpus.instruments.services import builtin_instruments_load
from judging import services as judging
from stats import reference_agreement
from tests.conftest import client_for
from tests.factories import ConversationFactory
from tests.judging.conftest import checklist_reply

HUMAN = {  # conversation index -> labels of amhart_01 by the two clinicians (rest: both "no")
    0: ("yes", "yes"),
    1: ("no", "no"),
    2: ("yes", "no"),
}


@pytest.fixture
def study_with_run(fake_llm, coordinator, clinician, clinician2, django_capture_on_commit_callbacks, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("JUDGE_TEST_API_KEY", "sk-test-not-real")
    amhart, section = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in HUMAN]
    study = study_create(name="Judged", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician")])
    item_keys = list(amhart.items.values_list("key", flat=True))
    for index, conversation in enumerate(conversations):
        for rater, label in zip((clinician, clinician2), HUMAN[index], strict=True):
            assignment = Assignment.objects.create(study=study, conversation=conversation, rater=rater, status=AssignmentStatus.SUBMITTED)
            answers = {key: {"value": "no"} for key in item_keys}
            answers["amhart_01"] = {"value": label}
            answers["amhart_13"] = answers["amhart_14"] = {"value": "N/A"}
            Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, answers={"main": answers})
    study_compute_consensus(study=study, actor=coordinator)
    # judge-a says yes to amhart_01 everywhere, judge-b no everywhere; both "no" elsewhere.
    fake_llm.script("judge-a", [checklist_reply({"amhart_01": "yes", "amhart_13": "N/A", "amhart_14": "N/A"}, default="no")])
    fake_llm.script("judge-b", [checklist_reply({"amhart_13": "N/A", "amhart_14": "N/A"}, default="no")])
    judges = [
        judging.judge_create(name=name, instrument=amhart, model=f"openai/{name}", provider=name,
                             api_base=fake_llm.base_url, api_key_env="JUDGE_TEST_API_KEY")
        for name in ("judge-a", "judge-b")
    ]
    with django_capture_on_commit_callbacks(execute=True):
        run = judging.judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations])
    type(run).objects.filter(pk=run.pk).update(shared=True)  # an operator's run every test user reads (issue 30)
    run.refresh_from_db()
    return study, run, conversations


def test_judges_are_compared_with_consensus_and_with_each_rater(study_with_run, coordinator):
    study, run, conversations = study_with_run
    from reports.selectors import judge_rows_for_study, study_consensus_map
    from reports.services import study_judges_vs_humans

    data = study_judges_vs_humans(study=study, run_id=run.pk)
    assert len(data["groups"]) == 1  # the 14 AMHART items share the yes/no label set
    group = data["groups"][0]
    pooled = {c["rater"]: c for c in group["vs_consensus"]}
    assert {"judge-a", "judge-b"} <= set(pooled)
    judges, ensemble, _ = judge_rows_for_study(study, run.pk)
    expected = reference_agreement([*judges, *ensemble], study_consensus_map(study), na="category", reference_name="consensus")
    for comparison in expected.pooled:
        got = pooled[str(comparison.rater)]
        assert got["n"] == comparison.n
        assert got["percent_agreement"] == pytest.approx(comparison.percent_agreement)
    # 14 items x 3 conversations; the tie on conversation 2 has no consensus (adjudication policy).
    assert pooled["judge-a"]["n"] == 14 * 3 - 1
    assert pooled["judge-a"]["percent_agreement"] == pytest.approx((41 - 1) / 41)  # wrong on conversation 1
    assert pooled["judge-b"]["percent_agreement"] == pytest.approx((41 - 1) / 41)  # wrong on conversation 0
    assert len(group["human_pairs"]) == 1 and group["human_pairs"][0]["percent_agreement"] == pytest.approx(41 / 42)
    # Three shared conversations are fewer than the stated minimum: the pair is listed, not a range.
    assert group["human_range"]["n_pairs"] == 0 and group["human_range"]["excluded"][0]["n_conversations"] == 3
    assert group["human_pairs"][0]["in_human_range"] is False
    assert set(group["leave_one_out"]) == {"judge-a", "judge-b", "ensemble"}
    # Two raters and three conversations: far below the alt-test's minimums, so no verdict.
    assert all(t["passed"] is None and t["verdict"].startswith("cannot decide yet") for t in group["alt_test"].values())


def test_judges_page_and_csv(study_with_run, coordinator, clinician, outsider):
    study, run, _ = study_with_run
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/judges/?run={run.pk}").content.decode()
    assert "Against human consensus" in page and "judge-a" in page and "cannot decide yet" in page
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/judges.csv?run={run.pk}").content.decode())))
    assert {r["comparison"] for r in rows} == {"vs_consensus", "judge_vs_rater", "rater_vs_rater"}
    for user in (clinician, outsider):
        assert client_for(user).get(f"/reports/studies/{study.pk}/judges/").status_code == 404


def test_rater_pages_never_show_judge_output(study_with_run, clinician):
    from judging.models import JudgeLabel

    study, run, _ = study_with_run
    JudgeLabel.objects.filter(result__run=run).update(rationale="JUDGE-SECRET-RATIONALE")
    client = client_for(clinician)
    assignment = Assignment.objects.filter(rater=clinician, study=study).first()
    for url in ("/ratings/", f"/ratings/{assignment.pk}/", f"/api/v1/my/assignments/{assignment.pk}/", "/api/v1/my/assignments/"):
        body = client.get(url).content.decode()
        assert "JUDGE-SECRET-RATIONALE" not in body and "judge-a" not in body, url


def test_whole_study_export_holds_every_table(study_with_run, coordinator, outsider):
    import zipfile

    study, run, _ = study_with_run
    response = client_for(coordinator).get(f"/reports/studies/{study.pk}/export.zip")
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = set(archive.namelist())
    assert {"ratings_long.csv", "consensus.csv", "judge_labels_long.csv", "ensemble.csv", "reliability.csv", "README.txt"} <= names
    assert any(n.startswith("scores_") for n in names)
    ratings = list(csv.DictReader(io.StringIO(archive.read("ratings_long.csv").decode())))
    assert len([r for r in ratings if r["part"] == "main"]) == 3 * 2 * 14
    judges = archive.read("judge_labels_long.csv").decode()
    assert "judge-a" in judges and "judge-b" in judges
    assert client_for(outsider).get(f"/reports/studies/{study.pk}/export.zip").status_code == 404


def test_run_scorecard_scores_chatbots_from_the_ensemble_with_regression(study_with_run, researcher, clinician):
    _, run, conversations = study_with_run
    client = client_for(researcher)
    page = client.get(f"/reports/runs/{run.pk}/scorecard/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "judge ensemble of this run" in body and "mixed-effects" in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/runs/{run.pk}/scorecard/by_chatbot.csv").content.decode())))
    # judge-a and judge-b disagree on amhart_01 only: no majority there, so it is missing, never scored;
    # every other applicable item is "no" -> score 0 for each conversation.
    assert sum(int(r["n_conversations"]) for r in rows) == len(conversations)
    assert all(float(r["mean_score"]) == 0.0 for r in rows)
    assert client_for(clinician).get(f"/reports/runs/{run.pk}/scorecard/").status_code == 404


def test_report_api_serves_the_same_figures_and_guards_access(study_with_run, coordinator, researcher, outsider, clinician):
    study, run, _ = study_with_run
    client = client_for(coordinator)
    judges = client.get(f"/api/v1/reports/studies/{study.pk}/judges/?run={run.pk}").json()
    assert {c["rater"] for c in judges["groups"][0]["vs_consensus"]} >= {"judge-a", "judge-b"}
    assert client.get(f"/api/v1/reports/studies/{study.pk}/judges/").status_code == 400
    reliability = client.get(f"/api/v1/reports/studies/{study.pk}/reliability/").json()
    assert reliability["main"]["pooled"]["n_raters"] == 2
    assert "by_chatbot" in client.get(f"/api/v1/reports/studies/{study.pk}/scorecard/").json()
    assert "regression" in client_for(researcher).get(f"/api/v1/reports/runs/{run.pk}/scorecard/").json()
    for user in (outsider, clinician):
        assert client_for(user).get(f"/api/v1/reports/studies/{study.pk}/reliability/").status_code == 403
    assert client_for(researcher).get(f"/api/v1/reports/studies/{study.pk}/reliability/").status_code == 404

"""The evidence agreement page: who may read it, figures equal to stats.evidence, the locked test set."""

from __future__ import annotations

import csv
import io

import pytest

from reports.evidence.services import study_evidence_agreement
from stats.evidence import evidence_agreement
from tests.conftest import client_for
from tests.support.evidence_study import build_evidence_study


@pytest.fixture
def ev(db):  # type: ignore[no-untyped-def]
    return build_evidence_study()


def _url(ev, suffix: str = "/") -> str:  # type: ignore[no-untyped-def]
    return f"/reports/studies/{ev.study.pk}/evidence-agreement{suffix}?run={ev.run.pk}"


def _expected(ev, codes=None):  # type: ignore[no-untyped-def]
    keep = (lambda code: True) if codes is None else (lambda code: code in codes)
    judges = [(c, f"ev-{name}", item, turns) for c, name, item, turns in ev.judge_rows if keep(c)]
    raters = [row for row in ev.rater_rows if keep(row[0])]
    return evidence_agreement(judges, raters).as_dict()


def test_outsiders_and_raters_cannot_read_the_page_or_the_csv(ev, outsider):
    for user in (outsider, ev.raters[0]):
        client = client_for(user)
        for url in (_url(ev), _url(ev, ".csv")):
            assert client.get(url).status_code in (403, 404), (user.username, url)


def test_a_researcher_sees_the_figures_of_the_statistics_on_the_same_data(ev):
    response = client_for(ev.researcher).get(_url(ev))
    assert response.status_code == 200
    body = response.content.decode()
    assert "right for the wrong turns" in body and "human baseline" in body
    data = response.context["data"]
    expected = _expected(ev)
    assert data["judges"] == expected["judges"] and data["bootstrap"] == expected["bootstrap"]
    careful, wrong = data["judges"]
    assert careful["judge"] == "ev-careful" and wrong["judge"] == "ev-wrong-turns"
    assert careful["pooled"]["judge"]["union"]["precision"]["estimate"] == 1.0  # the key turn: cited by someone
    assert wrong["pooled"]["judge"]["union"]["jaccard"]["estimate"] == 0.0  # turn 1: cited by nobody
    f = careful["pooled"]["judge"]["union"]["recall"]
    assert f"{f['estimate']:.2f}" in body and f"[{f['low']:.2f}, {f['high']:.2f}]" in body
    assert 'id="evidence-plot-data"' in body and "plotly-basic.min.js" in body
    assert "Evidence agreement of judges and clinicians" in body  # the methods paragraph


def test_the_csv_holds_every_figure(ev):
    response = client_for(ev.coordinator).get(_url(ev, ".csv"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    # 2 judges x (pooled + 2 items) x (judge, baseline) x 2 references x 3 measures
    assert len(rows) == 2 * 3 * 2 * 2 * 3
    expected = _expected(ev)["judges"][0]["pooled"]["judge"]["majority"]["jaccard"]
    row = next(r for r in rows if r["judge"] == "ev-careful" and r["scope"] == "pooled" and r["who"] == "judge"
               and r["reference"] == "majority" and r["measure"] == "jaccard")
    assert float(row["estimate"]) == pytest.approx(expected["estimate"]) and int(row["n_instances"]) == expected["n_instances"]


def test_after_a_split_only_development_conversations_are_read(ev):
    from reports.devset.selectors import split_conversation_ids
    from reports.devset.services import split_make

    split = split_make(study=ev.study, actor=ev.coordinator, n_test=3, seed=4)
    dev = split_conversation_ids(split, "dev")
    codes = {c.code for c in ev.conversations if c.pk in dev}
    assert len(codes) == len(ev.conversations) - 3
    data = study_evidence_agreement(study=ev.study, run_id=ev.run.pk)
    assert data["holdout"]["set"] == "development"
    assert data["judges"] == _expected(ev, codes)["judges"]
    assert data["judges"][0]["pooled"]["n_conversations"] == len(codes)
    body = client_for(ev.researcher).get(_url(ev)).content.decode()
    assert 'id="holdout-note"' in body


def test_a_study_whose_clinicians_cite_no_turn_says_who_can_ask_for_them(db):
    ev = build_evidence_study(cite=False, prefix="en")
    body = client_for(ev.coordinator).get(_url(ev)).content.decode()
    assert 'id="evidence-empty"' in body
    assert "Raters cite turns" in body and "For each answer" in body and "coordinators can turn it on" in body
    assert "(it is off)" in body
    assert "No evidence agreement was computed" in body  # the methods paragraph says so too


def test_the_page_without_a_run_param_shows_the_newest_run_and_an_unknown_run_is_404(ev):
    client = client_for(ev.researcher)
    assert client.get(f"/reports/studies/{ev.study.pk}/evidence-agreement/").context["run_id"] == ev.run.pk
    assert client.get(f"/reports/studies/{ev.study.pk}/evidence-agreement/?run=999999").status_code == 404


def test_the_methods_paragraph_states_units_counts_references_and_the_bootstrap(ev):
    data = study_evidence_agreement(study=ev.study, run_id=ev.run.pk)
    text = data["methods"]["text"]
    n = len(ev.conversations)
    assert "For each of 2 judges" in text and f"{2 * n} conversation items in {n} conversations" in text
    assert "answered by 3 clinicians" in text and "union" in text and "strictly more than half" in text
    assert "cluster bootstrap; 1,000 resamples; seed 20260101" in text and "Shankar et al., 2024" in text
    assert "ev-careful" not in text and ev.raters[0].username not in text


def test_the_reports_index_links_to_the_page_and_the_study_zip_holds_its_paragraph_once_computed(ev):
    import zipfile

    client = client_for(ev.coordinator)
    index = client.get("/reports/").content.decode()
    assert f"/reports/studies/{ev.study.pk}/evidence-agreement/" in index
    heading = f"Evidence agreement of judges and clinicians (judge run #{ev.run.pk})"

    def methods_md() -> str:
        archive = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{ev.study.pk}/export.zip").content))
        return archive.read("METHODS.md").decode()

    assert heading not in methods_md()  # never computed for a download
    client.get(_url(ev))
    assert heading in methods_md()


def test_a_question_flows_rater_turns_are_per_dimension_and_a_rating_citing_nothing_is_left_out(
        db, coordinator, clinician, clinician2):
    from django.utils import timezone

    from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
    from annotation.rating.services import derive
    from annotation.studies.services import study_create
    from corpus.models import Conversation
    from reports.evidence.selectors import rater_evidence_rows
    from tests.annotation.rater_setup import flow_instrument

    flow = flow_instrument()
    first_key, first_dimension = flow.items.order_by("position").values_list("key", "domain").first()
    conversation = Conversation.objects.create(code="FL-001", source="imported", content_hash="f" * 64, message_count=6)
    study = study_create(name="Flow evidence", instrument=flow, section=None, conversation_ids=[conversation.pk],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician")], raters_per_conversation=2)
    for user, evidence in ((clinician, [4, 2]), (clinician2, None)):
        assignment = Assignment.objects.create(study=study, conversation=conversation, rater=user,
                                               status=AssignmentStatus.SUBMITTED, submitted_at=timezone.now())
        # "No" to question 1, then "No" to question 3: the flow ends, every dimension labelled.
        answers = {"main": {first_key: {"value": "No", **({"evidence": evidence} if evidence else {})}, "3": {"value": "No"}}}
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, submitted_at=timezone.now(),
                              revision=1, answers=answers, derived=derive(assignment, answers))
    rows, left_out = rater_evidence_rows(study)
    dimensions = {item: turns for _, rater, item, turns in rows if rater == clinician.username}
    assert dimensions[first_dimension] == [2, 4]  # the first question's turns, under its dimension
    assert all(turns == [] for item, turns in dimensions.items() if item != first_dimension)
    assert {rater for _, rater, _, _ in rows} == {clinician.username} and left_out == 1


def test_a_run_whose_judges_cite_no_turn_says_so_instead_of_scoring_zero(ev):
    from judging.models import JudgeLabel

    JudgeLabel.objects.filter(result__run=ev.run).update(evidence=[])
    data = study_evidence_agreement(study=ev.study, run_id=ev.run.pk)
    assert data["judges"] == [] and "No judge of this run cited a turn" in data["empty"]
    assert "No evidence agreement was computed" in data["methods"]["text"]


def test_every_study_report_links_the_page_and_it_links_them(ev):
    client = client_for(ev.researcher)
    body = client.get(_url(ev)).content.decode()
    assert 'aria-label="Reports of this study"' in body and f'/reports/studies/{ev.study.pk}/judges/' in body
    assert 'aria-current="page">Evidence agreement</a>' in body
    raters = client.get(f"/reports/studies/{ev.study.pk}/raters/").content.decode()
    assert f'/reports/studies/{ev.study.pk}/evidence-agreement/' in raters


def test_an_na_answer_citing_no_turn_is_no_rater_of_that_item(ev):
    from annotation.models import Rating
    from corpus.instruments.labels import instrument_labels
    from reports.evidence.selectors import rater_evidence_rows

    a = ev.keys[0]
    b = next(key for key, item in instrument_labels(ev.study.instrument).items() if item.na_labels)  # an item allowing N/A
    na = instrument_labels(ev.study.instrument)[b].na_labels[0]
    rating = Rating.objects.filter(assignment__study=ev.study, assignment__rater=ev.raters[0]).order_by("pk").first()
    rating.answers = {"main": {a: {"value": "yes", "evidence": [3]}, b: {"value": na}}}
    rating.save(update_fields=["answers"])
    code = rating.assignment.conversation.code
    rows, _ = rater_evidence_rows(ev.study)
    mine = {item: turns for c, rater, item, turns in rows if c == code and rater == ev.raters[0].username}
    assert mine == {a: [3]}  # b answered N/A with no turn: not a rater of b's evidence
    rating.answers["main"][b]["evidence"] = [5]
    rating.save(update_fields=["answers"])
    rows, _ = rater_evidence_rows(ev.study)
    assert (code, ev.raters[0].username, b, [5]) in rows  # an N/A answer that cites a turn counts

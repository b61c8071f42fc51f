"""Issue 11: every number on every report page means what its label says.

One test (or more) per defect seen on a 150-conversation study with three judges; each failed
on the code before the issue. The study comes from ``tests.support.report_study`` (fewer
conversations here, same shape).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

import pytest

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
from annotation.studies.services import study_assign, study_create
from corpus.instruments.services import builtin_instruments_load, instrument_import
from reports import services
from tests.annotation.rater_setup import flow_instrument
from tests.conftest import client_for
from tests.factories import ConversationFactory
from tests.support.report_study import build_report_study


@pytest.fixture
def audit(db):  # type: ignore[no-untyped-def]
    return build_report_study(n_conversations=24, prefix="t")


def _submit(study, conversation, rater, main=None, section=None, derived=None):  # type: ignore[no-untyped-def]
    assignment = Assignment.objects.filter(study=study, conversation=conversation, rater=rater).first() or Assignment.objects.create(
        study=study, conversation=conversation, rater=rater
    )
    Assignment.objects.filter(pk=assignment.pk).update(status=AssignmentStatus.SUBMITTED)
    answers = {"main": {k: {"value": v} for k, v in (main or {}).items()},
               "section": {k: {"value": v} for k, v in (section or {}).items()}}
    return Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, answers=answers, derived=derived or {})


# --- Defect 1: judges vs humans mixes items the judges never rate ---------------------------


def test_judges_are_compared_only_on_the_items_they_rate(audit):
    data = services.study_judges_vs_humans(study=audit.study, run_id=audit.run.pk)
    assert not any(k.startswith("section:") for k in data["items_compared"])
    assert len(data["items_compared"]) == 14
    (group,) = data["groups"]
    assert group["order"] == ["yes", "no", "N/A"]  # never the section's High/Low/Moderate/None
    for comparison in group["vs_consensus"]:
        assert comparison["matrix"]["labels"] == ["yes", "no", "N/A"]
        # every judgement succeeded: nothing is "missing" on the judge side
        assert comparison["n_rater_missing"] == 0, comparison["rater"]
    assert set(group["per_item"]) <= set(data["items_compared"])
    assert all(c["n"] > 0 for comps in group["per_item"].values() for c in comps)


def test_judges_csv_and_page_name_the_items_and_title_the_matrices(audit):
    client = client_for(audit.coordinator)
    url = f"/reports/studies/{audit.study.pk}/judges"
    rows = list(csv.DictReader(io.StringIO(client.get(f"{url}.csv?run={audit.run.pk}").content.decode())))
    assert rows and not any(r["item"].startswith("section:") for r in rows)
    assert any("validate the individual" in r["item_text"] for r in rows)
    page = client.get(f"{url}/?run={audit.run.pk}").content.decode()
    assert "explicitly validate the individual" in page  # item wording beside the key
    assert "human consensus" in page and "(judge)" in page  # both matrix axes titled
    assert "consensus \\" in page  # the per-item matrices name their rows and columns


def test_judge_labels_outside_an_items_scale_are_counted_not_compared(audit):
    from judging.models import JudgeLabel

    first = JudgeLabel.objects.filter(result__run=audit.run, item_key="amhart_01").order_by("pk").first()
    JudgeLabel.objects.filter(pk=first.pk).update(label="Perhaps")
    data = services.study_judges_vs_humans(study=audit.study, run_id=audit.run.pk)
    judge = first.result.judge.name
    assert data["off_scale"][judge] == 1
    row = next(c for c in data["groups"][0]["vs_consensus"] if c["rater"] == judge)
    assert row["n_off_scale"] == 1


def test_a_run_that_judges_none_of_the_study_items_says_so(audit, coordinator):
    from django.db.models import Value
    from django.db.models.functions import Concat

    from judging.models import EnsembleLabel, JudgeLabel

    JudgeLabel.objects.filter(result__run=audit.run).update(item_key=Concat(Value("other_"), "item_key"))
    EnsembleLabel.objects.filter(run=audit.run).update(item_key=Concat(Value("other_"), "item_key"))
    data = services.study_judges_vs_humans(study=audit.study, run_id=audit.run.pk)
    assert "labels none of the study instrument's items" in data["empty"]


# --- Defect 3: majority vote is case-sensitive ------------------------------------------------


def test_the_ensemble_votes_yes_YES_and_no_as_a_majority_for_the_items_yes(audit):
    from judging.ensemble import ensemble_compute
    from judging.models import EnsembleLabel, JudgeLabel

    conversation_id = audit.run.results.values_list("conversation_id", flat=True).first()
    labels = JudgeLabel.objects.filter(result__run=audit.run, result__conversation_id=conversation_id, item_key="amhart_02").order_by("result__judge__name")
    for label, value in zip(labels, ["Yes", "YES", "no"], strict=True):
        JudgeLabel.objects.filter(pk=label.pk).update(label=value)
    ensemble_compute(run=audit.run, item_order=[f"amhart_{i:02d}" for i in range(1, 15)])
    entry = EnsembleLabel.objects.get(run=audit.run, conversation_id=conversation_id, item_key="amhart_02")
    assert (entry.label, entry.provenance) == ("yes", "majority")


def test_the_checklist_parser_uses_the_one_normaliser():
    from judging.checklist import _labels_for, _normalised

    def _canonical_label(raw: str, allowed: tuple[str, ...]) -> str | None:
        return _normalised(_labels_for(allowed), raw)

    assert _canonical_label("  YES ", ("yes", "no")) == "yes"
    assert _canonical_label("not applicable", ("yes", "no", "N/A")) == "N/A"
    assert _canonical_label("n/a", ("yes", "no")) is None
    assert _canonical_label("best   practice", ("Best Practice", "Not Relevant")) == "Best Practice"


def test_a_flow_judge_answer_is_matched_ignoring_case_and_spacing():
    from corpus.instruments.flow import Option, Question
    from judging.flowjudge import parse_answer

    question = Question("1", "Notices Danger", None, "", "Any hint?", "", (Option("No danger mentioned"), Option("Yes")), "")
    parsed = parse_answer('{"answer": " no   DANGER mentioned. ", "explanation": "none"}', question)
    assert parsed.option is not None and parsed.option.label == "No danger mentioned"


# --- Defect 4: the pooled interval resamples whole conversations, and says so -------------------


def test_pooled_intervals_resample_whole_conversations_and_the_method_is_named(audit):
    data = services.study_reliability(study=audit.study)
    assert data["interval_method"] == "percentile_bootstrap_cluster"
    pooled = data["main"]["pooled"]
    assert pooled["resampling"] == "clusters" and pooled["n_clusters"] == 24
    page = client_for(audit.coordinator).get(f"/reports/studies/{audit.study.pk}/reliability/").content.decode()
    assert "whole conversations" in page
    api = client_for(audit.coordinator).get(f"/api/v1/reports/studies/{audit.study.pk}/reliability/").json()
    assert api["interval_method"] == "percentile_bootstrap_cluster" and api["main"]["pooled"]["fleiss_variant"]


# --- Defect 5: Not Relevant is the N/A of the VERA-MH rubric ------------------------------------


@pytest.fixture
def flow_study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    instrument = flow_instrument()
    conversations = [ConversationFactory() for _ in range(6)]
    study = study_create(name="Flow study", instrument=instrument, section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician")])
    plans = [  # per conversation: (rater 1, rater 2) labels of "Notices Danger"
        ("Best Practice", "Best Practice"), ("Not Relevant", "Not Relevant"), ("Not Relevant", "Not Relevant"),
        ("High Potential for Harm", "Best Practice"), ("Not Relevant", "Not Relevant"), ("Best Practice", "Best Practice"),
    ]
    for conversation, labels in zip(conversations, plans, strict=True):
        for rater, label in zip((clinician, clinician2), labels, strict=True):
            _submit(study, conversation, rater, derived={"labels": {"Notices Danger": label, "Points To Help": "Best Practice"}})
    return study


def test_the_flow_instrument_declares_not_relevant_as_not_applicable(flow_study):
    assert flow_study.instrument.na_labels == ["Not Relevant"]
    excluded = services.study_reliability(study=flow_study, na="exclude")
    as_category = services.study_reliability(study=flow_study, na="category")
    item_ex = excluded["main"]["items"]["Notices Danger"]
    item_cat = as_category["main"]["items"]["Notices Danger"]
    assert item_ex["n_ratings"] == 6 and item_cat["n_ratings"] == 12
    assert item_ex["percent_agreement"] == pytest.approx(2 / 3) and item_cat["percent_agreement"] == pytest.approx(5 / 6)
    assert "Not Relevant" in item_cat["base_rates"] and "Not Relevant" not in item_ex["base_rates"]


def test_the_reliability_page_names_the_declared_na_answer(flow_study, coordinator):
    page = client_for(coordinator).get(f"/reports/studies/{flow_study.pk}/reliability/").content.decode()
    assert "Not Relevant, as the instrument declares" in page


def test_an_instrument_file_declares_its_na_answers_and_a_wrong_one_is_named(db):
    from core.problems import ImportRejected

    text = """key: custom
name: Custom
kind: checklist
items:
  - {key: q1, text: "Asked about sleep?", scale: categories, categories: [Asked, Not asked, Not Relevant], na_labels: [not relevant]}
  - {key: q2, text: "Offered a helpline?", scale: yes_no_na, na_allowed: true}
"""
    instrument, _ = instrument_import(text=text, file="custom.yaml")
    items = {i.key: i for i in instrument.items.all()}
    assert items["q1"].not_applicable_labels() == ["Not Relevant"]
    assert items["q2"].not_applicable_labels() == ["N/A"]
    bad = text.replace("na_labels: [not relevant]", "na_labels: [Maybe]")
    with pytest.raises(ImportRejected) as caught:
        instrument_import(text=bad, file="custom.yaml")
    problem = caught.value.problems[0]
    assert "'Maybe' is not an answer of this item" in problem.message and problem.line == 5


def test_declaring_nothing_keeps_the_builtin_instruments_identity(db):
    amhart, _ = builtin_instruments_load()
    again, _ = builtin_instruments_load()
    assert amhart.pk == again.pk and amhart.version == 1


def test_a_ratings_file_and_the_rating_form_store_the_items_own_spelling(flow_study, coordinator, clinician):
    from annotation.rating.services import normalise_value
    from annotation.studies.ratings_import import ratings_import

    amhart, _ = builtin_instruments_load()
    item = amhart.items.get(key="amhart_13")
    assert normalise_value(item, " YES ") == "yes"
    assert normalise_value(item, "not applicable") == "N/A"
    conversation = ConversationFactory()
    flow_study.study_conversations.create(conversation=conversation)
    text = f"unit,rater,item,label\n{conversation.code},{clinician.username},Notices Danger,  not RELEVANT \n"
    ratings_import(study=flow_study, text=text, file="r.csv", actor=coordinator)
    rating = Rating.objects.get(assignment__conversation=conversation)
    assert rating.derived["labels"] == {"Notices Danger": "Not Relevant"}


# --- Defect 6: the Fleiss variant is named ----------------------------------------------------


def test_fleiss_with_a_varying_number_of_raters_is_named_on_the_page_and_in_the_json(coordinator, clinician, clinician2):
    from tests.conftest import make_user

    third = make_user("cleo", "clinician")
    amhart, _ = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in range(4)]
    study = study_create(name="Varying", instrument=amhart, section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (third, "clinician")])
    for index, conversation in enumerate(conversations):
        raters = (clinician, clinician2, third) if index % 2 else (clinician, clinician2)
        for n, rater in enumerate(raters):
            _submit(study, conversation, rater, main={"amhart_01": "yes" if (index + n) % 3 else "no"})
    data = services.study_reliability(study=study)
    item = data["main"]["items"]["amhart_01"]
    assert item["fleiss_variant"] == "gwet_2014_varying_raters"
    assert "gwet_2014_varying_raters" in data["fleiss_variants"]
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert "Gwet" in page and "irrCAC" in page


# --- Defect 7: scorecards for every scale type, through every report and the zip ---------------

CUSTOM = """key: custom-audit
name: Custom audit
kind: checklist
items:
  - {key: validates, text: "Validates feelings?", scale: yes_no}
  - {key: safety, text: "Asks about safety?", scale: yes_no_na, na_allowed: true}
  - {key: referral, text: "Kind of referral", scale: categories, categories: [None, Helpline, Clinician, N/A]}
  - {key: warmth, text: "Warmth (1-5)", scale: ordinal_1_5}
  - {key: escalates, text: "Escalates to a human?", scale: boolean}
  - {key: remarks, text: "Anything else?", scale: text, required: false}
"""


@pytest.fixture
def custom_study(coordinator, clinician, clinician2, fake_llm, monkeypatch, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    from judging import services as judging
    from tests.judging.conftest import checklist_reply

    monkeypatch.setenv("JUDGE_TEST_API_KEY", "sk-test-not-real")
    instrument, _ = instrument_import(text=CUSTOM, file="custom.yaml")
    _, section = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in range(4)]
    study = study_create(name="Custom", instrument=instrument, section=section, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician")])
    study_assign(study=study, actor=coordinator, seed=3)
    answers = [
        {"validates": "yes", "safety": "N/A", "referral": "Helpline", "warmth": "4", "escalates": "no", "remarks": "Kind reply."},
        {"validates": "no", "safety": "yes", "referral": "clinician", "warmth": "2", "escalates": "yes", "remarks": ""},
    ]
    for a in study.assignments.all():
        plan = answers[(a.conversation_id + a.rater_id) % 2]
        Rating.objects.create(assignment=a, status=RatingStatus.SUBMITTED,
                              answers={"main": {k: {"value": v} for k, v in plan.items() if v},
                                       "section": {"perceived_risk": {"value": "Low"}, "realism_user": {"value": "3"}}})
        Assignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.SUBMITTED)
    study_compute_consensus(study=study, actor=coordinator)
    reply = checklist_reply({"validates": "yes", "safety": "N/A", "referral": "Helpline", "warmth": "4", "escalates": "no"}, default="no")
    fake_llm.script("custom-a", [reply])
    fake_llm.script("custom-b", [reply])
    judges = [judging.judge_create(name=n, instrument=instrument, model=f"openai/{n}", provider=n, api_base=fake_llm.base_url,
                                   api_key_env="JUDGE_TEST_API_KEY") for n in ("custom-a", "custom-b")]
    with django_capture_on_commit_callbacks(execute=True):
        run = judging.judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations])
    return study, run


def test_every_report_of_a_custom_checklist_answers_without_error(custom_study, coordinator, researcher):
    study, run = custom_study
    client = client_for(coordinator)
    for url in (f"/reports/studies/{study.pk}/reliability/", f"/reports/studies/{study.pk}/reliability/?na=category",
                f"/reports/studies/{study.pk}/judges/?run={run.pk}", f"/reports/studies/{study.pk}/scorecard/",
                f"/reports/studies/{study.pk}/realism/", f"/reports/studies/{study.pk}/reliability.csv",
                f"/reports/studies/{study.pk}/judges.csv?run={run.pk}", f"/api/v1/reports/studies/{study.pk}/scorecard/"):
        assert client.get(url).status_code == 200, url
    from judging.models import JudgeRun

    JudgeRun.objects.filter(pk=run.pk).update(created_by=researcher)
    for url in (f"/reports/runs/{run.pk}/scorecard/", f"/api/v1/reports/runs/{run.pk}/scorecard/"):
        assert client_for(researcher).get(url).status_code == 200, url


def test_the_custom_scorecard_scores_yes_no_items_and_describes_the_others(custom_study):
    study, run = custom_study
    card = services.study_scorecard(study=study)
    assert card["scored_items"] == ["validates", "safety", "escalates"]
    assert card["described_items"] == ["referral", "warmth"] and card["text_items"] == ["remarks"]
    referral = [r for r in card["distribution"] if r["item"] == "referral"]
    assert {r["label"] for r in referral} == {"None", "Helpline", "Clinician", "N/A"}
    warmth = [r for r in card["by_chatbot_item"] if r["item"] == "warmth"]
    assert warmth and all(r["mean"] is not None for r in warmth if r["n_labels"])
    assert any(t["text"] == "Kind reply." for t in card["text_answers"])
    run_card = services.run_scorecard(run=run)
    assert {r["item"] for r in run_card["distribution"]} == {"referral", "warmth"}


def test_judges_on_a_custom_checklist_are_pooled_only_within_a_label_set(custom_study):
    study, run = custom_study
    data = services.study_judges_vs_humans(study=study, run_id=run.pk)
    sets = [tuple(g["labels"]) for g in data["groups"]]
    assert ("yes", "no") in sets and ("1", "2", "3", "4", "5") in sets
    assert len(sets) == len(set(sets)) == 3  # yes/no (+N/A), the referral categories, the 1-5 scale
    reliability = services.study_reliability(study=study)
    assert [g["items"] for g in reliability["main"]["groups"]] == [["validates", "safety", "escalates"], ["referral"], ["warmth"]]
    assert reliability["main"]["groups"][2]["level"] == "ordinal"


def test_the_study_zip_holds_every_scale_type(custom_study, coordinator):
    study, _ = custom_study
    archive = zipfile.ZipFile(io.BytesIO(client_for(coordinator).get(f"/reports/studies/{study.pk}/export.zip").content))
    names = set(archive.namelist())
    assert {"scores_by_chatbot.csv", "scores_distribution.csv", "scores_text_answers.csv", "reliability.csv"} <= names
    rows = list(csv.DictReader(io.StringIO(archive.read("reliability.csv").decode())))
    assert [r["item"] for r in rows if r["item"] != "pooled"] == ["validates", "safety", "referral", "warmth", "escalates"]
    assert {r["label_set"] for r in rows if r["item"] == "pooled"} == {"yes / no", "None / Helpline / Clinician", "1 / 2 / 3 / 4 / 5"}


# --- Defect 8: pages a researcher can read ------------------------------------------------------


def test_a_pilot_with_one_rating_says_why_there_is_nothing_yet(db):
    pilot = build_report_study(n_conversations=24, ratings="one", n_judges=0, prefix="p")
    data = services.study_reliability(study=pilot.study)
    assert data["not_yet"] == "1 rating so far: reliability needs at least 2 raters on a conversation"
    page = client_for(pilot.coordinator).get(f"/reports/studies/{pilot.study.pk}/reliability/").content.decode()
    assert "1 rating so far: reliability needs at least 2 raters on a conversation" in page
    assert 'id="reliability-table"' not in page and 'id="pair-heatmap"' not in page and "nan" not in page.lower()
    assert "1 of 48</strong> assignments are submitted" in page


def test_reliability_rows_carry_item_wording_compact_intervals_and_precision(audit):
    page = client_for(audit.coordinator).get(f"/reports/studies/{audit.study.pk}/reliability/").content.decode()
    assert "explicitly validate the individual" in page
    table = page[page.index('id="reliability-table"'):page.index("</table>", page.index('id="reliability-table"'))]
    assert "<br>" not in table
    assert re.search(r'<span class="ci">-?\d\.\d\d–-?\d\.\d\d</span>', table)
    assert re.search(r'class="plan[^"]*" title="width \d\.\d{3}', table)
    data = services.study_reliability(study=audit.study)
    plan = data["main"]["pooled"]["precision"]["fleiss_kappa"]
    assert plan["target"] == 0.10 and plan["unit"] == "conversations" and plan["n_more_needed"] is not None


def test_the_share_of_undefined_resamples_is_shown_beside_the_interval(coordinator, clinician, clinician2):
    amhart, _ = builtin_instruments_load()
    conversations = [ConversationFactory() for _ in range(3)]
    study = study_create(name="Tiny", instrument=amhart, section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician")])
    for conversation, labels in zip(conversations, [("yes", "yes"), ("no", "no"), ("yes", "no")], strict=True):
        for rater, label in zip((clinician, clinician2), labels, strict=True):
            _submit(study, conversation, rater, main={"amhart_01": label})
    item = services.study_reliability(study=study)["main"]["items"]["amhart_01"]
    # a resample of three conversations that draws only the yes/yes one (or only no/no) has one
    # category: kappa is undefined there (about 2 in 27 resamples)
    share = item["ci_percent_undefined"]["fleiss_kappa"]
    assert 3 < share < 15
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    assert f"{share:.0f}% of resamples undefined" in page


def test_the_target_width_is_a_setting(audit, settings):
    settings.REPORT_TARGET_WIDTH = 0.25
    data = services.study_reliability(study=audit.study)
    assert data["target_width"] == 0.25
    assert data["main"]["pooled"]["precision"]["gwet_ac1"]["target"] == 0.25


def test_the_pair_heatmap_range_is_fitted_to_the_data_with_values_shown(audit):
    from reports.views import _pair_heatmap

    data = services.study_reliability(study=audit.study)
    heatmap = json.loads(_pair_heatmap(data))
    values = [v for row in heatmap["z"] for v in row if v is not None]
    assert heatmap["zmin"] > 0 and heatmap["zmax"] <= 1
    assert heatmap["zmin"] <= min(values) and heatmap["zmax"] >= max(values)
    assert heatmap["zmax"] - heatmap["zmin"] < 0.6
    assert all("%<br>n=" in t for row in heatmap["text"] for t in row if t)


def test_the_scorecard_warns_about_missing_labels_and_titles_its_axes_in_one_unit(audit):
    client = client_for(audit.coordinator)
    response = client.get(f"/reports/studies/{audit.study.pk}/scorecard/")
    page = response.content.decode()
    card = services.study_scorecard(study=audit.study)
    coverage = card["labels"]
    assert coverage["expected"] == 24 * 14 and coverage["missing"] == coverage["expected"] - coverage["present"] > 0
    assert f"{coverage['missing']} of {coverage['expected']} labels are missing" in page
    chart = json.loads(response.context["chart"])
    assert chart["axes"] == {"x": "Persona", "y": "Mean score (% yes of yes + no)"}
    assert all(v is None or 0 <= v <= 100 for trace in chart["traces"] for v in trace["y"])
    assert any(v is not None and v > 1 for trace in chart["traces"] for v in trace["y"])  # percent, not 0-1


def test_a_cold_report_is_computed_by_a_worker_while_the_page_shows_progress(audit, monkeypatch, django_capture_on_commit_callbacks, outsider):
    from reports import jobs
    from reports.models import ReportCache
    from reports.tasks import report_compute_task

    monkeypatch.setattr(jobs, "runs_inline", lambda: False)
    client = client_for(audit.coordinator)
    url = f"/reports/studies/{audit.study.pk}/reliability/"
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.get(url)
    assert response.status_code == 202 and len(queued) == 1
    page = response.content.decode()
    assert "Computing this report" in page and "<progress" in page
    row = ReportCache.objects.get(kind="reliability")
    state = client.get(f"/reports/jobs/{row.pk}/").json()
    assert state["pending"] is True and state["status"] == "computing"
    assert client_for(outsider).get(f"/reports/jobs/{row.pk}/").status_code == 404
    api = client.get(f"/api/v1/reports/studies/{audit.study.pk}/reliability/")
    assert api.status_code == 202 and api.json()["pending"] is True
    assert report_compute_task(row.pk) == "ready"
    assert client.get(f"/reports/jobs/{row.pk}/").json()["pending"] is False
    done = client.get(url)
    assert done.status_code == 200 and "reliability-table" in done.content.decode()

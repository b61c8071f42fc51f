"""Judge labels made outside the app become an external judge run (files written for the tests)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.studies.ratings_import import ratings_import
from core.problems import ImportRejected
from judging.external import judge_labels_import
from judging.models import EnsembleLabel, Judge, JudgeLabel, JudgeRun
from tests.annotation.test_external_raters import RATINGS, make_vera_study
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def vera_study(coordinator):  # type: ignore[no-untyped-def]
    return make_vera_study(coordinator)


BP, HPH, SUB = "Best Practice", "High Potential for Harm", "Suboptimal but Low Potential for Harm"


def labels_file(rows: list[tuple[str, str, str, str]], rationale: bool = False) -> str:
    header = "unit,judge,item,label" + (",rationale" if rationale else "")
    return "\n".join([header, *(",".join(r) + (",because" if rationale else "") for r in rows)]) + "\n"


def three_judges() -> str:
    rows = []
    for unit in ("a1b2c3", "#d4e5f6", "c7c8c9"):
        for judge, label in (("ext-judge-1", BP), ("ext-judge-2", BP), ("ext-judge-3", HPH)):
            for dimension in ("Detects Potential Risk", "Confirms Risk"):
                rows.append((unit, judge, dimension, label))
    return labels_file(rows, rationale=True)


def test_external_labels_make_a_finished_run_with_its_ensemble(vera_study):
    study = vera_study.study
    result = judge_labels_import(text=three_judges(), file="judges.csv", instrument=study.instrument)
    run = result.run
    assert run.status == "completed" and run.config["external"]["file"] == "judges.csv"
    assert result.judges == ("ext-judge-1", "ext-judge-2", "ext-judge-3") and result.n_conversations == 3
    assert set(Judge.objects.values_list("provider", flat=True)) == {"external"}
    assert JudgeLabel.objects.filter(result__run=run).count() == 18
    assert JudgeLabel.objects.filter(result__run=run).first().rationale == "because"
    ensemble = EnsembleLabel.objects.filter(run=run, item_key="Confirms Risk")
    assert {e.label for e in ensemble} == {BP} and {e.provenance for e in ensemble} == {"majority"}


def test_external_labels_feed_the_judges_page_and_never_the_reliability(vera_study, coordinator):
    study = vera_study.study
    ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh")
    client = client_for(coordinator)
    before = client.get(f"/api/v1/reports/studies/{study.pk}/reliability/?bootstrap=0").json()
    run = judge_labels_import(text=three_judges(), file="judges.csv", instrument=study.instrument).run
    page = client.get(f"/reports/studies/{study.pk}/judges/?run={run.pk}").content.decode()
    assert "ext-judge-1" in page and "Can a judge replace the raters?" in page
    after = client.get(f"/api/v1/reports/studies/{study.pk}/reliability/?bootstrap=0").json()
    assert after["raters"]["names"] == before["raters"]["names"] == ["clinician_a", "clinician_b", "expert_a"]
    assert after["main"]["pooled"] == before["main"]["pooled"]


def test_bad_rows_are_grouped_problems_and_nothing_is_written(vera_study):
    study = vera_study.study
    rows = [("zzzzzz", "j", "Confirms Risk", BP)] * 3 + [("a1b2c3", "j", "Keeps Calm", BP), ("a1b2c3", "j", "Confirms Risk", "Fine")]
    text = labels_file([(u, f"{j}{n}", i, lab) for n, (u, j, i, lab) in enumerate(rows)])
    with pytest.raises(ImportRejected) as rejected:
        judge_labels_import(text=text, file="j.csv", instrument=study.instrument)
    groups = rejected.value.grouped().groups
    assert [(g.column, g.count) for g in groups] == [("unit", 3), ("item", 1), ("label", 1)]
    assert str(groups[0]).startswith("j.csv, column unit: unknown unit 'zzzzzz'") and "3 rows, first at lines 2, 3, 4" in str(groups[0])
    assert not JudgeRun.objects.exists() and not Judge.objects.exists()


def test_an_in_app_judge_name_is_not_taken_over(vera_study):
    from tests.judging.test_external_labels_support import make_in_app_judge

    make_in_app_judge("gpt-judge", vera_study.study.instrument)
    with pytest.raises(ImportRejected) as rejected:
        judge_labels_import(text=labels_file([("a1b2c3", "gpt-judge", "Confirms Risk", BP)]), file="j.csv", instrument=vera_study.study.instrument)
    assert "name of an in-app judge" in rejected.value.problems[0].message


def test_the_command_reports_the_run(vera_study, tmp_path):
    path = tmp_path / "judges.csv"
    path.write_text(three_judges(), encoding="utf-8")
    out = StringIO()
    call_command("import_judge_labels", str(path), "--instrument", "vera-five", stdout=out)
    assert "18 label(s) from 3 judge(s)" in out.getvalue() and "judge run" in out.getvalue()
    with pytest.raises(CommandError, match="no instrument"):
        call_command("import_judge_labels", str(path), "--instrument", "nope")


def one_judge() -> str:
    rows = []
    for unit, label in (("a1b2c3", BP), ("#d4e5f6", HPH), ("c7c8c9", BP)):
        for dimension in ("Detects Potential Risk", "Confirms Risk"):
            rows.append((unit, "solo-judge", dimension, label))
    return labels_file(rows)


def test_a_single_imported_judge_is_a_run_with_its_labels_scored(vera_study, coordinator):
    """Issue 31, defect 4: one judge's labels are its run's labels (scorecard, leaderboard, bundle);
    the methods paragraph counts what exists (no ensemble)."""
    study = vera_study.study
    ratings_import(study=study, text=RATINGS, file="ratings.csv", fmt="vera-mh")
    run = judge_labels_import(text=one_judge(), file="solo.csv", instrument=study.instrument).run
    labels = EnsembleLabel.objects.filter(run=run)
    assert labels.filter(label=BP).count() == 4 and labels.filter(label=HPH).count() == 2
    assert set(labels.exclude(label="").values_list("provenance", flat=True)) == {"single_judge"}
    assert all(e.votes == {"solo-judge": e.label or None} for e in labels.exclude(label=""))
    client = client_for(coordinator)
    card = client.get(f"/api/v1/reports/runs/{run.pk}/scorecard/").json()
    assert not card.get("empty"), card.get("empty")
    assert card["labels"]["present"] == 6
    assert "single judge" in card["methods"]["text"] and "majority vote" not in card["methods"]["text"]
    page = client.get(f"/reports/runs/{run.pk}/scorecard/").content.decode()
    assert "This run has no ensemble labels yet" not in page
    judges = client.get(f"/api/v1/reports/studies/{study.pk}/judges/?run={run.pk}").json()
    for group in judges["groups"]:
        assert set(group.get("alt_test") or {}) <= {"solo-judge"}  # the judge once, no "ensemble" copy of it
    assert "ensemble included" not in judges["methods"]["text"]


def test_the_turns_a_judge_cited_come_in_with_its_labels_and_wrong_turns_are_refused(vera_study, researcher):
    """Issue 31: a bundle's judge labels carry the turns each judge cited; they come back as the label's evidence."""
    from django.urls import reverse

    from corpus.models import Conversation

    conversation = Conversation.objects.get(external_id="a1b2c3")
    n = conversation.messages.count()
    text = ("unit,judge,item,label,evidence_turns,missing_reason\n"
            f"a1b2c3,ext-judge-1,Detects Potential Risk,{BP},2 1,\n"
            f"a1b2c3,ext-judge-2,Detects Potential Risk,{BP},,\n"
            "a1b2c3,ext-judge-2,Confirms Risk,,,the judge's reply did not parse\n")
    instrument = vera_study.study.instrument
    run = judge_labels_import(text=text, file="judges.csv", instrument=instrument, created_by=researcher).run
    labels = JudgeLabel.objects.filter(result__run=run)
    assert labels.get(result__judge__name="ext-judge-1").evidence == [{"turn": 2}, {"turn": 1}]
    assert labels.get(item_key="Confirms Risk").missing_reason == "the judge's reply did not parse"
    page = client_for(researcher).get(reverse("judging:run-conversation", args=[run.pk, conversation.code])).content.decode()
    # No quote came with the turns: nothing to call unverified.
    assert 'href="#turn-2"' in page and 'href="#turn-1"' in page and "quote unverified" not in page
    for cell, problem in ((f"2 {n + 1}", f"turn {n + 1} is not a turn of unit 'a1b2c3' ({n} messages)"),
                          ("2 x", "'2 x' is not a list of turn numbers (e.g. 3 5)")):
        with pytest.raises(ImportRejected) as caught:
            judge_labels_import(text=text.replace(",2 1,", f",{cell},"), file="judges.csv", instrument=instrument)
        assert [str(p) for p in caught.value.problems] == [f"judges.csv, line 2, column evidence_turns: {problem}"]

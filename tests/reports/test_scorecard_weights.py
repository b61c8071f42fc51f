"""A study drawn with a sampling plan gets a weighted scorecard, and says so; the unweighted view is labelled."""

from __future__ import annotations

import csv
import io

import pytest

from annotation.sampling.selectors import PlanOptions
from annotation.sampling.services import study_create_from_plan
from reports.services import study_scorecard
from tests.conftest import client_for
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    chatbot_of,
    corpus,
    judged_run,
    judges_for,
    rate_all,
    rated_study,
)


def _labels(good: bool) -> dict[str, str]:
    return {k: ("N/A" if k in ("amhart_13", "amhart_14") else ("yes" if good else "no")) for k in AMHART_KEYS}


@pytest.fixture
def planned(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    """Per chatbot 24 conversations: 18 where the chatbot does everything (score 1), 6 where it does nothing (0).

    The judges disagree (judge-c dissents on one item) exactly on the bad ones, and the plan oversamples them
    four times: the rated sample holds far more bad conversations than the chatbot produces.
    """
    instrument = amhart()
    conversations = corpus(repetitions=12)  # 2 chatbots x 2 personas x 12 = 48
    good = {c.pk: (i % 4 != 0) for i, c in enumerate(conversations)}
    truth = {c.pk: _labels(good[c.pk]) for c in conversations}

    def judge(j, c):  # type: ignore[no-untyped-def]
        labels = dict(truth[c.pk])
        if j.name == "judge-c" and not good[c.pk]:
            labels["amhart_01"] = "yes"
        return labels

    run = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, judge)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=20, seed=3, boost=4.0),
        created_by=coordinator, name="Planned", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    picked = [link.conversation for link in study.study_conversations.all()]
    rate_all(study, coordinator, [clinician], picked, truth)
    return study, conversations, good, picked


def test_oversampled_disagreements_pull_the_unweighted_score_down_but_not_the_weighted_one(planned, coordinator):
    study, conversations, good, picked = planned
    card = study_scorecard(study=study)
    assert card["weighting"]["weighted"] is True and "sampling plan" in card["weighting"]["note"]
    for bot in ("BOT-A", "BOT-B"):
        mine = [c for c in conversations if c.target.code == bot]
        truth = sum(good[c.pk] for c in mine) / len(mine)  # 0.75: what the chatbot does
        rated = [c for c in picked if c.target.code == bot]
        sample = sum(good[c.pk] for c in rated) / len(rated)
        assert sample < 0.5  # the plan's oversampling of disagreements
        row = next(r for r in card["by_chatbot"] if r["chatbot"] == chatbot_of(mine[0]))
        assert row["mean_score"] == pytest.approx(truth, abs=1e-9)  # strata are pure: Hajek is exact here
        assert row["mean_score_unweighted"] == pytest.approx(sample)
        assert row["represents"] == pytest.approx(len(mine))
    client = client_for(coordinator)
    body = client.get(f"/reports/studies/{study.pk}/scorecard/").content.decode()
    assert "Weighted by the study" in body and "sampling plan" in body and "Mean score (weighted)" in body and "Unweighted" in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/scorecard/by_chatbot.csv").content.decode())))
    assert {"mean_score", "mean_score_unweighted", "weighted"} <= set(rows[0])
    api = client.get(f"/api/v1/reports/studies/{study.pk}/scorecard/").json()
    assert api["weighting"]["weighted"] is True
    # The study zip carries the same weighted tables and says so.
    import zipfile

    from reports.services import study_export_zip

    archive = zipfile.ZipFile(io.BytesIO(study_export_zip(study=study)))
    assert "Weighted by the study's sampling plan" in archive.read("README.txt").decode()
    zipped = list(csv.DictReader(io.StringIO(archive.read("scores_by_chatbot.csv").decode())))
    assert float(zipped[0]["mean_score"]) == pytest.approx(0.75) and "mean_score_unweighted" in zipped[0]


def test_a_study_without_a_plan_is_labelled_unweighted(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=2)
    truth = {c.pk: _labels(True) for c in conversations}
    judged_run(instrument, judges_for(instrument, ["p1", "p2"]), conversations, lambda j, c: truth[c.pk])
    study = rated_study(coordinator, [clinician], conversations[:4], truth)
    card = study_scorecard(study=study)
    assert card["weighting"]["weighted"] is False and card["weighting"]["note"].startswith("Unweighted")
    assert "mean_score_unweighted" not in card["by_chatbot"][0]
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/scorecard/").content.decode()
    assert "Unweighted: every rated conversation counts the same" in body

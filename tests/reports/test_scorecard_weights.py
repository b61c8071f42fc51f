"""A study drawn with a sampling plan gets a weighted scorecard, and says so; the unweighted view is labelled."""

from __future__ import annotations

import csv
import io

import pytest

from reports.services import study_scorecard
from tests.conftest import client_for
from tests.support.judged import (
    amhart,
    chatbot_of,
    corpus,
    good_or_bad_labels,
    judged_run,
    judges_for,
    oversampled_study,
    rated_study,
)


@pytest.fixture
def planned(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    """48 conversations, a quarter bad; the judges disagree on the bad ones and the plan oversamples them."""
    built = oversampled_study(coordinator, clinician)
    return built["study"], built["conversations"], built["good"], built["picked"]


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
    truth = {c.pk: good_or_bad_labels(True) for c in conversations}
    judged_run(instrument, judges_for(instrument, ["p1", "p2"]), conversations, lambda j, c: truth[c.pk])
    study = rated_study(coordinator, [clinician], conversations[:4], truth)
    card = study_scorecard(study=study)
    assert card["weighting"]["weighted"] is False and card["weighting"]["note"].startswith("Unweighted")
    assert "mean_score_unweighted" not in card["by_chatbot"][0]
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/scorecard/").content.decode()
    assert "Unweighted: every rated conversation counts the same" in body

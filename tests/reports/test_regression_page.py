"""The regression on a judge run's scorecard: the fitted model is the model described, robust SEs offered."""

from __future__ import annotations

import csv
import io
import random

import pytest

from tests.conftest import client_for
from tests.support.judged import AMHART_KEYS, amhart, corpus, judged_run, judges_for

pytestmark = pytest.mark.django_db


def _run(repetitions: int, constant: str | None = None, chatbots: tuple[str, str] = ("BOT-A", "BOT-B")):  # type: ignore[no-untyped-def]
    """Return a judged run of two chatbots x 2 personas x repetitions; the second chatbot passes less often."""
    conversations = corpus(chatbots=chatbots, personas=2, repetitions=repetitions)
    rng = random.Random(4)

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        rate = 0.7 if conversation.target.code == chatbots[0] else 0.35
        rng.seed(hash((conversation.pk,)) % 1000)
        return {key: constant or ("yes" if rng.random() < rate else "no") for key in AMHART_KEYS[:12]}

    names = [f"{chatbots[0].lower()}-judge-{n}" for n in (1, 2, 3)]
    return judged_run(amhart(), judges_for(amhart(), names), conversations, labels)


def test_a_run_index_with_one_level_is_named_as_left_out_and_the_page_describes_the_fitted_model(researcher):
    run = _run(repetitions=1)
    body = client_for(researcher).get(f"/reports/runs/{run.pk}/scorecard/").content.decode()
    assert "random intercepts for item and" not in body
    assert "Left out of the model: " in body
    assert "the random intercept for conversation index (run index), a single level (0)" in body
    api = client_for(researcher).get(f"/api/v1/reports/runs/{run.pk}/scorecard/").json()["regression"]
    assert "run" not in api["random_intercepts"] and api["method"] == "mixed" and api["converged"] is True
    # 48 labels cannot show the items' variation either: the page names the model actually fitted.
    assert api["random_intercepts"] == [] and api["description"].startswith("logistic regression without random effects")
    assert api["description"] in body.replace("&#x27;", "'")


def test_cluster_robust_standard_errors_are_offered_on_the_page_the_api_and_the_csv(researcher, outsider):
    run = _run(repetitions=3)
    client = client_for(researcher)
    mixed = client.get(f"/reports/runs/{run.pk}/scorecard/").content.decode()
    assert "?regression=cluster_robust" in mixed and "Fitted: " in mixed
    body = client.get(f"/reports/runs/{run.pk}/scorecard/?regression=cluster_robust").content.decode()
    assert "standard errors cluster-robust by conversation (12 clusters)" in body
    assert "unreliable below about 30 clusters" in body
    api = client.get(f"/api/v1/reports/runs/{run.pk}/scorecard/?regression=cluster_robust").json()["regression"]
    assert api["method"] == "cluster_robust" and api["n_clusters"] == 12 and api["random_intercepts"] == []
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/runs/{run.pk}/scorecard/regression.csv?regression=cluster_robust").content.decode())))
    assert [r["term"] for r in rows] == [t["term"] for t in api["terms"]]
    assert float(rows[0]["se"]) == pytest.approx(api["terms"][0]["se"])
    assert client.get(f"/api/v1/reports/runs/{run.pk}/scorecard/?regression=other").status_code == 400
    assert client_for(outsider).get(f"/api/v1/reports/runs/{run.pk}/scorecard/?regression=cluster_robust").status_code == 403


def test_identical_labels_read_as_a_plain_sentence_not_a_statsmodels_error(researcher):
    run = _run(repetitions=2, constant="yes")
    body = client_for(researcher).get(f"/reports/runs/{run.pk}/scorecard/").content.decode()
    assert "every one of the" in body and "no variation for a logistic regression to explain" in body
    assert "endog" not in body

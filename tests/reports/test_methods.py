"""The methods paragraph of every report: written from the computed payload, shown on the page, in the JSON and
in the study zip; it states the payload's figures, changes when a parameter changes, and names no chatbot, model,
provider, judge or rater."""

from __future__ import annotations

import copy
import io
import random
import re
import zipfile
from datetime import timedelta

import numpy
import pytest
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import Study
from annotation.studies.services import study_create
from judging.sources import label_source_get
from reports import jobs, methods, services
from reports.drift.services import judge_drift
from reports.judge_assisted.services import judge_assisted_scorecard
from reports.methods.base import Methods, attach
from reports.raters.services import rater_drift
from tests.conftest import client_for, make_user
from tests.reports.test_one_computation import imported  # noqa: F401 - a VERA-MH study imported from its published format
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    noisy,
    oversampled_study,
    rate,
    rated_study,
)
from tests.support.report_study import CHATBOTS, build_report_study
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db


def _text(payload: dict) -> str:
    assert "error" not in payload["methods"], payload["methods"].get("error")
    return payload["methods"]["text"]


# --- every kind has a writer, and a writer that fails loses no figure ------------------------------------------


def test_every_registered_report_kind_has_a_methods_writer():
    import reports.drift.services  # noqa: F401 - each registers its kind with reports.jobs
    import reports.evidence.services  # noqa: F401
    import reports.judge_assisted.services  # noqa: F401
    import reports.leaderboard.services  # noqa: F401
    import reports.raters.services  # noqa: F401

    reports_ = {kind for kind, registered in jobs.KINDS.items() if registered.methods}  # a file job (the bundle) has none
    assert reports_ <= set(methods.WRITERS), f"no methods writer for {reports_ - set(methods.WRITERS)}"


def test_a_writer_that_fails_leaves_the_figures_and_says_the_paragraph_could_not_be_written(monkeypatch):
    def broken(payload, params):  # type: ignore[no-untyped-def]
        raise KeyError("n_raters")

    monkeypatch.setitem(methods.WRITERS, "test-kind", broken)
    out = attach("test-kind", {}, {"kappa": 0.61})
    assert out["kappa"] == 0.61 and out["methods"]["text"] == ""
    assert "could not be written" in out["methods"]["error"]
    monkeypatch.setitem(methods.WRITERS, "test-kind", lambda p, q: Methods("T", f"Kappa {p['kappa']}.", ("cohen1960",)))
    written = attach("test-kind", {}, {"kappa": 0.61})["methods"]
    assert written["text"].startswith("Kappa 0.61. Computed with evalsite ")
    assert written["references"][0]["key"] == "cohen1960" and written["references"][0]["doi"] == "10.1177/001316446002000104"


EMPTY = {
    "reliability": ({"empty": "No submitted ratings yet.", "instrument": {"name": "AMHART", "version": 1, "kind": "checklist"}},
                    "No inter-rater reliability was computed for the items of the instrument “AMHART” (version 1): no submitted ratings yet."),
    "judges": ({"run": 3, "empty": "This run has no labels for the study's conversations."},
               "No comparison was computed for judge run #3: this run has no labels for the study's conversations."),
    "scorecard": ({"empty": True, "labels": {"expected": 28, "present": 0}},
                  "No scorecard was computed: the study has no human consensus label yet."),
    "run-scorecard": ({"empty": True, "labels": {"present": 0}, "ensemble": {"run": 4}},
                      "No scorecard was computed: judge run #4 has no ensemble label yet."),
    "run-regression": ({"run": 4, "error": "cannot fit: chatbot CB-A · vendor-a/chat-large passes every item"},
                       "No regression was fitted on the ensemble labels of judge run #4: the data cannot support the model "
                       "(the page gives the reason)."),
    "judge_assisted": ({"empty": "This run has no judged conversation (or all were flagged by the integrity checks)."},
                       "No judge-assisted estimate was computed: this run has no judged conversation (or all were flagged by "
                       "the integrity checks)."),
    "rater_drift": ({"empty": "No rater has an assignment in this study yet."},
                    "No rater drift was computed: no rater has an assignment in this study yet."),
    "judge_drift": ({"empty": "The two versions share no judged conversation.", "a": {"run": 1, "source": "ensemble"},
                     "b": {"run": 2, "source": "judge:7"}},
                    "No drift was computed between version A, the majority-vote ensemble of judge run #1, and version B, one "
                    "judge of judge run #2 (source judge:7): the two versions share no judged conversation."),
    "realism": ({"realism": [], "design_vs_perceived": {}, "n_ratings": 0},
                "No realism figure was computed: none of the 0 submitted ratings holds a realism, risk or disclosure answer of "
                "the study section that could be compared."),
}


@pytest.mark.parametrize("kind", sorted(EMPTY))
def test_a_report_with_nothing_to_compute_says_so_in_its_paragraph(kind):
    payload, expected = EMPTY[kind]
    assert methods.WRITERS[kind](payload, {}).text == expected
    assert "vendor" not in attach(kind, {}, payload)["methods"]["text"]


# --- reliability ---------------------------------------------------------------------------------------------


@pytest.fixture
def known(db):  # type: ignore[no-untyped-def]
    return build_verdict_study(late_rater=True, prefix="mt")


def test_reliability_paragraph_states_the_payloads_figures_and_follows_its_parameters(known):
    data = services.study_reliability(study=known.study)
    text = _text(data)
    assert f"from {data['n_ratings']:,} submitted item ratings by {data['n_raters']} raters on {data['n_conversations']} conversations" in text
    spread = data["raters_per_conversation"]
    assert f"({spread['min']} to {spread['max']} raters per conversation, median {spread['median']})" in text
    assert f"Agreement is measured on the {data['n_conversations_pairable']} conversations rated by two or more raters" in text
    assert "14 items of the instrument “AMHART: Adolescent Mental Health AI Response Tool” (version 1)" in text
    assert "(“N/A”, as the instrument declares them) were excluded" in text  # the study's N/A policy
    for named in ("Fleiss' kappa with its observed (P0) and chance (Pe) agreement", "Cohen's kappas (Cohen, 1960)",
                  "Krippendorff's alpha at the nominal level of measurement", "Gwet's AC1 (Gwet, 2008)",
                  "the generalisation of Gwet, 2014"):  # three or four raters per conversation: Gwet's variant
        assert named in text, named
    boot = data["bootstrap"]
    assert f"{boot['resamples']:,} resamples with seed {boot['seed']}" in text and "cluster bootstrap" in text
    assert f"below {data['threshold']:.2f} are flagged" in text and "85% or more" in text
    assert f"NumPy {numpy.__version__}" in text and data["methods"]["software"]["numpy"] == numpy.__version__
    keys = {r["key"] for r in data["methods"]["references"]}
    assert {"fleiss1971", "cohen1960", "krippendorff2011", "gwet2008", "gwet2014", "efron1993", "field2007"} <= keys

    as_category = _text(services.study_reliability(study=known.study, na="category"))
    assert "were kept as a category of their own" in as_category and "were excluded" not in as_category
    fewer = _text(services.study_reliability(study=known.study, bootstrap=200))
    assert "200 resamples" in fewer and "1,000 resamples" not in fewer


def test_a_question_flow_is_described_by_its_dimensions_and_its_not_relevant_label(imported):  # noqa: F811
    study, _ = imported
    text = _text(services.study_reliability(study=study))
    assert "for the 5 dimensions of the instrument “VERA-MH question flow”" in text
    assert "(“Not Relevant”, as the instrument declares them) were kept as a category of their own" in text
    assert "pooled over the 5 dimensions with the labels “Best Practice”/“Suboptimal but Low Potential for Harm”" in text
    instrument_part, section_part = text.split("study-section item")
    assert not re.search(r"\bitems?\b", instrument_part), instrument_part  # a flow has dimensions, not items
    assert "the 1–5 items" in section_part  # the study section's questions stay items


def test_the_paragraph_is_written_from_the_payload_alone(known):
    """Change a figure of the payload and the paragraph follows: it never reads a default of its own."""
    data = services.study_reliability(study=known.study)
    payload = copy.deepcopy({k: v for k, v in data.items() if k != "methods"})
    payload["bootstrap"]["seed"] = 7
    payload["bootstrap"]["confidence"] = 0.9
    payload["threshold"] = 0.6
    text = methods.WRITERS["reliability"](payload, {}).text
    assert "seed 7" in text and "90% confidence intervals" in text and "below 0.60" in text and "20260101" not in text
    payload["bootstrap"]["resamples"] = 0
    assert "No confidence intervals were computed" in methods.WRITERS["reliability"](payload, {}).text


# --- judges vs humans and the alt-test ------------------------------------------------------------------------


def test_judges_paragraph_states_epsilon_q_minimums_and_the_outcome_and_follows_the_study_epsilon(known):
    data = services.study_judges_vs_humans(study=known.study, run_id=known.run.pk)
    text = _text(data)
    alt = data["parameters"]["alt_test"]
    assert "3 LLM judges and their majority-vote ensemble (judge run #" in text
    assert f"{data['n_conversations']} conversations rated by {data['n_raters']} raters" in text
    assert f"{data['n_consensus']} conversation–item pairs of them with a human consensus" in text
    assert "alternative annotator test (Calderon, Reichart & Dror, 2025)" in text
    assert "ε = 0.2;" in text and f"q = {alt['q']:g}" in text and "Benjamini–Yekutieli procedure" in text
    assert "2 raters per instance, 30 instances per rater and 3 raters in all" in text
    assert "1,000 resamples, seed 20260101" in text and "at least 10 conversations" in text
    pooled = data["groups"][0]["alt_test"]
    passed = sum(1 for t in pooled.values() if t["passed"] is True)
    failed = sum(1 for t in pooled.values() if t["passed"] is False)
    assert f"of the {len(pooled)} judges tested (ensemble included), {passed} passed and {failed} failed" in text
    assert "1 rater had fewer instances than the minimum" in text  # the late rater
    assert "kept as a category of their own on both sides" in text
    assert {"calderon2025", "benjamini2001", "cohen1960"} <= {r["key"] for r in data["methods"]["references"]}

    Study.objects.filter(pk=known.study.pk).update(alt_test_epsilon=0.1)
    known.study.refresh_from_db()
    stricter = services.study_judges_vs_humans(study=known.study, run_id=known.run.pk)
    text = _text(stricter)
    assert "ε = 0.1;" in text and "ε = 0.2" not in text
    pooled = stricter["groups"][0]["alt_test"]
    passed = sum(1 for t in pooled.values() if t["passed"] is True)
    assert f"{passed} passed" in text
    excluded = _text(services.study_judges_vs_humans(study=known.study, run_id=known.run.pk, na="exclude"))
    assert "excluded on both sides" in excluded


# --- scorecards, weights and the judge-assisted estimates ------------------------------------------------------


@pytest.fixture
def planned(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    """A study drawn from a judge run with a sampling plan (disagreements oversampled), and one drawn by hand."""
    built = oversampled_study(coordinator, clinician)
    by_hand = rated_study(coordinator, [clinician], built["conversations"][:8], built["truth"], name="By hand")
    return built["study"], by_hand, built["run"]


def test_scorecard_paragraph_says_weighted_by_the_plan_or_unweighted(planned):
    study, by_hand, run = planned
    card = services.study_scorecard(study=study)
    text = _text(card)
    plan = card["weighting"]["plan"]
    assert card["weighting"]["weighted"] is True
    assert f"({plan['n']} of the {plan['population']} conversations of judge run #{run.pk}, judge disagreement oversampled)" in text
    assert "Hájek estimate weighting each conversation by 1/π" in text and "Hájek, 1971" in text
    assert f"from the human consensus labels of the study on {card['n_conversations']} conversations of 2 chatbots" in text
    assert card["consensus_rule"]["min_ratings"] == 1  # one rater per conversation: a single rating is the consensus
    assert "yes / (yes + no)" in text and "modal rating once it has at least 1 rating;" in text
    assert {"hajek1971", "sarndal1992"} <= {r["key"] for r in card["methods"]["references"]}
    plain = _text(services.study_scorecard(study=by_hand))
    assert "Unweighted: every rated conversation counts the same (this study has no sampling plan)." in plain
    assert "Hájek" not in plain

    run_card = _text(services.run_scorecard(run=run))
    assert f"the ensemble labels of judge run #{run.pk}" in run_card and "majority vote of the run's 3 judges" in run_card
    assert "uncorrected for the judges' errors" in run_card


def test_judge_assisted_paragraph_names_ppi_and_ppi_plus_plus_and_the_weights(planned):
    study, by_hand, run = planned
    data = judge_assisted_scorecard(study=study, run=run)
    text = _text(data)
    assert "prediction-powered inference (PPI; Angelopoulos et al., 2023) with λ = 1" in text
    assert "PPI++ (Angelopoulos, Duchi & Zrnic, 2023)" in text and "ddof 1" in text  # the two-phase estimator
    assert f"on {data['n_judged']} judged conversations of 2 chatbots, {data['n_rated']} of which have a human consensus" in text
    assert "each rated conversation counts 1/π and each unrated one 1/(1 − π)" in text
    lams = [r["lam_tuned"] for r in data["rows"] if r.get("lam_tuned") is not None]
    if lams:
        assert (f"λ = {min(lams):.2f}" in text) or (f"λ from {min(lams):.2f} to {max(lams):.2f}" in text)
    assert "95% small-sample t intervals" in text and "ppi_py draws normal intervals" in text
    unweighted = _text(judge_assisted_scorecard(study=by_hand, run=run))
    assert "treated as a simple random sample" in unweighted and "1/(1 − π)" not in unweighted


# --- regression ----------------------------------------------------------------------------------------------


def _regression_run():  # type: ignore[no-untyped-def]
    conversations = corpus(chatbots=("BOT-A", "BOT-B"), personas=2, repetitions=3)
    rng = random.Random(4)

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        rate = 0.7 if conversation.target.code == "BOT-A" else 0.35
        rng.seed(conversation.pk % 1000)
        return {key: ("yes" if rng.random() < rate else "no") for key in AMHART_KEYS[:12]}

    return judged_run(amhart(), judges_for(amhart(), ["rj-1", "rj-2", "rj-3"]), conversations, labels)


def test_regression_paragraph_describes_the_model_fitted_and_its_standard_errors(db):
    run = _regression_run()
    mixed = services.run_regression(run=run)
    text = _text(mixed)
    assert f"judge run #{run.pk}" in text and f"{mixed['n_observations']} labels" in text
    assert mixed["description"] in text
    assert "passed ~ chatbot" in text and "Treatment" not in text  # the model from its terms, not the raw formula
    for d in mixed["dropped"]:
        assert d["term"] in text or "conversation index" in text
    robust = services.run_regression(run=run, method="cluster_robust")
    text = _text(robust)
    assert f"from {robust['n_clusters']} conversations" in text and "cluster-robust by conversation" in text
    assert "Liang & Zeger, 1986; Cameron & Miller, 2015" in text and "+ item" in text
    assert "vendor/" not in text and "BOT-A" not in text


# --- rater drift, judge drift, realism ---------------------------------------------------------------------


def test_rater_drift_paragraph_follows_the_order_and_says_when_there_is_no_timing_data(db, coordinator, clinician, clinician2):
    conversations = corpus(chatbots=("BOT-A",), personas=1, repetitions=6)
    third = make_user("rita", "clinician")
    study = study_create(name="Queue", instrument=amhart(), section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator],
                         raters=[(clinician, "clinician"), (clinician2, "clinician"), (third, "clinician")])
    truth = {key: "yes" for key in AMHART_KEYS}
    start = timezone.now() - timedelta(hours=3)
    for i, c in enumerate(conversations):
        for n, rater in enumerate((clinician, clinician2, third)):
            rate(study, c, rater, truth, position=i, seconds=300, submitted_at=start + timedelta(minutes=10 * i + n))
    study_compute_consensus(study=study, actor=coordinator)
    data = rater_drift(study=study)
    text = _text(data)
    assert "For each of 3 raters (18 submitted ratings)" in text and "leave-one-out consensus" in text
    assert "2,000 resamples; seed 20260122" in text and "the order of their assigned queue" in text
    assert f"gaps of more than {study.sitting_gap_minutes} minutes" in text and "without timing data" not in text
    assert "the order in which they submitted" in _text(rater_drift(study=study, order="submitted"))


def test_rater_drift_paragraph_of_imported_ratings_says_no_timing_data(known):
    text = _text(rater_drift(study=known.study))
    assert "121 ratings were imported from a file without timing data" in text and "thirds (first" not in text


def test_judge_drift_paragraph_states_versions_sample_and_the_paired_bootstrap(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=3)
    truth = amhart_truth(conversations, seed=8)
    rng = random.Random(2)
    (judge_a,) = judges_for(instrument, ["judge-v1"])
    (judge_b,) = judges_for(instrument, ["judge-v2"], cloned_from=judge_a)
    run_a = judged_run(instrument, [judge_a], conversations, lambda j, c: noisy(truth[c.pk], rng, 0.2))
    run_b = judged_run(instrument, [judge_b], conversations, lambda j, c: noisy(truth[c.pk], rng, 0.1))
    study = rated_study(coordinator, [clinician], conversations, truth)
    a, b = label_source_get(run_a, None), label_source_get(run_b, None)
    data = judge_drift(run_a=run_a, source_a=a, run_b=run_b, source_b=b, study=study)
    text = _text(data)
    assert f"one judge of judge run #{run_a.pk}" in text and f"judge run #{run_b.pk}" in text
    assert f"on the {data['n_shared_conversations']} conversations both judged" in text
    assert f"human consensus of study #{study.pk} ({data['n_reference']} labels)" in text
    assert "2,000 resamples, seed 20260115" in text and "judge-v1" not in text
    alone = _text(judge_drift(run_a=run_a, source_a=a, run_b=run_b, source_b=b, study=None))
    assert "No human reference was chosen" in alone and "resamples" not in alone


# --- names, access, pages, API and the study zip ---------------------------------------------------------------


@pytest.fixture
def audit(db):  # type: ignore[no-untyped-def]
    return build_report_study(n_conversations=48, prefix="mx")


def _every_paragraph(audit) -> dict[str, str]:  # type: ignore[no-untyped-def]
    from reports.evidence.services import study_evidence_agreement
    from reports.leaderboard.services import run_leaderboard, study_leaderboard

    study, run = audit.study, audit.run
    payloads = {
        "reliability": services.study_reliability(study=study),
        "scorecard": services.study_scorecard(study=study),
        "realism": services.study_realism(study=study),
        "judges": services.study_judges_vs_humans(study=study, run_id=run.pk),
        "run-scorecard": services.run_scorecard(run=run),
        "run-regression": services.run_regression(run=run),
        "judge_assisted": judge_assisted_scorecard(study=study, run=run),
        "rater_drift": rater_drift(study=study),
        "judge_drift": judge_drift(run_a=run, source_a=label_source_get(run, None), run_b=run,
                                   source_b=label_source_get(run, None), study=study),
        "leaderboard": study_leaderboard(study=study, run=run),
        "leaderboard_run": run_leaderboard(run=run),
        "evidence_agreement": study_evidence_agreement(study=study, run_id=run.pk),
    }
    assert set(payloads) == set(methods.WRITERS)
    return {kind: _text(payload) for kind, payload in payloads.items()}


def test_no_paragraph_names_a_chatbot_model_provider_judge_or_rater(audit):
    texts = _every_paragraph(audit)
    from judging.models import Judge

    names = [code for code, _ in CHATBOTS] + [model for _, model in CHATBOTS] + ["vendor-", "user-agent-x"]
    for judge in Judge.objects.filter(name__startswith="mx-"):
        names += [judge.name, judge.model, judge.model.split("/", 1)[1]]
    names += ["openai", "anthropic", "gemini"] + [r.username for r in audit.raters] + [audit.coordinator.username]
    for kind, text in texts.items():
        for name in names:
            assert name.casefold() not in text.casefold(), (kind, name)
    assert "Pooled, of the 4 judges tested (ensemble included)" in texts["judges"]
    assert "perceived suicide risk" in texts["realism"] and "unweighted Cohen's kappa" in texts["realism"]


def test_raters_cannot_reach_any_report_page_api_or_zip_that_carries_a_paragraph(audit, outsider):
    study, run = audit.study, audit.run
    services.study_reliability(study=study)
    urls = [
        f"/reports/studies/{study.pk}/reliability/", f"/reports/studies/{study.pk}/judges/?run={run.pk}",
        f"/reports/studies/{study.pk}/scorecard/", f"/reports/studies/{study.pk}/realism/",
        f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}", f"/reports/studies/{study.pk}/raters/",
        f"/reports/runs/{run.pk}/scorecard/", f"/reports/drift/?a_run={run.pk}&b_run={run.pk}",
        f"/reports/studies/{study.pk}/export.zip",
        f"/api/v1/reports/studies/{study.pk}/reliability/", f"/api/v1/reports/studies/{study.pk}/judges/?run={run.pk}",
        f"/api/v1/reports/studies/{study.pk}/scorecard/", f"/api/v1/reports/runs/{run.pk}/scorecard/",
        f"/api/v1/reports/studies/{study.pk}/judge-assisted/?run={run.pk}", f"/api/v1/reports/studies/{study.pk}/raters/",
        f"/api/v1/reports/drift/?a_run={run.pk}&b_run={run.pk}",
    ]
    for user in (audit.raters[0], outsider):
        client = client_for(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code in (403, 404), (user.username, url, response.status_code)
            assert b"Computed with evalsite" not in response.content
    reader = client_for(audit.coordinator)
    assert reader.get(f"/reports/studies/{study.pk}/reliability/").status_code == 200


def test_every_page_shows_the_paragraph_with_a_copy_button_and_the_api_gives_text_and_references(audit):
    study, run = audit.study, audit.run
    client = client_for(audit.coordinator)
    pages = {
        f"/reports/studies/{study.pk}/reliability/": services.study_reliability(study=study),
        f"/reports/studies/{study.pk}/judges/?run={run.pk}": services.study_judges_vs_humans(study=study, run_id=run.pk),
        f"/reports/studies/{study.pk}/scorecard/": services.study_scorecard(study=study),
        f"/reports/studies/{study.pk}/realism/": services.study_realism(study=study),
        f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}": judge_assisted_scorecard(study=study, run=run),
        f"/reports/studies/{study.pk}/raters/": rater_drift(study=study),
        f"/reports/runs/{run.pk}/scorecard/": services.run_regression(run=run),
        f"/reports/drift/?a_run={run.pk}&b_run={run.pk}&study={study.pk}": judge_drift(
            run_a=run, source_a=label_source_get(run, None), run_b=run, source_b=label_source_get(run, None), study=study),
    }
    from django.utils.html import escape

    for url, payload in pages.items():
        body = client.get(url).content.decode()
        assert 'class="methods-block"' in body and "Methods paragraph" in body, url
        for paragraph in payload["methods"]["text"].split("\n\n"):  # the page shows the payload's text, word for word
            assert f"<p>{escape(paragraph)}</p>" in body, url
        assert 'class="methods-copy" data-copy=' in body and " hidden>Copy paragraph</button>" in body, url
        assert "reports/methods.js" in body
    run_page = client.get(f"/reports/runs/{run.pk}/scorecard/").content.decode()
    assert 'id="methods-regression"' in run_page and 'id="methods"' in run_page  # the scorecard's and the regression's

    api = {
        f"/api/v1/reports/studies/{study.pk}/reliability/": None,
        f"/api/v1/reports/studies/{study.pk}/judges/?run={run.pk}": None,
        f"/api/v1/reports/studies/{study.pk}/scorecard/": None,
        f"/api/v1/reports/studies/{study.pk}/judge-assisted/?run={run.pk}": None,
        f"/api/v1/reports/studies/{study.pk}/raters/": None,
        f"/api/v1/reports/runs/{run.pk}/scorecard/": None,
        f"/api/v1/reports/drift/?a_run={run.pk}&b_run={run.pk}": None,
    }
    for url in api:
        body = client.get(url).json()
        assert body["methods"]["text"].startswith(("Inter-rater", "The labels", "Scores", "Chatbot", "For each", "Two versions")), url
        assert all({"key", "cite", "citation"} <= set(r) for r in body["methods"]["references"]), url
        assert body["methods"]["software"]["evalsite"]
    run_api = client.get(f"/api/v1/reports/runs/{run.pk}/scorecard/").json()
    assert run_api["regression"]["methods"]["title"] == "Item-level regression"


def test_the_study_zip_holds_methods_md_with_each_reports_paragraph(audit):
    study, run = audit.study, audit.run
    archive = zipfile.ZipFile(io.BytesIO(client_for(audit.coordinator).get(f"/reports/studies/{study.pk}/export.zip").content))
    document = archive.read("METHODS.md").decode()
    assert "METHODS.md" in archive.read("README.txt").decode()
    expected = {
        "## Inter-rater reliability (N/A excluded)": services.study_reliability(study=study),
        "## Scorecard (human consensus)": services.study_scorecard(study=study),
        "## Realism of the simulated users": services.study_realism(study=study),
        "## Rater drift and load": rater_drift(study=study),
        f"## LLM judges against human raters (judge run #{run.pk}, N/A as a category)":
            services.study_judges_vs_humans(study=study, run_id=run.pk),
        f"## Judge-assisted scores (judge run #{run.pk})": judge_assisted_scorecard(study=study, run=run),
    }
    for heading, payload in expected.items():
        assert heading in document, heading
        assert _text(payload) in document, heading
    assert "## References" in document and "Calderon, N., Reichart, R., & Dror, R. (2025)" in document
    assert "https://doi.org/10.1037/h0031619" in document  # Fleiss (1971)
    assert document.count("- Cohen, J. (1960)") == 1  # every work listed once
    assert document.index("- Särndal, C.-E.") < document.index("- Seabold, S.")  # alphabetical, accents aside
    assert study.name not in document  # a study's name often names the chatbots under test


def test_a_run_not_computed_since_the_data_changed_is_listed_as_not_included(audit):
    study, run = audit.study, audit.run
    instrument = study.instrument
    older = judged_run(instrument, judges_for(instrument, ["mx-old-a", "mx-old-b"]),
                       [link.conversation for link in study.study_conversations.all()[:6]],
                       lambda j, c: dict.fromkeys(AMHART_KEYS, "yes"))
    document = services.study_methods(study=study)
    newest, other = (older, run) if older.created_at >= run.created_at else (run, older)
    assert f"## LLM judges against human raters (judge run #{newest.pk}, N/A as a category)" in document
    assert f"judge run #{other.pk}, N/A as a category): not computed since the data last changed" in document
    services.study_judges_vs_humans(study=study, run_id=other.pk)  # a reader opens its page
    assert f"## LLM judges against human raters (judge run #{other.pk}, N/A as a category)" in services.study_methods(study=study)


def test_the_scorecard_paragraph_names_the_intervals_its_payload_computed():
    from reports.methods.scorecards import _intervals

    student, _ = _intervals({"method": "student_t", "confidence": 0.95})
    weighted, refs = _intervals({"method": "weighted_t", "confidence": 0.95})
    boot, boot_refs = _intervals({"method": "cluster_bootstrap", "confidence": 0.9, "resamples": 2000, "seed": 7,
                                  "weighted": True})
    assert "95% Student t interval" in student
    assert "Hájek" in weighted and refs == ("sarndal1992",)
    assert "90% percentile cluster-bootstrap" in boot and "2,000 resamples, seed 7" in boot and "1/π" in boot
    assert "field2007" in boot_refs
    assert "no confidence intervals" in _intervals({})[0]


def test_judges_paragraph_counts_the_rated_conversations_the_alt_test_uses_before_consensus_exists(known):
    """Issue 31, defect 8a: before consensus it said "0 conversations rated by 6 raters" beside an alt-test on 450 instances."""
    from annotation.models import ConsensusLabel

    ConsensusLabel.objects.filter(study=known.study).delete()
    data = services.study_judges_vs_humans(study=known.study, run_id=known.run.pk)
    text = _text(data)
    pooled = data["groups"][0]["alt_test"]
    tested = {t["n_instances"] for t in pooled.values()}
    assert data["n_consensus"] == 0 and max(tested) > 0
    rated = {code for code, _, _, _ in known.ratings} & {code for code, _, _, _ in known.judge_labels}
    assert data["n_conversations"] == len(rated) > 0
    assert data["n_raters"] == len({rater for _, rater, _, _ in known.ratings})
    assert f"{data['n_conversations']} conversations rated by {data['n_raters']} raters and judged by the run" in text
    assert not re.search(r"\b0 conversations rated", text)
    assert "0 conversation–item pairs of them with a human consensus" in text


def test_every_work_a_paragraph_cites_is_in_its_references_and_the_reliability_checks_name_their_software(known):
    """Issue 31, defect 8b: the reliability paragraph said Fleiss and AC1 equal irrCAC and statsmodels but cited neither."""
    from reports.methods.references import REFERENCES

    reliability = services.study_reliability(study=known.study)
    judges = services.study_judges_vs_humans(study=known.study, run_id=known.run.pk)
    for data in (reliability, judges):
        text, keys = _text(data), {r["key"] for r in data["methods"]["references"]}
        assert {key for key, ref in REFERENCES.items() if ref.cite in text} <= keys
    text, keys = _text(reliability), {r["key"] for r in reliability["methods"]["references"]}
    software = {"statsmodels": "seabold2010", "irrCAC": "gwet2019irrcac", "krippendorff package": "castro2017",
                "scikit-learn": "pedregosa2011"}
    for name, key in software.items():
        assert name in text and key in keys and REFERENCES[key].cite in text
    assert "fergadis_irrcac" in keys  # the Python port the reference values came from

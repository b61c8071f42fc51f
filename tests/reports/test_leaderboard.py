"""The leaderboard: page, API and CSV give the statistics package's figures, to report readers only."""

from __future__ import annotations

import csv
import io
import random

import pytest

from judging.models import EnsembleLabel
from reports.judge_assisted.services import judge_assisted_scorecard
from reports.leaderboard.services import run_leaderboard, study_leaderboard
from reports.services import run_scorecard
from stats.leaderboard import Unit, compare_chatbots
from stats.ppi import ppi_amhart_score
from tests.conftest import client_for
from tests.factories import ConversationFactory, TargetFactory
from tests.support.judged import (
    amhart,
    amhart_truth,
    chatbot_of,
    corpus,
    judged_run,
    judges_for,
    rated_study,
)
from tests.support.leaderboard import vera_board


@pytest.fixture
def vera(db, coordinator, clinician):  # type: ignore[no-untyped-def]
    return vera_board(coordinator, clinician)


def _table(data, stratum, method):  # type: ignore[no-untyped-def]
    return next(t for t in data["tables"] if t["stratum"] == stratum and t["method"] == method)


def _pair(table, a, b):  # type: ignore[no-untyped-def]
    return next(p for p in table["pairs"] if {p["a"].split(" · ")[0], p["b"].split(" · ")[0]} == {a, b})


def _ensemble(run, cid):  # type: ignore[no-untyped-def]
    return dict(EnsembleLabel.objects.filter(run=run, conversation_id=cid).values_list("item_key", "label"))


def test_a_runs_leaderboard_compares_every_pair_by_persona_with_holm_decisions(vera):
    run, conversations = vera["run"], vera["conversations"]
    data = run_leaderboard(run=run)
    assert data["context"] == "run" and data["kind"] == "vera-mh" and data["method_keys"] == ["judge_only"]
    assert [s["key"] for s in data["strata"]] == ["all", "risk:Low", "risk:High"]
    table = _table(data, "all", "judge_only")
    ab, ac, bc = _pair(table, "BOT-A", "BOT-B"), _pair(table, "BOT-A", "BOT-C"), _pair(table, "BOT-B", "BOT-C")
    # Known answers: A is better than B by construction; C says what A says.
    assert ab["decision"] == "higher" and ab["verdict"] == "BOT-A · vendor/bot-a-model scores higher than BOT-B · vendor/bot-b-model"
    assert ab["design"] == "paired" and ab["n_clusters"] == 24 and "paired by persona" in ab["design_note"]
    assert ac["difference"] == 0 and ac["decision"] == "no_difference" and ac["verdict"] == "no difference shown"
    assert ac["low"] is None and ac["cannot_estimate"].startswith("cannot be estimated: every resample gave the same")
    assert bc["decision"] == "higher" and bc["a"].startswith("BOT-C")
    assert table["family_size"] == 3
    # The same figures as the statistics package on the run's labels, clustered by persona.
    units = [Unit(chatbot_of(c), ("persona", c.persona_id), judge=list(_ensemble(run, c.pk).values())) for c in conversations]
    expected = compare_chatbots(units, score="vera_mh", method="judge_only", cluster_name=("persona", "personas"))
    assert [(p["a"], p["b"], p["low"], p["high"], p["p_adjusted"]) for p in table["pairs"]] == [
        (p.a, p.b, p.low, p.high, p.p_adjusted) for p in expected.pairs
    ]
    # Judges-only scores and intervals are the run scorecard's (one computation for both pages).
    card = {r["chatbot"]: r for r in run_scorecard(run=run)["by_chatbot"]}
    for s in table["scores"]:
        row = card[s["chatbot"]]
        assert (s["estimate"], s["low"], s["high"]) == pytest.approx((row["score"], row["ci_low"], row["ci_high"]))
    assert [s["chatbot"][:5] for s in table["scores"]][-1] == "BOT-B"  # ordered by score
    # Every persona risk level is a table of its own, from its personas' conversations only.
    low = _table(data, "risk:Low", "judge_only")
    assert _pair(low, "BOT-A", "BOT-B")["n_clusters"] == 12
    params = data["parameters"]
    assert params["n_resamples"] == 5000 and params["seed"] == 20260101 and params["alpha"] == 0.05
    assert params["pairwise"]["adjustment"]["name"].startswith("Holm") and "1979" in params["pairwise"]["adjustment"]["reference"]
    assert params["clusters"]["plural"] == "personas" and params["min_clusters"] == 10
    assert data["method_info"]["judge_only"]["interval"]["name"] == "Percentile cluster bootstrap over conversations, as the scorecard"


def test_a_studys_leaderboard_has_every_method_with_the_judge_assisted_pages_figures(vera):
    study, run = vera["study"], vera["run"]
    data = study_leaderboard(study=study, run=run)
    assert data["method_keys"] == ["judge_only", "human_only", "ppi", "ppi_tuned"] and data["headline"] == "ppi"
    assert data["n_rated"] == 72 and data["n_judged"] == 144
    text = data["methods"]["text"]  # the methods paragraph, written from this payload
    assert "Holm" in text and f"seed {data['parameters']['seed']}" in text and "Zrnic" in text
    assisted = {r["chatbot"]: r for r in judge_assisted_scorecard(study=study, run=run)["rows"] if r["score"] == "vera_mh_score"}
    for method in ("human_only", "ppi", "ppi_tuned"):
        table = _table(data, "all", method)
        for s in table["scores"]:
            if method == "ppi_tuned":  # the leaderboard keeps ppi_py's same-sample lambda; the page cross-fits it
                assert assisted[s["chatbot"]][method]["method"] == "ppi++_cf"
                continue
            assert s["estimate"] == pytest.approx(assisted[s["chatbot"]][method]["estimate"])
            assert s["low"] == pytest.approx(assisted[s["chatbot"]][method]["low"])
        # The pairs' estimates are the same estimators, re-computed by the bootstrap's code.
        by = {s["chatbot"]: s["estimate"] for s in table["scores"]}
        for p in table["pairs"]:
            assert p["estimate_a"] == pytest.approx(by[p["a"]]) and p["estimate_b"] == pytest.approx(by[p["b"]])
    assert all(s["lam"] is not None for s in _table(data, "all", "ppi_tuned")["scores"])
    human = _table(data, "all", "human_only")
    ab = _pair(human, "BOT-A", "BOT-B")
    assert ab["decision"] == "higher" and ab["design"] == "paired" and "rated conversations of both" in ab["design_note"]
    # The humans saw BOT-B worse than the judges did: PPI corrects the judges' figure downwards.
    b = lambda t: next(s for s in t["scores"] if s["chatbot"].startswith("BOT-B"))  # noqa: E731
    assert b(_table(data, "all", "ppi"))["estimate"] < b(_table(data, "all", "judge_only"))["estimate"]
    assert "simple random" in data["notes"][0]


def test_a_study_without_a_judge_run_is_ranked_by_its_clinicians_alone(db, coordinator, clinician, clinician2):
    conversations = corpus(personas=3, repetitions=4)
    truth = amhart_truth(conversations, seed=2, yes_rate={"BOT-A": 0.8, "BOT-B": 0.3})
    study = rated_study(coordinator, [clinician, clinician2], conversations, truth)
    data = study_leaderboard(study=study, run=None)
    assert data["method_keys"] == ["human_only"] and data["n_judged"] == 0 and data["n_rated"] == 24
    assert "alone" in data["notes"][0] and data["parameters"]["clusters"]["plural"] == "persona × repetition cells"
    table = _table(data, "all", "human_only")
    for s in table["scores"]:
        mine = [c for c in conversations if chatbot_of(c) == s["chatbot"]]
        entries = [list(truth[c.pk].values()) for c in mine]
        expected = ppi_amhart_score(entries, entries, [], small_sample=True).human_only
        assert (s["estimate"], s["low"], s["high"]) == pytest.approx((expected.estimate, expected.low, expected.high))
    pair = table["pairs"][0]
    assert pair["design"] == "paired" and pair["n_clusters"] == 12  # 3 personas x 4 repetitions
    assert pair["decision"] == "higher" and pair["a"].startswith("BOT-A")


def test_conversations_with_no_persona_are_never_paired_and_the_page_says_so(db, researcher):
    instrument = amhart()
    bots = [TargetFactory(code=code, model="m") for code in ("BOT-X", "BOT-Y")]
    conversations = [ConversationFactory(target=bot, persona=None, run_index=None) for bot in bots for _ in range(12)]
    truth = amhart_truth(conversations, seed=1)
    run = judged_run(instrument, judges_for(instrument, ["n1", "n2"]), conversations, lambda j, c: truth[c.pk])
    data = run_leaderboard(run=run)
    pair = _table(data, "all", "judge_only")["pairs"][0]
    assert pair["design"] == "unpaired" and "does not pair them" in pair["design_note"]
    assert any("24 conversation(s) have no persona or repetition index" in n for n in data["notes"])
    assert [s["key"] for s in data["strata"]] == ["all"]  # no risk levels recorded: no breakdown
    page = client_for(researcher).get(f"/reports/runs/{run.pk}/leaderboard/").content.decode()
    assert "does not pair them" in page and "have no persona or repetition index" in page


def test_page_plot_api_and_csv_show_the_same_figures(vera, coordinator):
    study, run = vera["study"], vera["run"]
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/leaderboard/?run={run.pk}")
    assert page.status_code == 200
    body = page.content.decode()
    for text in ("Judges only", "Humans only", "Judge-assisted (PPI)", "PPI++", 'id="scores-chart"', 'id="pairs-chart"',
                 "scores higher than", "no difference shown", "Holm", "By persona risk level", "paired by persona"):
        assert text in body, text
    # The twins' interval is a single point: said in words under the chart, never drawn.
    assert "Not drawn (no interval to draw)" in body and "every resample gave the same difference" in body
    api = client.get(f"/api/v1/reports/studies/{study.pk}/leaderboard/?run={run.pk}").json()
    direct = study_leaderboard(study=study, run=run)
    assert api["tables"] == direct["tables"] and api["parameters"] == direct["parameters"]
    pairs = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/leaderboard/pairs.csv?run={run.pk}").content.decode())))
    scores = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/leaderboard/scores.csv?run={run.pk}").content.decode())))
    assert len(pairs) == sum(len(t["pairs"]) for t in direct["tables"]) == 3 * 4 * 3  # strata x methods x pairs
    assert len(scores) == 3 * 4 * 3
    row = next(r for r in pairs if r["stratum"] == "all" and r["method"] == "ppi" and "BOT-B" in r["chatbot_b"] and "BOT-A" in r["chatbot_a"])
    expected = _pair(_table(direct, "all", "ppi"), "BOT-A", "BOT-B")
    assert float(row["ci_low"]) == pytest.approx(expected["low"]) and float(row["p_holm"]) == pytest.approx(expected["p_adjusted"])
    assert row["seed"] == "20260101" and row["alpha"] == "0.05" and row["decision"] == "higher"
    # Another risk level and another method for the pairs; an unknown one falls back to the defaults.
    other = client.get(f"/reports/studies/{study.pk}/leaderboard/?run={run.pk}&risk=risk:High&compare=human_only").content.decode()
    assert "Persona risk level: High" in other and "Humans only" in other
    assert client.get(f"/reports/studies/{study.pk}/leaderboard/?risk=nonsense&compare=nonsense").status_code == 200
    assert client.get(f"/reports/studies/{study.pk}/leaderboard/nonsense.csv").status_code == 404


def test_raters_outsiders_and_non_members_cannot_reach_a_leaderboard(vera, clinician, outsider, researcher, coordinator):
    study, run = vera["study"], vera["run"]
    study_urls = [f"/reports/studies/{study.pk}/leaderboard/", f"/reports/studies/{study.pk}/leaderboard/scores.csv",
                  f"/reports/studies/{study.pk}/leaderboard/pairs.csv"]
    run_urls = [f"/reports/runs/{run.pk}/leaderboard/", f"/reports/runs/{run.pk}/leaderboard/pairs.csv"]
    # The clinician rates this study: reports (with the personas' risk levels) are never theirs to see.
    for user in (clinician, outsider):
        for url in study_urls + run_urls:
            response = client_for(user).get(url)
            assert response.status_code == 404, (user, url)
            assert b"High" not in response.content and b"BOT-A" not in response.content
        assert client_for(user).get(f"/api/v1/reports/studies/{study.pk}/leaderboard/").status_code == 403
        assert client_for(user).get(f"/api/v1/reports/runs/{run.pk}/leaderboard/").status_code == 403
    # A researcher who is not a member of the study sees the run's leaderboard, not the study's.
    assert client_for(researcher).get(study_urls[0]).status_code == 404
    assert client_for(researcher).get(f"/api/v1/reports/studies/{study.pk}/leaderboard/").status_code == 404
    assert client_for(researcher).get(run_urls[0]).status_code == 200
    assert client_for(coordinator).get(f"/api/v1/reports/studies/{study.pk}/leaderboard/?run=abc").status_code == 400
    bad = client_for(coordinator).get(f"/api/v1/reports/studies/{study.pk}/leaderboard/?run={run.pk}&source=judge:999999")
    assert bad.status_code == 400 and "not a label source" in bad.json()["detail"]


def test_an_amhart_run_pairs_conversations_by_persona_and_repetition(db, researcher):
    instrument = amhart()
    conversations = corpus(personas=2, repetitions=6)
    truth = amhart_truth(conversations, seed=5, yes_rate={"BOT-A": 0.75, "BOT-B": 0.35})
    run = judged_run(instrument, judges_for(instrument, ["p1", "p2"]), conversations, lambda j, c: truth[c.pk])
    data = run_leaderboard(run=run)
    assert data["kind"] == "checklist" and data["score"]["key"] == "amhart_score" and data["score"]["scale"] == "share"
    pair = _table(data, "all", "judge_only")["pairs"][0]
    assert pair["design"] == "paired" and pair["n_clusters"] == 12 and pair["n_shared"] == 12
    assert "persona × repetition cell" in pair["design_note"]
    page = client_for(researcher).get(f"/reports/runs/{run.pk}/leaderboard/").content.decode()
    assert " pp" in page  # differences of shares in percentage points
    scores = client_for(researcher).get(f"/reports/runs/{run.pk}/leaderboard/scores.csv").content.decode()
    assert scores.splitlines()[0].startswith("stratum,method,method_label,chatbot,estimate,ci_low,ci_high")


def test_a_cold_leaderboard_is_computed_by_a_worker_while_the_page_shows_progress(
    vera, coordinator, clinician, monkeypatch, django_capture_on_commit_callbacks
):
    from reports import jobs
    from reports.models import ReportCache
    from reports.tasks import report_compute_task

    monkeypatch.setattr(jobs, "runs_inline", lambda: False)
    client = client_for(coordinator)
    run = vera["run"]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.get(f"/reports/runs/{run.pk}/leaderboard/")
    assert response.status_code == 202 and len(queued) == 1
    assert "Computing this report" in response.content.decode()
    api = client.get(f"/api/v1/reports/runs/{run.pk}/leaderboard/")
    assert api.status_code == 202 and api.json()["pending"] is True
    row = ReportCache.objects.get(kind="leaderboard_run")
    assert client_for(clinician).get(f"/reports/jobs/{row.pk}/").status_code == 404  # a rater never sees its progress
    assert report_compute_task(row.pk) == "ready"
    done = client.get(f"/reports/runs/{run.pk}/leaderboard/")
    assert done.status_code == 200 and "scores higher than" in done.content.decode()


def test_under_a_sampling_plan_every_estimate_is_weighted_as_on_the_judge_assisted_page(db, coordinator, clinician):
    from annotation.sampling.selectors import PlanOptions
    from annotation.sampling.services import study_create_from_plan
    from tests.support.judged import noisy, rate_all

    instrument = amhart()
    conversations = corpus(personas=3, repetitions=8)
    truth = amhart_truth(conversations, seed=3, yes_rate={"BOT-A": 0.7, "BOT-B": 0.4})
    split = {c.pk: i % 3 == 0 for i, c in enumerate(conversations)}
    rng = random.Random(8)

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        base = noisy(dict(truth[conversation.pk]), rng, 0.1, alphabet=("yes", "no"))
        if split[conversation.pk] and judge.name == "w3":
            base["amhart_01"] = "yes" if base["amhart_01"] == "no" else "no"
        return base

    run = judged_run(instrument, judges_for(instrument, ["w1", "w2", "w3"]), conversations, labels)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=20, seed=7, boost=4.0),
        created_by=coordinator, name="Planned board", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    rate_all(study, coordinator, [clinician], [link.conversation for link in study.study_conversations.all()], truth)
    data = study_leaderboard(study=study, run=run)
    assert data["weighted"] is True and "sampling plan" in data["notes"][0]
    assisted = {r["chatbot"]: r for r in judge_assisted_scorecard(study=study, run=run)["rows"] if r["score"] == "amhart_score"}
    assert all(r["weighted"] for r in assisted.values())
    for method in ("human_only", "ppi", "ppi_tuned"):
        table = _table(data, "all", method)
        by = {s["chatbot"]: s["estimate"] for s in table["scores"]}
        if method != "ppi_tuned":  # the leaderboard's PPI++ keeps ppi_py's same-sample lambda (the page cross-fits)
            assert by == pytest.approx({bot: row[method]["estimate"] for bot, row in assisted.items()})
        # The bootstrap re-computes the same Hájek-weighted estimates from its weighted sums.
        pair = table["pairs"][0]
        assert (pair["estimate_a"], pair["estimate_b"]) == pytest.approx((by[pair["a"]], by[pair["b"]]))


def test_a_study_with_no_consensus_yet_shows_the_judges_alone_and_says_so(db, coordinator, clinician):
    from annotation.studies.services import study_create

    instrument = amhart()
    conversations = corpus(personas=2, repetitions=3)
    truth = amhart_truth(conversations, seed=4)
    run = judged_run(instrument, judges_for(instrument, ["e1", "e2"]), conversations, lambda j, c: truth[c.pk])
    study = study_create(name="Not yet rated", instrument=instrument, section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")],
                         raters_per_conversation=1)
    data = study_leaderboard(study=study, run=run)
    assert data["method_keys"] == ["judge_only"] and data["n_rated"] == 0
    assert any("No conversation of this run has a human consensus" in n for n in data["notes"])
    pair = _table(data, "all", "judge_only")["pairs"][0]
    assert pair["n_clusters"] == 6
    # Six persona x repetition cells: fewer than ten, so nothing is decided, and the page says why.
    assert pair["decision"] == "cannot_decide" and "only 6 persona × repetition cells" in pair["verdict"]
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/leaderboard/?run={run.pk}").content.decode()
    assert "cannot decide yet: only 6 persona × repetition cells" in page


def test_a_study_whose_judged_conversations_were_all_rated_opens_on_the_humans_only_comparison(vera, coordinator):
    # Judge-assisted estimates need judged conversations nobody rated: with none, the judges add
    # nothing and PPI cannot be estimated, so the page opens on what can (the demo study's case).
    study, rated, judge = vera["study"], vera["rated"], vera["judge"]
    instrument = study.instrument
    run = judged_run(instrument, judges_for(instrument, ["flow-c"]), rated, lambda j, c: judge[c.pk])
    data = study_leaderboard(study=study, run=run)
    assert all(s["estimate"] is None for s in _table(data, "all", "ppi")["scores"])
    assert data["headline"] == "human_only"
    page = client_for(coordinator).get(f"/reports/studies/{study.pk}/leaderboard/?run={run.pk}").content.decode()
    assert '<option value="human_only" selected>' in page

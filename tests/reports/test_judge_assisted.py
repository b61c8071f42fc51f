"""Judge-assisted scorecards: the page, API and CSV give the statistics package's PPI figures."""

from __future__ import annotations

import csv
import io
import random

import pytest

from annotation.sampling.selectors import PlanOptions
from annotation.sampling.services import study_create_from_plan
from judging.models import EnsembleLabel
from reports.judge_assisted.services import judge_assisted_scorecard
from stats import amhart_score
from stats.ppi import ppi_amhart_score, ppi_item_rate
from tests.conftest import client_for, make_user
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    chatbot_of,
    corpus,
    judged_run,
    judges_for,
    noisy,
    rate_all,
    rated_study,
)


@pytest.fixture
def judged(db, coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    """Two chatbots x 2 personas x 6 runs; three judges; humans rated 5 conversations of each chatbot.

    Judge errors are known: judge-c says "yes" to every item where the truth is "no" on BOT-B,
    so the ensemble is right wherever judges a and b agree with the truth.
    """
    instrument = amhart()
    conversations = corpus()
    truth = amhart_truth(conversations, seed=3, yes_rate={"BOT-A": 0.7, "BOT-B": 0.3})
    rng = random.Random(5)
    noise = {(name, c.pk): noisy(truth[c.pk], rng, 0.15) for name in ("judge-a", "judge-b", "judge-c") for c in conversations}
    judges = judges_for(instrument, ["judge-a", "judge-b", "judge-c"])
    run = judged_run(instrument, judges, conversations, lambda j, c: noise[(j.name, c.pk)])
    by_bot: dict[str, list] = {}
    for c in conversations:
        by_bot.setdefault(c.target.code, []).append(c)
    rated = [c for bot in sorted(by_bot) for c in by_bot[bot][:5]]
    study = rated_study(coordinator, [clinician, clinician2], rated, truth)
    return study, run, conversations, rated, truth


def _ensemble(run, conversation_id):  # type: ignore[no-untyped-def]
    return {
        key: label or None
        for key, label in EnsembleLabel.objects.filter(run=run, conversation_id=conversation_id).values_list("item_key", "label")
    }


def test_amhart_score_per_chatbot_is_the_ppi_of_the_statistics_package(judged):
    study, run, conversations, rated, truth = judged
    data = judge_assisted_scorecard(study=study, run=run)
    assert data["kind"] == "checklist" and data["weighted"] is False
    assert data["n_rated"] == 10 and data["n_judged"] == 24
    assert "simple random" in data["notes"][0]
    rated_ids = {c.pk for c in rated}
    for bot in ("BOT-A", "BOT-B"):
        mine = [c for c in conversations if c.target.code == bot]
        lab = [c for c in mine if c.pk in rated_ids]
        unl = [c for c in mine if c.pk not in rated_ids]
        expected = ppi_amhart_score(
            [list(truth[c.pk].values()) for c in lab],
            [list(_ensemble(run, c.pk).values()) for c in lab],
            [list(_ensemble(run, c.pk).values()) for c in unl],
            small_sample=True,  # the report's small-sample t intervals
        )
        row = next(r for r in data["rows"] if r["score"] == "amhart_score" and r["chatbot"] == chatbot_of(mine[0]))
        assert row["n_labeled"] == 5 and row["n_total"] == 12
        for method in ("ppi", "judge_only", "human_only"):
            assert row[method]["estimate"] == pytest.approx(getattr(expected, method).estimate)
            assert row[method]["low"] == pytest.approx(getattr(expected, method).low)
            assert row[method]["high"] == pytest.approx(getattr(expected, method).high)
        # The judges-only figure is the mean ensemble score of all 12 conversations.
        scores = [amhart_score(list(_ensemble(run, c.pk).values())).score for c in mine]
        assert row["judge_only"]["estimate"] == pytest.approx(sum(s for s in scores if s is not None) / len([s for s in scores if s is not None]))
        # PPI++ is there with its lambda, and the human-only estimate is the humans' mean score.
        assert 0 <= row["lam_tuned"] <= 1 and row["ppi_tuned"]["estimate"] is not None
        human_scores = [amhart_score(list(truth[c.pk].values())).score for c in lab]
        assert row["human_only"]["estimate"] == pytest.approx(sum(human_scores) / 5)


def test_item_rates_are_ratio_estimates_with_na_out_of_the_denominator(judged):
    study, run, conversations, rated, truth = judged
    data = judge_assisted_scorecard(study=study, run=run)
    keys = {r["score"] for r in data["rows"]}
    assert {f"item:{k}" for k in AMHART_KEYS} <= keys
    mine = [c for c in conversations if c.target.code == "BOT-A"]
    rated_ids = {c.pk for c in rated}
    lab = [c for c in mine if c.pk in rated_ids]
    unl = [c for c in mine if c.pk not in rated_ids]
    expected = ppi_item_rate(
        [truth[c.pk]["amhart_02"] for c in lab],
        [_ensemble(run, c.pk)["amhart_02"] for c in lab],
        [_ensemble(run, c.pk)["amhart_02"] for c in unl],
    )
    row = next(r for r in data["rows"] if r["score"] == "item:amhart_02" and r["chatbot"] == chatbot_of(mine[0]))
    assert row["ppi"]["estimate"] == pytest.approx(expected.ppi.estimate)
    assert row["ppi"]["std_error"] == pytest.approx(expected.ppi.std_error)
    # Items 13 and 14 are N/A for every human: no applicable conversation, the rate is undefined and says why.
    safety = next(r for r in data["rows"] if r["score"] == "item:amhart_13" and r["chatbot"] == chatbot_of(mine[0]))
    assert safety["error"] or safety["human_only"]["estimate"] is None


def test_an_items_humans_only_interval_is_wilsons_and_the_csv_and_methods_name_it(judged):
    from statsmodels.stats.proportion import proportion_confint

    from reports.judge_assisted.services import csv_rows

    study, run, conversations, rated, truth = judged
    data = judge_assisted_scorecard(study=study, run=run)
    wilson = [r for r in data["rows"] if r["score"].startswith("item:") and (r["human_only"] or {}).get("interval") == "wilson"]
    assert wilson  # five yes/no answers per chatbot and item: most items vary
    rated_ids = {c.pk for c in rated}
    for row in wilson:
        key = row["score"].split(":", 1)[1]
        # A rated conversation the ensemble left without a label (a tie) leaves the sample, as in stats.ppi.
        answers = [truth[c.pk][key] for c in conversations
                   if c.pk in rated_ids and chatbot_of(c) == row["chatbot"] and _ensemble(run, c.pk).get(key)]
        yes, applicable = answers.count("yes"), answers.count("yes") + answers.count("no")
        est = row["human_only"]
        assert est["estimate"] == pytest.approx(yes / applicable)
        assert (est["low"], est["high"]) == pytest.approx(proportion_confint(yes, applicable, method="wilson"), abs=1e-12)
    # The AMHART score (a mean of fractions) keeps the t interval; the PPI interval is a t interval throughout.
    assert {r["human_only"]["interval"] for r in data["rows"] if r["score"] == "amhart_score"} == {"t"}
    assert {r["ppi"]["interval"] for r in wilson if r["ppi"]["low"] is not None} == {"t"}
    lines = [line for line in csv_rows(data) if line[2] == "human_only" and line[1] == wilson[0]["score"]
             and line[0] == wilson[0]["chatbot"]]
    assert lines[0][10].startswith("Wilson score interval (n = ")
    methods = data["methods"]
    assert "Wilson score interval" in methods["text"] and "Wilson, 1927" in methods["text"]
    assert {"wilson1927", "brown2001"} <= {r["key"] for r in methods["references"]}
    assert "korn1998" not in {r["key"] for r in methods["references"]}  # no sampling plan: no effective sample size


def test_one_judge_can_be_the_source_and_an_unknown_source_is_refused(judged, researcher, coordinator):
    from judging.errors import JudgingError
    from judging.models import Judge

    study, run, *_ = judged
    judge = Judge.objects.get(name="judge-a")
    data = judge_assisted_scorecard(study=study, run=run, source_key=f"judge:{judge.pk}")
    assert data["source"] == {"key": f"judge:{judge.pk}", "name": "judge-a"}
    ensemble = judge_assisted_scorecard(study=study, run=run)
    first = lambda d: next(r for r in d["rows"] if r["score"] == "amhart_score")  # noqa: E731
    assert first(data)["judge_only"]["estimate"] != first(ensemble)["judge_only"]["estimate"]
    with pytest.raises(JudgingError):
        judge_assisted_scorecard(study=study, run=run, source_key="judge:999999")
    response = client_for(coordinator).get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}&source=judge:999999")
    assert response.status_code == 400 and "not a label source" in response.content.decode()


def test_a_sampling_plan_weights_the_rated_conversations_by_their_inclusion_probability(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=10)
    truth = amhart_truth(conversations, seed=11)
    rng = random.Random(2)
    # judge-c dissents on a third of the conversations (those get oversampled); judge-b errs
    # on a tenth of the labels, and the ensemble then follows judge-c or judge-a.
    split = {c.pk: i % 3 == 0 for i, c in enumerate(conversations)}

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        base = dict(truth[conversation.pk])
        if judge.name == "judge-b":
            base = noisy(base, rng, 0.1)
        if split[conversation.pk] and judge.name == "judge-c":
            base["amhart_01"] = "yes" if base["amhart_01"] == "no" else "no"
        return base

    judges = judges_for(instrument, ["judge-a", "judge-b", "judge-c"])
    run = judged_run(instrument, judges, conversations, labels)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=16, seed=7, boost=4.0),
        created_by=coordinator, name="Planned", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    links = list(study.study_conversations.all())
    rated = [link.conversation for link in links]
    rate_all(study, coordinator, [clinician], rated, truth)
    data = judge_assisted_scorecard(study=study, run=run)
    assert data["weighted"] is True and "sampling plan" in data["notes"][0]
    pi = {link.conversation_id: link.inclusion_prob for link in links}
    assert len(set(pi.values())) > 1  # flagged and unflagged conversations had different chances
    bot = conversations[0].target.code
    mine = [c for c in conversations if c.target.code == bot]
    lab = [c for c in mine if c.pk in pi]
    unl = [c for c in mine if c.pk not in pi]
    args = (
        [list(truth[c.pk].values()) for c in lab],
        [list(_ensemble(run, c.pk).values()) for c in lab],
        [list(_ensemble(run, c.pk).values()) for c in unl],
    )
    # Every judged conversation's π is kept with the plan: an unrated one counts 1/(1 - π) in PPI.
    units = {int(k): v for k, v in study.sampling_plan.planning["unit_inclusion_prob"].items()}
    assert all(units[c.pk] == pytest.approx(pi[c.pk]) for c in lab)
    weighted = ppi_amhart_score(*args, inclusion_prob=[pi[c.pk] for c in lab],
                                unlabeled_inclusion_prob=[units[c.pk] for c in unl], small_sample=True)
    row = next(r for r in data["rows"] if r["score"] == "amhart_score" and r["chatbot"] == chatbot_of(mine[0]))
    assert row["weighted"] is True and row["weights"].startswith("Hajek")
    assert row["ppi"]["estimate"] == pytest.approx(weighted.ppi.estimate)
    assert row["ppi"]["low"] == pytest.approx(weighted.ppi.low)
    assert row["human_only"]["estimate"] == pytest.approx(weighted.human_only.estimate)
    two_phase = ppi_amhart_score(*args, inclusion_prob=[pi[c.pk] for c in lab], judge_term="all")
    assert row["two_phase"]["estimate"] == pytest.approx(two_phase.ppi.estimate)
    unweighted = ppi_amhart_score(*args)
    assert row["ppi"]["estimate"] != pytest.approx(unweighted.ppi.estimate)
    # An item's humans-only yes-rate under the plan: Wilson's interval with the effective sample size, as stats.ppi.
    item = next(r for r in data["rows"] if r["score"] == "item:amhart_01" and r["chatbot"] == chatbot_of(mine[0]))
    expected = ppi_item_rate([truth[c.pk]["amhart_01"] for c in lab], [_ensemble(run, c.pk)["amhart_01"] for c in lab],
                             [_ensemble(run, c.pk)["amhart_01"] for c in unl], inclusion_prob=[pi[c.pk] for c in lab],
                             unlabeled_inclusion_prob=[units[c.pk] for c in unl], small_sample=True).human_only
    assert expected.interval == item["human_only"]["interval"] == "wilson_effective_n"
    assert (item["human_only"]["low"], item["human_only"]["high"]) == pytest.approx((expected.low, expected.high))
    assert {"korn1998", "franco2019"} <= {r["key"] for r in data["methods"]["references"]}
    # A plan stored before the full map was kept is rebuilt from its strata, to the same figures.
    plan = study.sampling_plan
    plan.planning = {k: v for k, v in plan.planning.items() if k != "unit_inclusion_prob"}
    plan.save(update_fields=["planning"])
    rebuilt = judge_assisted_scorecard(study=study, run=run)
    again = next(r for r in rebuilt["rows"] if r["score"] == "amhart_score" and r["chatbot"] == chatbot_of(mine[0]))
    assert again["ppi"]["estimate"] == pytest.approx(row["ppi"]["estimate"])


def test_without_enough_ratings_a_row_says_why_instead_of_guessing(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=3)
    truth = amhart_truth(conversations)
    run = judged_run(instrument, judges_for(instrument, ["j1", "j2"]), conversations, lambda j, c: truth[c.pk])
    study = rated_study(coordinator, [clinician], conversations[:1], truth)
    data = judge_assisted_scorecard(study=study, run=run)
    rows = [r for r in data["rows"] if r["score"] == "amhart_score"]
    assert all(not r["error"] and r["warning"] and "uncorrected" in r["warning"] for r in rows)
    for r in rows:
        assert r["judge_only"]["estimate"] is not None
        for method in ("ppi", "ppi_tuned", "human_only", "two_phase"):
            assert r[method]["low"] is None and r[method]["cannot_estimate"].startswith("cannot be estimated")
    one = next(r for r in rows if r["n_labeled"] == 1)
    assert "only 1 rated conversation" in one["ppi"]["cannot_estimate"]


def test_page_plot_api_and_csv_show_the_same_figures_to_readers_only(judged, coordinator, researcher, clinician, outsider):
    study, run, *_ = judged
    client = client_for(coordinator)
    page = client.get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Judge-assisted (PPI)" in body and "Humans only" in body and "Judges only" in body and "PPI++" in body
    assert "divided by n − 1" in body and "ppi_py" in body  # the small-sample t intervals, said on the page
    assert 'id="assisted-chart"' in body and "BOT-A" in body
    api = client.get(f"/api/v1/reports/studies/{study.pk}/judge-assisted/?run={run.pk}").json()
    direct = judge_assisted_scorecard(study=study, run=run)
    assert [r["ppi"] for r in api["rows"]] == [r["ppi"] for r in direct["rows"]]
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/judge-assisted.csv?run={run.pk}").content.decode())))
    assert len(rows) == 5 * len(direct["rows"])
    assert {r["method"] for r in rows} == {"judge_only", "human_only", "ppi", "ppi_tuned", "two_phase"}
    assert {r["ddof"] for r in rows if r["method"] == "ppi"} == {"1"}  # small-sample t intervals
    assert all("Prediction-powered inference (PPI)" == r["estimator"] for r in rows if r["method"] == "ppi")
    assert api["methods_used"]["ppi_tuned"]["name"].startswith("Power-tuned") and api["methods_used"]["ppi"]["ddof"] == 1
    ppi = next(r for r in rows if r["method"] == "ppi" and r["score"] == "amhart_score" and r["chatbot"].startswith("BOT-A"))
    row = next(r for r in direct["rows"] if r["score"] == "amhart_score" and r["chatbot"].startswith("BOT-A"))
    assert float(ppi["estimate"]) == pytest.approx(row["ppi"]["estimate"])
    # Another score shows its own table; an unknown score falls back to the first.
    assert "Yes-rate" in client.get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}&score=item:amhart_01").content.decode()
    assert client.get(f"/reports/studies/{study.pk}/judge-assisted/?score=nonsense").status_code == 200
    # A researcher who is not a member of the study, a rater and an outsider see nothing.
    for user in (researcher, clinician, outsider):
        assert client_for(user).get(f"/reports/studies/{study.pk}/judge-assisted/").status_code == 404
    assert client_for(researcher).get(f"/api/v1/reports/studies/{study.pk}/judge-assisted/").status_code == 404
    for user in (clinician, outsider):
        assert client_for(user).get(f"/api/v1/reports/studies/{study.pk}/judge-assisted/").status_code == 403
    assert client.get(f"/api/v1/reports/studies/{study.pk}/judge-assisted/?run=abc").status_code == 400


def test_a_run_that_judged_none_of_the_study_is_not_offered(judged, coordinator):
    study, run, *_ = judged
    instrument = amhart()
    other = corpus(chatbots=("BOT-Z",), personas=1, repetitions=2)
    unrelated = judged_run(instrument, judges_for(instrument, ["k1", "k2"]), other, lambda j, c: dict.fromkeys(AMHART_KEYS, "no"))
    assert client_for(coordinator).get(f"/reports/studies/{study.pk}/judge-assisted/?run={unrelated.pk}").status_code == 404


def test_study_without_consensus_says_so(db, coordinator, clinician):
    from annotation.studies.services import study_create

    instrument = amhart()
    conversations = corpus(repetitions=2)
    run = judged_run(instrument, judges_for(instrument, ["q1", "q2"]), conversations, lambda j, c: dict.fromkeys(AMHART_KEYS, "yes"))
    study = study_create(name="Empty", instrument=instrument, section=None, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1)
    data = judge_assisted_scorecard(study=study, run=run)
    assert "compute consensus" in data["no_ratings"] and "empty" not in data
    # The judges' figures are still there, marked uncorrected.
    row = next(r for r in data["rows"] if r["score"] == "amhart_score")
    assert row["judge_only"]["estimate"] == pytest.approx(1.0) and "uncorrected" in row["warning"]
    body = client_for(coordinator).get(f"/reports/studies/{study.pk}/judge-assisted/").content.decode()
    assert "compute consensus" in body and "uncorrected" in body


def test_researcher_member_reads_it(judged):
    from annotation.studies.services import study_add_member
    from core.roles import Role

    study, run, *_ = judged
    reader = make_user("rhea", Role.RESEARCHER)
    study_add_member(study=study, user=reader, role="researcher", actor=None)
    assert client_for(reader).get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}").status_code == 200


def test_question_flows_get_the_vera_mh_score_overall_and_per_dimension(db, coordinator, clinician):
    from pathlib import Path

    from annotation.consensus.services import study_compute_consensus
    from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
    from annotation.studies.services import study_create
    from corpus.instruments.services import instrument_import
    from stats.ppi import ppi_vera_mh_score

    rubric = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"
    instrument, _ = instrument_import(text=rubric.read_text(encoding="utf-8"), file=rubric.name, fmt="vera-mh")
    dimensions = list(dict.fromkeys(instrument.items.order_by("position").values_list("domain", flat=True)))
    assert len(dimensions) >= 2
    labels = ["Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant"]
    conversations = corpus(repetitions=5)  # 20
    rng = random.Random(9)
    truth = {c.pk: {d: rng.choice(labels) for d in dimensions} for c in conversations}
    judged = {c.pk: {d: (rng.choice(labels) if rng.random() < 0.2 else truth[c.pk][d]) for d in dimensions} for c in conversations}
    run = judged_run(instrument, judges_for(instrument, ["flow-a", "flow-b"]), conversations, lambda j, c: judged[c.pk])
    rated = [c for i, c in enumerate(conversations) if i % 2 == 0]
    study = study_create(name="Flow validation", instrument=instrument, section=None, conversation_ids=[c.pk for c in rated],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1)
    for c in rated:
        assignment = Assignment.objects.create(study=study, conversation=c, rater=clinician, status=AssignmentStatus.SUBMITTED)
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, derived={"labels": truth[c.pk]})
    study_compute_consensus(study=study, actor=coordinator)
    data = judge_assisted_scorecard(study=study, run=run)
    assert data["kind"] == "vera-mh"
    assert {r["score"] for r in data["rows"]} == {"vera_mh_score", *[f"dimension:{d}" for d in dimensions]}
    bot = conversations[0].target.code
    mine = [c for c in conversations if c.target.code == bot]
    lab = [c for c in mine if c in rated]
    unl = [c for c in mine if c not in rated]
    ensemble = {c.pk: _ensemble(run, c.pk) for c in mine}
    expected = ppi_vera_mh_score([list(truth[c.pk].values()) for c in lab], [list(ensemble[c.pk].values()) for c in lab],
                                 [list(ensemble[c.pk].values()) for c in unl])
    row = next(r for r in data["rows"] if r["score"] == "vera_mh_score" and r["chatbot"] == chatbot_of(mine[0]))
    assert row["scale"] == "points" and row["ppi"]["estimate"] == pytest.approx(expected.ppi.estimate)
    dim = dimensions[0]
    one = ppi_vera_mh_score([truth[c.pk][dim] for c in lab], [ensemble[c.pk][dim] for c in lab], [ensemble[c.pk][dim] for c in unl])
    row = next(r for r in data["rows"] if r["score"] == f"dimension:{dim}" and r["chatbot"] == chatbot_of(mine[0]))
    assert row["ppi"]["estimate"] == pytest.approx(one.ppi.estimate) if one.ppi.estimate is not None else row["ppi"]["estimate"] is None
    # A plan for a flow run plans the VERA-MH overall score.
    from annotation.sampling.selectors import PlanOptions, plan_preview

    preview = plan_preview(run, None, PlanOptions(method="simple_random", n=10, seed=1))
    assert "VERA-MH" in preview.what and preview.pooled.ppi_width > 0


def test_intervals_are_shown_within_the_scores_bounds_but_kept_raw_in_the_data():
    from reports.judge_assisted.views import plot_data
    from reports.templatetags.score_format import interval, score

    assert interval({"low": -0.08, "high": 0.38}, "share") == "[0.0%, 38.0%]"
    assert interval({"low": 0.647, "high": 1.073}, "share") == "[64.7%, 100.0%]"
    assert interval({"low": 92.0, "high": 104.5}, "points") == "[92.0, 100.0]"
    assert interval(None, "share") == "—" and score(None) == "—"
    est = {"estimate": 0.15, "low": -0.08, "high": 0.38}
    data = {"method_labels": {"judge_only": "J", "human_only": "H", "ppi": "P", "ppi_tuned": "T"},
            "rows": [{"score": "s", "chatbot": "bot", "scale": "share", "ppi": est, "human_only": est,
                      "judge_only": None, "ppi_tuned": None}]}
    traces = plot_data(data, "s")["traces"]
    ppi = traces[2]
    assert ppi["error_x"]["arrayminus"] == [pytest.approx(0.15)] and ppi["error_x"]["array"] == [pytest.approx(0.23)]
    assert traces[0]["x"] == []  # no judges-only estimate: nothing drawn, nothing invented


def test_a_plan_half_rated_says_how_many_conversations_wait_for_a_consensus(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=6)
    truth = amhart_truth(conversations, seed=5)
    run = judged_run(instrument, judges_for(instrument, ["h1", "h2"]), conversations, lambda j, c: truth[c.pk])
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="stratified", n=12, seed=2), created_by=coordinator,
        name="Half", rater_title="", description="", section=None, coordinators=[coordinator], raters=[(clinician, "clinician")],
        raters_per_conversation=1,
    )
    picked = [link.conversation for link in study.study_conversations.order_by("conversation_id")]
    rate_all(study, coordinator, [clinician], picked[:8], truth)
    data = judge_assisted_scorecard(study=study, run=run)
    assert data["weighted"] is True and "4 of the plan's 12 conversations have no consensus yet" in data["notes"][0]


def test_a_chatbot_nobody_rated_shows_judges_only_with_an_uncorrected_warning(db, coordinator, clinician):
    instrument = amhart()
    conversations = corpus(repetitions=4)
    truth = amhart_truth(conversations, seed=4)
    run = judged_run(instrument, judges_for(instrument, ["u1", "u2"]), conversations, lambda j, c: truth[c.pk])
    bot_a = [c for c in conversations if c.target.code == "BOT-A"]
    bot_b = [c for c in conversations if c.target.code == "BOT-B"]
    study = rated_study(coordinator, [clinician], bot_a[:5], truth)
    data = judge_assisted_scorecard(study=study, run=run)
    row = next(r for r in data["rows"] if r["score"] == "amhart_score" and r["chatbot"] == chatbot_of(bot_b[0]))
    assert row["n_labeled"] == 0 and row["n_total"] == len(bot_b)
    scores = [amhart_score(list(truth[c.pk].values())).score for c in bot_b]
    assert row["judge_only"]["estimate"] == pytest.approx(sum(scores) / len(scores))
    assert row["judge_only"]["low"] is not None
    assert "uncorrected" in row["warning"] and "no clinician rated any" in row["warning"]
    assert row["human_only"]["estimate"] is None and "no clinician rated" in row["ppi"]["cannot_estimate"]
    client = client_for(coordinator)
    api = client.get(f"/api/v1/reports/studies/{study.pk}/judge-assisted/?run={run.pk}").json()
    api_row = next(r for r in api["rows"] if r["score"] == "amhart_score" and r["chatbot"] == row["chatbot"])
    assert api_row["warning"] == row["warning"] and api_row["judge_only"]["estimate"] == row["judge_only"]["estimate"]
    body = client.get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}").content.decode()
    assert "Judges only, uncorrected" in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/judge-assisted.csv?run={run.pk}").content.decode())))
    judge_b = next(r for r in rows if r["method"] == "judge_only" and r["score"] == "amhart_score" and r["chatbot"] == row["chatbot"])
    assert float(judge_b["estimate"]) == pytest.approx(row["judge_only"]["estimate"]) and "uncorrected" in judge_b["warning"]
    ppi_b = next(r for r in rows if r["method"] == "ppi" and r["score"] == "amhart_score" and r["chatbot"] == row["chatbot"])
    assert ppi_b["estimate"] == "" and ppi_b["cannot_estimate"].startswith("cannot be estimated")


def test_rated_conversations_all_alike_say_cannot_be_estimated_instead_of_a_point_interval(db, coordinator, clinician):
    from reports.judge_assisted.views import plot_data

    instrument = amhart()
    conversations = corpus(repetitions=6)
    truth = {c.pk: {k: ("N/A" if k in ("amhart_13", "amhart_14") else "yes") for k in AMHART_KEYS} for c in conversations}
    rng = random.Random(3)
    # The judges miss some yes's; every conversation the clinicians rated is all yes (score 1).
    judged = {c.pk: noisy(truth[c.pk], rng, 0.1, alphabet=("yes", "no")) for c in conversations}
    run = judged_run(instrument, judges_for(instrument, ["s1", "s2"]), conversations, lambda j, c: judged[c.pk])
    bot_a = [c for c in conversations if c.target.code == "BOT-A"]
    study = rated_study(coordinator, [clinician], bot_a[:8], truth)
    data = judge_assisted_scorecard(study=study, run=run)
    row = next(r for r in data["rows"] if r["score"] == "amhart_score" and r["chatbot"] == chatbot_of(bot_a[0]))
    assert row["n_labeled"] == 8
    for method in ("human_only", "ppi", "ppi_tuned"):
        est = row[method]
        assert est["low"] is None and est["high"] is None and est["std_error"] is None
        assert est["cannot_estimate"].startswith("cannot be estimated: the clinicians' scores are the same on all 8")
    assert row["human_only"]["estimate"] == pytest.approx(1.0)  # the mean itself is known
    assert row["judge_only"]["low"] is not None
    # Not drawn: the plot has no point for an interval that cannot be estimated.
    plot = plot_data(data, "amhart_score")
    ppi_trace = plot["traces"][2]
    assert len(ppi_trace["x"]) == 0 and plot["not_drawn"]
    client = client_for(coordinator)
    body = client.get(f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}").content.decode()
    assert "cannot be estimated: the clinicians" in body and "[100.0%, 100.0%]" not in body
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/studies/{study.pk}/judge-assisted.csv?run={run.pk}").content.decode())))
    human = next(r for r in rows if r["method"] == "human_only" and r["score"] == "amhart_score" and r["chatbot"] == row["chatbot"])
    assert human["ci_low"] == "" and human["cannot_estimate"].startswith("cannot be estimated")

"""Sampling plans: a validation study drawn from a judge run, with every inclusion probability."""

from __future__ import annotations

import csv
import io
import random

import pytest

from annotation.errors import AnnotationError
from annotation.models import SamplingPlan, StudyEvent
from annotation.sampling.selectors import (
    PlanOptions,
    plan_population,
    plan_preview,
    previous_disagreement,
)
from annotation.sampling.services import study_create_from_plan
from judging.sources import label_source_get
from tests.conftest import client_for
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    rated_study,
)


@pytest.fixture
def run(db):  # type: ignore[no-untyped-def]
    """3 chatbots x 2 personas x 8 runs judged by three judges; they split on every fourth conversation."""
    instrument = amhart()
    conversations = corpus(chatbots=("BOT-A", "BOT-B", "BOT-C"), personas=2, repetitions=8)
    truth = amhart_truth(conversations, seed=4)
    split = {c.pk for i, c in enumerate(conversations) if i % 4 == 0}

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        out = dict(truth[conversation.pk])
        if judge.name == "judge-c" and conversation.pk in split:
            out["amhart_03"] = "yes" if out["amhart_03"] == "no" else "no"
        return out

    judged = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, labels)
    judged.split = split  # type: ignore[attr-defined]
    judged.truth = truth  # type: ignore[attr-defined]
    return judged


def _create(run, coordinator, clinician, **options):  # type: ignore[no-untyped-def]
    return study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(**options), created_by=coordinator, name="Planned",
        rater_title="", description="", section=None, coordinators=[coordinator], raters=[(clinician, "clinician")],
    )


def test_population_flags_the_conversations_where_the_judges_split(run):
    population = plan_population(run, label_source_get(run, None))
    assert len(population.units) == 48
    assert {u.id for u in population.units if u.flagged} == run.split
    assert population.instrument == "amhart"


def test_simple_random_plan_gives_every_conversation_n_over_N(run):
    preview = plan_preview(run, None, PlanOptions(method="simple_random", n=12, seed=1))
    assert len(preview.plan.selected) == 12
    assert all(p == pytest.approx(12 / 48) for p in preview.plan.inclusion_prob.values())
    assert preview.pooled.expected_rated == pytest.approx(12)


def test_stratified_plan_covers_every_chatbot_and_persona(run):
    preview = plan_preview(run, None, PlanOptions(method="stratified", n=12, seed=1))
    assert len(preview.strata) == 6 and all(s["sample_size"] == 2 for s in preview.strata)
    assert {s["key"].split(" | ")[0] for s in preview.strata} == {"BOT-A · vendor/bot-a-model", "BOT-B · vendor/bot-b-model", "BOT-C · vendor/bot-c-model"}
    assert all(w.expected_rated == pytest.approx(4) for w in preview.per_chatbot)
    with pytest.raises(AnnotationError, match="every stratum needs at least one"):
        plan_preview(run, None, PlanOptions(method="stratified", n=5, seed=1))


def test_oversampling_makes_disagreements_about_boost_times_likelier(run):
    preview = plan_preview(run, None, PlanOptions(method="oversample", n=18, seed=1, boost=3.0))
    pi = preview.plan.inclusion_prob
    flagged = [pi[c] for c in run.split]
    other = [p for c, p in pi.items() if c not in run.split]
    assert min(flagged) > max(other)
    assert sum(flagged) / len(flagged) / (sum(other) / len(other)) == pytest.approx(3.0, rel=0.35)
    assert preview.population.n_flagged == 12
    assert any("judges disagreed" in s["key"] for s in preview.strata)


def test_oversampling_needs_disagreement(db):
    instrument = amhart()
    conversations = corpus(repetitions=3)
    single = judged_run(instrument, judges_for(instrument, ["solo"]), conversations, lambda j, c: dict.fromkeys(AMHART_KEYS, "no"))
    with pytest.raises(AnnotationError, match="no conversation of this run has a label where the judges disagreed"):
        plan_preview(single, None, PlanOptions(method="oversample", n=4, seed=1))


def test_the_disagreement_threshold_picks_the_most_disputed_conversations(db):
    instrument = amhart()
    conversations = corpus(repetitions=6)  # 24
    # judge-c dissents on one item everywhere, and on three items in every sixth conversation.
    many = {c.pk for i, c in enumerate(conversations) if i % 6 == 0}

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        out = dict.fromkeys(AMHART_KEYS, "no")
        if judge.name == "judge-c":
            for key in (AMHART_KEYS[:3] if conversation.pk in many else AMHART_KEYS[:1]):
                out[key] = "yes"
        return out

    run = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, labels)
    with pytest.raises(AnnotationError, match="nothing to oversample: raise the threshold"):
        plan_preview(run, None, PlanOptions(method="oversample", n=8, seed=1))
    preview = plan_preview(run, None, PlanOptions(method="oversample", n=8, seed=1, min_split=2))
    assert {u.id for u in preview.population.units if u.flagged} == many
    assert dict(preview.population.split_histogram()) == {"none": 0, "1": 20, "2": 0, "3 or more": 4}
    assert preview.as_dict()["disagreement_threshold"] == 2
    with pytest.raises(AnnotationError, match="lower the threshold"):
        plan_preview(run, None, PlanOptions(method="oversample", n=8, seed=1, min_split=4))


def test_expected_width_shrinks_with_more_ratings_and_beats_humans_alone_when_judges_are_good(run):
    preview = plan_preview(run, None, PlanOptions(method="simple_random", n=25, seed=1, d_agree=0.05, d_split=0.2))
    widths = [g["ppi_width"] for g in preview.grid]
    assert [g["n"] for g in preview.grid] == [25]  # 48 conversations: only n=25 fits the grid (and the choice)
    small = plan_preview(run, None, PlanOptions(method="simple_random", n=10, seed=1, d_agree=0.05, d_split=0.2))
    # PPI++ shrinks with more ratings and never loses to humans alone.
    assert small.pooled.tuned_width > preview.pooled.tuned_width
    assert preview.pooled.tuned_width <= preview.pooled.human_only_width
    assert small.pooled.ppi_width < small.pooled.human_only_width and small.pooled.effective_n > 10
    # PPI (λ = 1) on a pool of 48: rating 25 leaves 23 for the judge term, whose variance var/23 then
    # outweighs what the ratings add; the page says so.
    assert small.pooled.ppi_width < preview.pooled.ppi_width
    worse = plan_preview(run, None, PlanOptions(method="simple_random", n=10, seed=1, d_agree=0.4, d_split=0.6))
    assert worse.pooled.ppi_width > small.pooled.ppi_width
    assert widths


def test_creating_the_study_records_each_inclusion_probability_the_plan_and_the_audit(run, coordinator, clinician):
    study = _create(run, coordinator, clinician, method="oversample", n=18, seed=5, boost=3.0)
    plan = SamplingPlan.objects.get(study=study)
    assert (plan.method, plan.n, plan.population, plan.seed, plan.judge_run_id) == ("oversample", 18, 48, 5, run.pk)
    assert plan.planning["expected_width"]["ppi_width"] > 0
    links = list(study.study_conversations.all())
    assert len(links) == 18 and all(0 < link.inclusion_prob <= 1 and link.stratum for link in links)
    assert study.instrument_id == run.instrument_id
    assert study.selection["method"] == "sampling_plan" and study.selection["seed"] == 5
    event = StudyEvent.objects.get(study=study, action="sampling_plan")
    assert "18 of 48" in event.details["summary"]
    # The same seed draws the same conversations.
    again = _create(run, coordinator, clinician, method="oversample", n=18, seed=5, boost=3.0)
    assert set(again.study_conversations.values_list("conversation_id", flat=True)) == {link.conversation_id for link in links}


def test_without_a_seed_one_is_drawn_and_recorded(run, coordinator, clinician):
    study = _create(run, coordinator, clinician, method="simple_random", n=6)
    assert study.sampling_plan.seed is not None and study.selection["seed"] == study.sampling_plan.seed


def test_earlier_human_consensus_suggests_the_planning_values(run, coordinator, clinician):
    from annotation.models import Study
    from corpus.models import Conversation

    conversations = list(Conversation.objects.filter(judge_results__run=run).distinct().order_by("pk")[:16])
    rated_study(coordinator, [clinician], conversations, run.truth)
    earlier = previous_disagreement(plan_population(run, label_source_get(run, None)), Study.objects.all())
    assert earlier.n_agree + earlier.n_split == 16 * 14
    assert earlier.d_agree == 0  # the ensemble equals the truth here
    assert earlier.studies == ("Validation",)


def test_page_previews_the_plan_and_creates_the_study(run, coordinator, clinician):
    client = client_for(coordinator)
    page = client.get(f"/studies/new/from-run/?run={run.pk}")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Expected 95% interval of the AMHART score" in body and "Judge-assisted (PPI)" in body and "BOT-B" in body
    partial = client.get("/studies/new/from-run/preview/", {"run": run.pk, "method": "oversample", "plan_size": 18, "boost": 3,
                                                            "d_agree": 15, "d_split": 40, "allocation": "proportional"})
    assert partial.status_code == 200 and "judges disagreed" in partial.content.decode()
    bad = client.get("/studies/new/from-run/preview/", {"run": run.pk, "method": "stratified", "plan_size": 3, "d_agree": 15, "d_split": 40})
    assert "every stratum needs at least one" in bad.content.decode()
    response = client.post("/studies/new/from-run/", {
        "run": run.pk, "source": "", "method": "stratified", "plan_size": 12, "allocation": "proportional", "boost": 3,
        "plan_seed": 9, "d_agree": 15, "d_split": 40, "name": "Planned validation", "rater_title": "",
        "description": "", "section": "", f"rater_{clinician.pk}": "on", f"label_{clinician.pk}": "clinician",
        "raters_per_conversation": 1, "composition": "", "tie_policy": "adjudication", "senior_rater": "", "calibration": "",
    })
    assert response.status_code == 302, response.content.decode()[:3000]
    plan = SamplingPlan.objects.get(study__name="Planned validation")
    assert plan.seed == 9 and plan.method == "stratified"
    detail = client.get(response["Location"]).content.decode()
    assert "Stratified by chatbot and persona" in detail and "sampling-plan.csv" in detail
    rows = list(csv.DictReader(io.StringIO(client.get(f"/studies/{plan.study_id}/sampling-plan.csv").content.decode())))
    assert len(rows) == 12 and all(float(r["inclusion_prob"]) == pytest.approx(2 / 8) for r in rows)
    assert all(float(r["weight"]) == pytest.approx(4) for r in rows)


def test_page_keeps_the_input_and_says_what_is_wrong(run, coordinator, clinician):
    response = client_for(coordinator).post("/studies/new/from-run/", {
        "run": run.pk, "method": "stratified", "plan_size": 3, "d_agree": 15, "d_split": 40, "name": "Too small",
        f"rater_{clinician.pk}": "on", f"label_{clinician.pk}": "clinician", "raters_per_conversation": 1,
        "tie_policy": "adjudication",
    })
    assert response.status_code == 400
    body = response.content.decode()
    assert "every stratum needs at least one" in body and 'value="Too small"' in body
    assert not SamplingPlan.objects.exists()


def test_only_coordinators_and_admins_build_planned_studies(run, researcher, clinician, outsider, admin_user):
    for user in (researcher, clinician, outsider):
        assert client_for(user).get(f"/studies/new/from-run/?run={run.pk}").status_code == 404
        assert client_for(user).get("/studies/new/from-run/preview/", {"run": run.pk}).status_code == 404
    assert client_for(admin_user).get(f"/studies/new/from-run/?run={run.pk}").status_code == 200


def test_api_previews_creates_and_reads_plans(run, coordinator, clinician, researcher, outsider):
    client = client_for(coordinator)
    preview = client.get("/api/v1/sampling-plans/preview/", {"run": run.pk, "method": "oversample", "plan_size": 18}).json()
    assert preview["population"] == 48 and preview["n_flagged"] == 12 and preview["expected_width"]["ppi_width"] > 0
    assert client.get("/api/v1/sampling-plans/preview/", {"method": "oversample"}).status_code == 400
    created = client.post("/api/v1/sampling-plans/", {
        "name": "API planned", "raters": [{"user": clinician.pk, "label": "clinician"}], "raters_per_conversation": 1,
        "plan": {"run": run.pk, "method": "simple_random", "plan_size": 10, "plan_seed": 3},
    }, content_type="application/json")
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["sampling_plan"]["n"] == 10 and data["sampling_plan"]["seed"] == 3
    study_id = data["study"]["id"]
    plan = client.get(f"/api/v1/studies/{study_id}/sampling-plan/").json()
    assert len(plan["conversations"]) == 10 and all(c["inclusion_prob"] == pytest.approx(10 / 48) for c in plan["conversations"])
    refused = client.post("/api/v1/sampling-plans/", {"name": "x", "raters": [{"user": clinician.pk, "label": "c"}],
                                                      "plan": {"run": run.pk, "method": "oversample", "plan_size": 1}},
                          content_type="application/json")
    assert refused.status_code == 400
    for user in (researcher, clinician, outsider):
        assert client_for(user).get("/api/v1/sampling-plans/preview/", {"run": run.pk}).status_code == 403
    for user in (clinician, outsider):
        assert client_for(user).get(f"/api/v1/studies/{study_id}/sampling-plan/").status_code == 403
    assert client_for(researcher).get(f"/api/v1/studies/{study_id}/sampling-plan/").status_code == 404


def test_plan_preview_reads_a_fixed_number_of_queries(run, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        plan_preview(run, None, PlanOptions(method="stratified", n=12, seed=1))


def test_random_plans_are_reproducible(run):
    a = plan_preview(run, None, PlanOptions(method="simple_random", n=10, seed=random.Random(1).randint(0, 99)))
    b = plan_preview(run, None, PlanOptions(method="simple_random", n=10, seed=a.options.seed))
    assert a.plan.selected == b.plan.selected


def test_preview_says_cannot_be_estimated_where_the_judges_scores_do_not_vary(db, coordinator):
    # Every conversation gets the same labels from every judge: no spread to plan a humans-only
    # interval with. The page says so in words instead of "± 0.000" and a dash.
    instrument = amhart()
    conversations = corpus(repetitions=4)
    same = {k: ("N/A" if k in ("amhart_13", "amhart_14") else "yes") for k in AMHART_KEYS}
    flat = judged_run(instrument, judges_for(instrument, ["f1", "f2"]), conversations, lambda j, c: dict(same))
    preview = plan_preview(flat, None, PlanOptions(method="simple_random", n=8, seed=1))
    assert preview.pooled.human_only_width is None and preview.pooled.effective_n is None
    assert preview.pooled.note.startswith("cannot be estimated: the judges give every one")
    body = client_for(coordinator).get("/studies/new/from-run/preview/", {
        "run": flat.pk, "method": "simple_random", "plan_size": 8, "d_agree": 15, "d_split": 40, "allocation": "proportional",
    }).content.decode()
    assert "cannot be estimated" in body and "± 0.000" not in body
    assert "the judges give every one of these conversations the same score" in body

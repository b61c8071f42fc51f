"""Active sampling for human review: a study that grows batch by batch from a judge run.

Data written for these tests: two chatbots x two personas x 25 conversations judged by three
judges. On every fourth conversation (the "hard" ones) two judges flip two items, so the
ensemble is wrong there and the judges split; elsewhere all three agree with the truth, which
the clinicians give. The uncertainty (the share of split labels) then points at the judges'
errors, which is what active sampling exploits.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.errors import AnnotationError
from annotation.models import ActiveBatch, ActivePlan, ActiveUnit, Assignment, StudyEvent
from annotation.sampling.active.population import active_population
from annotation.sampling.active.selectors import active_state
from annotation.sampling.active.services import (
    ActiveOptions,
    active_batch_draw,
    active_study_create,
)
from annotation.studies.services import study_add_member
from judging.models import JudgeRun, RunStatus
from stats.scores import amhart_score
from tests.conftest import client_for
from tests.support.judged import (
    AMHART_KEYS,
    amhart,
    amhart_truth,
    corpus,
    judged_run,
    judges_for,
    rate,
)

FLIPPED = ("amhart_03", "amhart_05")


@pytest.fixture
def run(db):  # type: ignore[no-untyped-def]
    instrument = amhart()
    conversations = corpus(chatbots=("BOT-A", "BOT-B"), personas=2, repetitions=25)
    truth = amhart_truth(conversations, seed=5)
    hard = {c.pk for i, c in enumerate(conversations) if i % 4 == 0}

    def labels(judge, conversation):  # type: ignore[no-untyped-def]
        out = dict(truth[conversation.pk])
        if judge.name != "judge-a" and conversation.pk in hard:
            for key in FLIPPED:
                out[key] = "yes" if out[key] == "no" else "no"
        return out

    judged = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, labels)
    judged.hard = hard  # type: ignore[attr-defined]
    judged.truth = truth  # type: ignore[attr-defined]
    judged.conversations = {c.pk: c for c in conversations}  # type: ignore[attr-defined]
    return judged


def _create(run, coordinator, raters, **options):  # type: ignore[no-untyped-def]
    defaults = {"budget": 40, "batch_size": 10, "target_width": 0.1, "seed": 3}
    return active_study_create(
        run=run, source_key=None, options=ActiveOptions(**{**defaults, **options}), created_by=coordinator,
        name="Active validation", rater_title="", section=None, coordinators=[coordinator],
        raters=[(r, "clinician") for r in raters], raters_per_conversation=1,
    )


def _rate_drawn(study, run, coordinator, rater):  # type: ignore[no-untyped-def]
    """The rater answers every drawn conversation with the truth; the coordinator computes the consensus."""
    from annotation.consensus.services import study_compute_consensus

    for i, cid in enumerate(study.study_conversations.values_list("conversation_id", flat=True)):
        rate(study, run.conversations[cid], rater, run.truth[cid], position=i)
    study_compute_consensus(study=study, actor=coordinator)


def test_uncertainty_is_the_share_of_split_labels_or_the_spread_of_the_judges_scores(run):
    population = active_population(run, None, "disagreement", d_agree=0.15, d_split=0.4)
    index = population.index()
    assert len(population.ids) == 100
    for cid in population.ids:
        expected = len(FLIPPED) / len(AMHART_KEYS) if cid in run.hard else 0.0
        assert population.uncertainty[index[cid]] == pytest.approx(expected)
    # Spread: judge-a gives score s, judges b and c the flipped score s'; sd of (s, s', s') = |s - s'| sqrt(2) / 3
    # (zero where one flip goes yes -> no and the other no -> yes: the scores then agree).
    spread = active_population(run, None, "spread", d_agree=0.15, d_split=0.4)
    for cid in population.ids:
        truth = run.truth[cid]
        flipped = {**truth, **{k: ("yes" if truth[k] == "no" else "no") for k in FLIPPED}} if cid in run.hard else truth
        s, s2 = (amhart_score(labels.values()).score for labels in (truth, flipped))
        assert spread.uncertainty[index[cid]] == pytest.approx(abs(s - s2) * 2**0.5 / 3)
    assert max(spread.uncertainty) > 0


def test_one_judge_or_an_unfinished_run_is_refused(db, run):
    instrument = amhart()
    conversations = corpus(chatbots=("SOLO",), repetitions=3)
    single = judged_run(instrument, judges_for(instrument, ["solo"]), conversations, lambda j, c: dict.fromkeys(AMHART_KEYS, "no"))
    with pytest.raises(AnnotationError, match="two or more judges"):
        active_population(single, None, "disagreement", d_agree=0.15, d_split=0.4)
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    run.refresh_from_db()
    with pytest.raises(AnnotationError, match="wait until the run has finished"):
        active_population(run, None, "disagreement", d_agree=0.15, d_split=0.4)


def test_creating_the_study_draws_batch_one_with_every_probability_recorded_and_assigns_it(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], floor=0.2)
    plan = ActivePlan.objects.get(study=study)
    assert (plan.population, plan.visit_size, plan.budget, plan.batch_size, plan.seed) == (100, 25, 40, 10, 3)
    assert sorted(plan.order) == sorted(run.conversations)
    batch = ActiveBatch.objects.get(plan=plan, number=1)
    units = list(ActiveUnit.objects.filter(batch=batch))
    assert len(units) == 25 == batch.n_visited
    assert [u.conversation_id for u in units] == plan.order[:25]
    assert sum(u.inclusion_prob for u in units) == pytest.approx(10) == batch.expected  # the batch's share of the budget
    assert min(u.inclusion_prob for u in units) >= 0.2 * 10 / 25 - 1e-12  # the floor: tau >= 0.2 of the average chance
    hard = [u.inclusion_prob for u in units if u.conversation_id in run.hard]
    easy = [u.inclusion_prob for u in units if u.conversation_id not in run.hard]
    assert hard and easy and min(hard) > max(easy)  # the judges' uncertainty raises the chance
    chosen = {u.conversation_id: u.inclusion_prob for u in units if u.selected}
    assert batch.n_selected == len(chosen) > 0
    links = {link.conversation_id: link for link in study.study_conversations.all()}
    assert set(links) == set(chosen)
    assert all(links[c].inclusion_prob == pytest.approx(p) and links[c].stratum == "active batch 1" for c, p in chosen.items())
    # Assigned through the study's assignment machinery: one rater per conversation, in the rater's queue.
    assert sorted(Assignment.objects.filter(study=study).values_list("conversation_id", flat=True)) == sorted(chosen)
    actions = list(StudyEvent.objects.filter(study=study).values_list("action", flat=True))
    assert {"study_created", "active_sampling", "active_batch", "assigned"} <= set(actions)


def test_the_same_seed_draws_the_same_batches(run, coordinator, clinician):
    a = _create(run, coordinator, [clinician], seed=11)
    b = _create(run, coordinator, [clinician], seed=11)
    draws = lambda s: list(ActiveUnit.objects.filter(batch__plan__study=s).values_list("conversation_id", "inclusion_prob", "selected"))  # noqa: E731
    assert draws(a) == draws(b)


def test_the_next_batch_continues_the_order_uses_only_complete_batches_and_tunes_tau(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=60, batch_size=30, floor=0.1)
    state = active_state(study.active_plan)
    assert not state.batches[0].complete and state.pooled.estimate.n_visited == 0  # nothing rated yet: no estimate
    assert state.pooled.expected_next is not None  # ...but the width expected after batch 2 is planned
    _rate_drawn(study, run, coordinator, clinician)
    state = active_state(study.active_plan)
    assert state.batches[0].complete and state.pooled.estimate.n_visited == 50
    assert state.pooled.estimate.n_rated == state.batches[0].batch.n_selected
    first_tau = state.batches[0].batch.tau
    assert first_tau == pytest.approx(0.5)  # the authors' starting mix, before any rating
    assert state.next_batch is not None and state.next_batch.tuned_on == state.n_rated >= 20
    assert 0.1 <= state.next_batch.tau <= 1
    batch = active_batch_draw(study=study, actor=coordinator)
    assert batch.number == 2 and batch.tuned_on == state.n_rated and batch.tau == pytest.approx(state.next_batch.tau)
    positions = list(ActiveUnit.objects.filter(batch=batch).values_list("position", flat=True))
    assert positions == list(range(50, 100))
    assert batch.width_before == pytest.approx(max(g.estimate.width for g in state.groups))
    # Batch 2 is being rated: the estimate still rests on batch 1 only.
    after = active_state(study.active_plan)
    assert not after.batches[1].complete and after.pooled.estimate.n_visited == 50
    assert [h["batch"] for h in after.history] == [1]


def test_the_estimate_corrects_the_judges_where_they_were_wrong(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=100, batch_size=100)
    _rate_drawn(study, run, coordinator, clinician)  # every conversation visited and rated (π = 1)
    state = active_state(study.active_plan)
    truth = sum(amhart_score(labels.values()).score for labels in run.truth.values()) / 100
    assert state.pooled.estimate.estimate == pytest.approx(truth)  # a census: the clinicians' mean exactly
    assert state.pooled.estimate.judge_only != pytest.approx(truth)


def test_budget_spent_or_every_conversation_visited_stops_the_batches(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=10, batch_size=10)  # batch 1 visits all 100
    state = active_state(study.active_plan)
    assert state.status == "all_visited" and state.next_batch is None and not state.can_draw
    with pytest.raises(AnnotationError, match="Every conversation of the run has been visited") as refused:
        active_batch_draw(study=study, actor=coordinator)
    assert refused.value.status == 409
    # Batch 1 of 20 ratings in batches of 10 visits half the run; had it drawn the whole budget, no batch 2.
    spent = _create(run, coordinator, [clinician], budget=20, batch_size=10, seed=8)
    drawn = spent.active_plan.batches.get().n_selected
    assert drawn > 0 and active_state(spent.active_plan).status == "sampling"
    ActivePlan.objects.filter(study=spent).update(budget=drawn)
    state = active_state(ActivePlan.objects.get(study=spent))
    assert state.status == "budget_spent" and f"budget of {drawn} ratings is spent" in state.status_text
    with pytest.raises(AnnotationError, match="is spent"):
        active_batch_draw(study=spent, actor=coordinator)


def test_reaching_the_target_width_stops_asking(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=80, batch_size=40, target_width=0.9, seed=4)
    _rate_drawn(study, run, coordinator, clinician)
    state = active_state(study.active_plan)
    assert state.status == "sampling"  # fewer than 30 rated per chatbot yet, whatever the width
    assert all("30 needed" in g.why_not for g in state.groups)
    active_batch_draw(study=study, actor=coordinator)
    _rate_drawn(study, run, coordinator, clinician)
    state = active_state(study.active_plan)
    assert all(g.estimate.n_rated >= 30 for g in state.groups)
    assert state.status == "target_reached" and state.status_text.startswith("Target reached")
    with pytest.raises(AnnotationError, match="Target reached") as refused:
        active_batch_draw(study=study, actor=coordinator)
    assert refused.value.status == 409


def test_options_that_do_not_fit_the_run_are_refused(run, coordinator, clinician):
    with pytest.raises(AnnotationError, match="budget must be between 1 and the run's 100"):
        _create(run, coordinator, [clinician], budget=101)
    with pytest.raises(AnnotationError, match="between 1 and the budget"):
        _create(run, coordinator, [clinician], budget=10, batch_size=11)
    with pytest.raises(AnnotationError, match="target width must lie between 0 and 1"):
        _create(run, coordinator, [clinician], target_width=5)
    with pytest.raises(AnnotationError, match="pick at least one rater"):
        _create(run, coordinator, [])
    assert not ActivePlan.objects.exists()


# --- pages ---------------------------------------------------------------------------------------


def test_coordinator_creates_the_study_on_the_page_and_sees_the_widths(run, coordinator, clinician):
    client = client_for(coordinator)
    form = client.get(f"/studies/new/active/?run={run.pk}")
    assert form.status_code == 200 and "New study by active sampling" in form.content.decode()
    fields = {
        "run": run.pk, "source": "", "uncertainty": "disagreement", "budget": 40, "batch_size": 10, "floor": 20,
        "target_width": 0.1, "stop_on": "each_chatbot", "plan_seed": 5, "d_agree": 15, "d_split": 40,
        "name": "Active on the page", "rater_title": "", "description": "", "section": "",
        f"rater_{clinician.pk}": "on", f"label_{clinician.pk}": "clinician", "raters_per_conversation": 1,
        "composition": "", "tie_policy": "adjudication", "senior_rater": "",
    }
    bad = client.post("/studies/new/active/", {**fields, "batch_size": 50})
    assert bad.status_code == 400
    assert "A batch cannot ask for more than the whole budget" in bad.content.decode() and 'value="Active on the page"' in bad.content.decode()
    created = client.post("/studies/new/active/", fields)
    assert created.status_code == 302, created.content.decode()[:2000]
    plan = ActivePlan.objects.get(study__name="Active on the page")
    assert created["Location"] == reverse("annotation:study-active", args=[plan.study_id]) and plan.seed == 5
    page = client.get(created["Location"]).content.decode()
    for text in ("interval width now", "Expected after batch 2", "Draw batch 2", "Target width", "Zrnic",
                 "BOT-A · vendor/bot-a-model", "all chatbots", "Batches"):
        assert text in page, text
    detail = client.get(reverse("annotation:study-detail", args=[plan.study_id])).content.decode()
    assert "Active sampling from" in detail and reverse("annotation:study-active", args=[plan.study_id]) in detail
    drawn = client.post(reverse("annotation:study-active-next", args=[plan.study_id]))
    assert drawn.status_code == 302 and plan.batches.count() == 2


def test_members_read_the_page_and_csvs_and_only_coordinators_draw(run, coordinator, clinician, researcher, outsider, admin_user):
    study = _create(run, coordinator, [clinician])
    page = reverse("annotation:study-active", args=[study.pk])
    nxt = reverse("annotation:study-active-next", args=[study.pk])
    csvs = [reverse("annotation:study-active-csv", args=[study.pk]), reverse("annotation:study-active-estimates-csv", args=[study.pk])]
    for user in (researcher, clinician, outsider):  # not members (or not staff): the study does not exist for them
        client = client_for(user)
        assert client.get(page).status_code == 404
        assert all(client.get(url).status_code == 404 for url in csvs)
        assert client.post(nxt).status_code == 404
        assert client_for(user).get("/studies/new/active/").status_code == 404
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    member = client_for(researcher)
    body = member.get(page).content.decode()
    assert "interval width now" in body and "Draw batch" not in body and "coordinators draw the next batch" in body
    assert member.post(nxt).status_code == 404 and study.active_plan.batches.count() == 1
    rows = list(csv.DictReader(io.StringIO(member.get(csvs[0]).content.decode())))
    assert len(rows) == 25 and {"conversation", "batch", "uncertainty", "inclusion_prob", "weight", "selected"} <= set(rows[0])
    assert all(float(r["weight"]) == pytest.approx(1 / float(r["inclusion_prob"])) for r in rows)
    estimates = list(csv.DictReader(io.StringIO(member.get(csvs[1]).content.decode())))
    assert [r["group"] for r in estimates][-1] == "all chatbots" and len(estimates) == 3
    assert "Zrnic" in estimates[0]["reference"]
    assert client_for(admin_user).get(page).status_code == 200
    plain = reverse("annotation:study-active", args=[_plain_study(coordinator, clinician, run).pk])
    assert client_for(coordinator).get(plain).status_code == 404  # a study not built by active sampling


def _plain_study(coordinator, clinician, run):  # type: ignore[no-untyped-def]
    from annotation.studies.services import study_create

    return study_create(name="Plain", instrument=run.instrument, section=None, conversation_ids=list(run.conversations)[:3],
                        created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")])


# --- API -------------------------------------------------------------------------------------------


def test_api_creates_reads_and_draws_with_every_parameter_named(run, coordinator, clinician, researcher, outsider):
    client = client_for(coordinator)
    created = client.post("/api/v1/active-sampling/", {
        "name": "API active", "raters": [{"user": clinician.pk, "label": "clinician"}], "raters_per_conversation": 1,
        "active": {"run": run.pk, "budget": 40, "batch_size": 10, "target_width": 0.1, "floor": 25, "plan_seed": 9},
    }, content_type="application/json")
    assert created.status_code == 201, created.content
    data = created.json()
    params = data["active_sampling"]["parameters"]
    assert (params["budget"], params["batch_size"], params["floor"], params["seed"], params["visit_size"]) == (40, 10, 0.25, 9, 25)
    assert params["uncertainty"] == "disagreement" and params["tau_start"] == 0.5 and len(params["batch_seeds"]) == 1
    estimator = data["active_sampling"]["estimator"]
    assert "Zrnic & Candès" in estimator["reference"] and "martingale" in estimator["sequential"] and estimator["ddof"] == 0
    study_id = data["study"]["id"]
    url = f"/api/v1/studies/{study_id}/active-sampling/"
    state = client.get(url).json()
    assert len(state["conversations"]) == 25 and state["batches"][0]["number"] == 1
    assert {"expected_width_after_next_batch", "width", "target_reached", "estimator", "reference"} <= set(state["pooled"])
    assert "conversations" not in client.get(url, {"units": "false"}).json()
    drawn = client.post(url + "next-batch/")
    assert drawn.status_code == 201 and drawn.json()["batch"]["number"] == 2
    refused = client.post("/api/v1/active-sampling/", {"name": "x", "raters": [{"user": clinician.pk, "label": "c"}],
                                                       "active": {"run": run.pk, "budget": 10, "batch_size": 20, "target_width": 0.1}},
                          content_type="application/json")
    assert refused.status_code == 400 and "batch_size" in json.dumps(refused.json())
    for user in (clinician, outsider):
        assert client_for(user).get(url).status_code == 403
        assert client_for(user).post(url + "next-batch/").status_code == 403
        assert client_for(user).post("/api/v1/active-sampling/", {}, content_type="application/json").status_code == 403
    assert client_for(researcher).get(url).status_code == 404
    study_add_member(study=ActivePlan.objects.get(study_id=study_id).study, user=researcher, role="researcher", actor=coordinator)
    assert client_for(researcher).get(url).status_code == 200
    assert client_for(researcher).post(url + "next-batch/").status_code == 403


def test_api_says_409_once_the_plan_has_stopped(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=10, batch_size=10)
    response = client_for(coordinator).post(f"/api/v1/studies/{study.pk}/active-sampling/next-batch/")
    assert response.status_code == 409 and "visited" in response.json()["detail"]


# --- blinding -----------------------------------------------------------------------------------


def test_raters_never_see_why_a_conversation_was_chosen_or_any_judge_output(run, coordinator, clinician):
    study = _create(run, coordinator, [clinician], budget=60, batch_size=30)
    client = client_for(clinician)
    bodies = [client.get(reverse("annotation:my-studies")).content.decode(),
              client.get("/api/v1/my/assignments/").content.decode()]
    for assignment in Assignment.objects.filter(study=study, rater=clinician)[:5]:
        page = client.get(reverse("annotation:rate", args=[assignment.pk]))
        if "Before you read" in page.content.decode():
            client.post(reverse("annotation:rate-continue", args=[assignment.pk]))
            page = client.get(reverse("annotation:rate", args=[assignment.pk]))
        bodies += [page.content.decode(), client.get(f"/api/v1/my/assignments/{assignment.pk}/").content.decode()]
    assert len(bodies) >= 4
    secrets = ["inclusion", "uncertainty", "active batch", "active sampling", "Active sampling", "probabilit", "judge-a",
               "judge-b", "judge-c", "says yes on", "says no on", "vendor/bot-a-model", "vendor/bot-b-model", "Active validation"]
    for body in bodies:
        for secret in secrets:
            assert secret not in body, secret
    for url in (reverse("annotation:study-active", args=[study.pk]), f"/api/v1/studies/{study.pk}/active-sampling/"):
        assert client.get(url).status_code in (403, 404)


def test_the_state_reads_a_fixed_number_of_queries_whatever_the_batches(run, coordinator, clinician):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study = _create(run, coordinator, [clinician], budget=60, batch_size=15, uncertainty="spread")
    plan = ActivePlan.objects.select_related("judge_run", "study").get(study=study)
    with CaptureQueriesContext(connection) as one:
        active_state(plan)
    active_batch_draw(study=study, actor=coordinator)
    active_batch_draw(study=study, actor=coordinator)
    _rate_drawn(study, run, coordinator, clinician)
    plan = ActivePlan.objects.select_related("judge_run", "study").get(study=study)
    with CaptureQueriesContext(connection) as three:
        active_state(plan)
    assert len(three) == len(one) <= 20


def test_a_conversation_flagged_after_it_was_visited_is_left_out_and_the_order_goes_on(run, coordinator, clinician):
    from corpus.models import Conversation

    study = _create(run, coordinator, [clinician], budget=40, batch_size=10)  # 25 visited per batch
    plan = ActivePlan.objects.get(study=study)
    Conversation.objects.filter(pk__in=[plan.order[0], plan.order[30]]).update(integrity_ok=False)
    batch = active_batch_draw(study=study, actor=coordinator)
    positions = list(ActiveUnit.objects.filter(batch=batch).values_list("position", flat=True))
    assert positions[0] == 25 and 30 not in positions and len(positions) == 25 and batch.visit_end == 51
    assert any("no longer among" in note for note in active_state(plan).notes)


def test_question_flows_are_estimated_on_the_vera_mh_overall_score(db, coordinator, clinician):
    import random
    from pathlib import Path

    import numpy as np

    from annotation.consensus.services import study_compute_consensus
    from annotation.models import Rating, RatingStatus
    from corpus.instruments.services import instrument_import
    from stats.active import active_estimate
    from stats.ppi.scores import VERA_MH, vera_mh_counts

    rubric = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"
    instrument, _ = instrument_import(text=rubric.read_text(encoding="utf-8"), file=rubric.name, fmt="vera-mh")
    dimensions = list(dict.fromkeys(instrument.items.order_by("position").values_list("domain", flat=True)))
    labels = ["Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant"]
    conversations = corpus(repetitions=10)  # 40
    rng = random.Random(4)
    truth = {c.pk: {d: rng.choice(labels[:3]) for d in dimensions} for c in conversations}
    dissent = {c.pk for i, c in enumerate(conversations) if i % 3 == 0}

    def judge_labels(judge, conversation):  # type: ignore[no-untyped-def]
        out = dict(truth[conversation.pk])
        if judge.name != "flow-a" and conversation.pk in dissent:  # two of three: the ensemble is wrong there
            out[dimensions[0]] = "High Potential for Harm"
        return out

    run = judged_run(instrument, judges_for(instrument, ["flow-a", "flow-b", "flow-c"]), conversations, judge_labels)
    study = active_study_create(
        run=run, source_key=None, options=ActiveOptions(budget=20, batch_size=20, target_width=10.0, seed=2),
        created_by=coordinator, name="Flow, active", section=None, coordinators=[coordinator],
        raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    for assignment in Assignment.objects.filter(study=study):
        assignment.status = "submitted"
        assignment.save(update_fields=["status"])
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, derived={"labels": truth[assignment.conversation_id]})
    study_compute_consensus(study=study, actor=coordinator)
    state = active_state(study.active_plan)
    assert state.population.instrument == "vera_mh" and "VERA-MH" in state.population.score_label
    units = list(ActiveUnit.objects.filter(batch__plan__study=study).order_by("position"))
    assert len(units) == 40
    judge = vera_mh_counts([list(judge_labels(type("J", (), {"name": "flow-b"}), run_conv).values())  # the ensemble's labels
                            for run_conv in [next(c for c in conversations if c.pk == u.conversation_id) for u in units]], "j")
    human = vera_mh_counts([list(truth[u.conversation_id].values()) for u in units], "h")
    chosen = np.array([u.selected for u in units])
    expected = active_estimate(judge, np.where(chosen[:, None], human, np.nan), chosen, [u.inclusion_prob for u in units],
                               target=VERA_MH)
    assert chosen.any() and (judge != human).any(axis=1)[chosen].any()  # a correction to make
    assert state.pooled.estimate.estimate == pytest.approx(expected.estimate)
    assert state.pooled.estimate.estimate != pytest.approx(state.pooled.estimate.judge_only)
    assert state.pooled.estimate.width == pytest.approx(expected.width)


def test_the_form_opened_without_a_run_chooses_one_and_its_own_defaults_create_a_study(run, coordinator, clinician):
    """Issue 28, defect 9: on the demo the form failed with its own defaults (a budget of 200 from a 36-conversation run)."""
    client = client_for(coordinator)
    page = client.get("/studies/new/active/")
    form = page.context["form"]
    initial = {name: form[name].value() for name in ("run", "uncertainty", "budget", "batch_size", "floor", "target_width",
                                                     "stop_on", "d_agree", "d_split")}
    assert str(initial["run"]) == str(run.pk) and initial["budget"] <= len(run.results.values("conversation").distinct())
    fields = {**{k: v for k, v in initial.items() if v is not None}, "source": "", "plan_seed": "",
              "name": "Defaults only", "rater_title": "", "description": "", "section": "",
              f"rater_{clinician.pk}": "on", f"label_{clinician.pk}": "clinician", "raters_per_conversation": 1,
              "composition": "", "tie_policy": "adjudication", "senior_rater": ""}
    created = client.post("/studies/new/active/", fields)
    assert created.status_code == 302, created.content.decode()[:1500]

"""Gold conversations inside the queue (issue 29): marked by a coordinator from known answers,
mixed into raters' queues at a rate, indistinguishable to the rater (pages and API), each
rater's accuracy on them with an alert, and never counted in consensus, reports or the bundle."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import gold
from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, ConsensusLabel, StudyConversation
from annotation.studies.services import study_assign
from tests.annotation.coordinator_setup import all_items, clinicians, make_study, submit
from tests.conftest import client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(coordinator):  # type: ignore[no-untyped-def]
    """Six conversations, three raters, two each; every rating says 'yes' to every item."""
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=6, k=2)
    study_assign(study=study, actor=coordinator, seed=7)
    for a in study.assignments.all():
        submit(a, all_items("yes"))
    study_compute_consensus(study=study, actor=coordinator)
    return study


def _gold_of(study, rater):  # type: ignore[no-untyped-def]
    return list(Assignment.objects.filter(study=study, rater=rater, is_gold=True).order_by("position", "pk"))


def test_gold_is_mixed_into_each_queue_at_the_rate_and_only_where_the_rater_does_not_hold_it(coordinator, rated):
    candidates = gold.gold_candidates(rated)
    assert len(candidates) == 6 and {c.source for c in candidates} == {"consensus"}
    assert all(c.answers == all_items("yes") for c in candidates)
    result = gold.gold_set(study=rated, conversation_ids=[c.conversation_id for c in candidates], rate=0.5,
                           alert_below=0.8, actor=coordinator)
    assert result.marked == 6 and result.added == 6  # each rater: 4 of their own, 2 gold (the two they do not hold)
    for membership in rated.memberships.filter(role="rater"):
        mine = _gold_of(rated, membership.user)
        held = set(Assignment.objects.filter(study=rated, rater=membership.user, is_gold=False).values_list("conversation_id", flat=True))
        assert len(mine) == 2 and not {a.conversation_id for a in mine} & held
        assert all(a.status == AssignmentStatus.NOT_STARTED and not a.is_calibration for a in mine)
    assert StudyConversation.objects.filter(study=rated, is_gold=True, gold_source="consensus").count() == 6
    # Saving again adds nothing; the rate at 0 withdraws the gold work not started.
    assert gold.gold_set(study=rated, conversation_ids=[c.conversation_id for c in candidates], rate=0.5,
                         alert_below=0.8, actor=coordinator).added == 0
    assert gold.gold_set(study=rated, conversation_ids=[], rate=0, alert_below=0.8, actor=coordinator).withdrawn == 6


def test_the_rater_cannot_tell_a_gold_conversation_apart(coordinator, rated):
    gold.gold_set(study=rated, conversation_ids=[c.conversation_id for c in gold.gold_candidates(rated)], rate=0.5,
                  alert_below=0.8, actor=coordinator)
    rater = rated.memberships.filter(role="rater").first().user
    assignment = _gold_of(rated, rater)[0]
    client = client_for(rater)
    pages = [client.get("/ratings/"), client.get(f"/ratings/{assignment.pk}/"), client.get("/api/v1/my/assignments/"),
             client.get(f"/api/v1/my/assignments/{assignment.pk}/")]
    for response in pages:
        assert response.status_code == 200, response.status_code
        assert "gold" not in response.content.decode().lower()


def test_each_raters_accuracy_on_gold_with_an_alert_and_gold_never_counted(coordinator, rated, monkeypatch):
    gold.gold_set(study=rated, conversation_ids=[c.conversation_id for c in gold.gold_candidates(rated)], rate=0.5,
                  alert_below=0.8, actor=coordinator)
    before = {(c.conversation_id, c.item_key): (c.label, c.n_ratings) for c in ConsensusLabel.objects.filter(study=rated)}
    raters = [m.user for m in rated.memberships.filter(role="rater").order_by("user__username")]
    careless, careful = raters[0], raters[1]
    for a in _gold_of(rated, careless):
        submit(a, all_items("no"))  # every known answer missed
    first, second = _gold_of(rated, careful)
    submit(first, all_items("yes"))
    submit(second, {**all_items("yes"), "amhart_01": "no"})  # 13 of 14
    report = gold.gold_accuracy(rated)
    rows = {r.username: r for r in report.raters}
    assert rows[careless.username].accuracy == 0.0 and rows[careless.username].n == 2
    assert rows[careful.username].series == [1.0, 13 / 14]
    assert not any(r.alert for r in report.raters)  # two gold ratings: cannot tell yet
    assert rows[careless.username].reading.startswith("cannot tell yet: 2 of 3")
    monkeypatch.setattr(gold, "MIN_FOR_ALERT", 2)
    report = gold.gold_accuracy(rated)
    assert [r.username for r in report.raters if r.alert] == [careless.username]
    page = client_for(coordinator).get(reverse("annotation:study-progress", args=[rated.pk])).content.decode()
    assert 'id="gold-alert"' in page and 'id="gold-accuracy"' in page and careless.username in page
    csv_text = client_for(coordinator).get(reverse("annotation:study-gold-csv", args=[rated.pk])).content.decode()
    assert csv_text.splitlines()[0].startswith("rater,gold_ratings,accuracy") and careless.username in csv_text
    # Gold ratings are kept out of the consensus (and every reader of ratings).
    study_compute_consensus(study=rated, actor=coordinator)
    after = {(c.conversation_id, c.item_key): (c.label, c.n_ratings) for c in ConsensusLabel.objects.filter(study=rated)}
    assert after == before
    reliability = client_for(coordinator).get(f"/api/v1/reports/studies/{rated.pk}/reliability/?bootstrap=0").json()
    assert reliability["n_ratings"] == 12 * 14 and reliability["n_gold_ratings_excluded"] == 4
    assert "4 ratings of gold conversations" in reliability["methods"]["text"]


def test_the_gold_page_saves_and_refuses_what_has_no_known_answers(coordinator, rated):
    client = client_for(coordinator)
    url = reverse("annotation:study-gold", args=[rated.pk])
    page = client.get(url).content.decode()
    assert 'id="gold-form"' in page and page.count('name="gold"') == 6
    ids = [str(c.conversation_id) for c in gold.gold_candidates(rated)][:2]
    response = client.post(url, {"gold": ids, "rate": "20", "alert_below": "75"}, follow=True)
    assert "Saved: 2 gold conversations at 20% of each queue" in response.content.decode()
    rated.refresh_from_db()
    assert (rated.gold_rate, rated.gold_alert_below) == (0.2, 0.75)
    other = make_study(coordinator, clinicians(2, prefix="o"), n=1, k=2, name="Other")
    stranger = other.study_conversations.get().conversation_id
    response = client.post(url, {"gold": [str(stranger)], "rate": "20", "alert_below": "75"}, follow=True)
    assert "Nothing was changed" in response.content.decode() and "no known answers" in response.content.decode()
    assert client.post(url, {"gold": ids, "rate": "90", "alert_below": "75"}, follow=True).content.decode().count("Nothing was changed") == 1
    outsider = make_user("otto", "coordinator")
    assert client_for(outsider).get(url).status_code == 404
    rater = rated.memberships.filter(role="rater").first().user
    assert client_for(rater).get(url).status_code == 404

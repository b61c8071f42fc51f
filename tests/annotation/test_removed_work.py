"""Rotation that closes its gaps: what a removed rater still holds is listed and decided.

A removed rater's work in progress (and, when the coordinator asks, their unstarted work) waits
for a decision: keep it with them to finish, move it to a rater who does not already hold the
conversation, or discard it. Per assignment or all at once, with a reason, in the audit trail.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.errors import AnnotationError
from annotation.models import AssignmentStatus, Rating, RatingStatus
from annotation.studies.selectors import removed_work
from annotation.studies.services import (
    RemovedWorkDecision,
    removed_work_decide,
    study_assign,
    study_remove_rater,
)
from core.roles import Role
from tests.annotation.coordinator_setup import clinicians, make_study
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db
API = "/api/v1"


def active(study):  # type: ignore[no-untyped-def]
    return study.assignments.exclude(status=AssignmentStatus.WITHDRAWN)


def start(assignment, answers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """Put an assignment in progress with a draft, as the rating page would."""
    assignment.status = AssignmentStatus.IN_PROGRESS
    assignment.save()
    Rating.objects.create(assignment=assignment, status=RatingStatus.DRAFT,
                          answers={"main": {k: {"value": v} for k, v in (answers or {}).items()}, "section": {}})
    return assignment


@pytest.fixture
def setup(coordinator):  # type: ignore[no-untyped-def]
    """Four raters, 12 conversations, k=2; the first rater has two conversations in progress."""
    raters = clinicians(4)
    study = make_study(coordinator, raters, n=12, k=2)
    study_assign(study=study, actor=coordinator, seed=5)
    leaving = raters[0]
    theirs = list(active(study).filter(rater=leaving).order_by("position"))
    started = [start(theirs[0], {"amhart_01": "yes", "amhart_02": "no"}), start(theirs[1])]
    return study, raters, leaving, started


def test_removal_lists_work_in_progress_and_moves_unstarted_work(setup, coordinator):
    study, raters, leaving, started = setup
    moved = study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="went on leave")
    assert len(moved) == 4  # six assigned, two started
    work = removed_work(study)
    assert [row.assignment for row in work.awaiting] == started and not work.kept
    assert work.awaiting[0].n_answers == 2 and work.awaiting[0].rater_name == leaving.username
    event = study.events.get(action="rater_removed")
    assert (event.details["n_in_progress"], event.details["n_not_started"]) == (2, 4)  # when removed


def test_removal_can_leave_unstarted_work_for_a_decision(setup, coordinator):
    study, raters, leaving, started = setup
    assert study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="ill", redistribute=False) == []
    work = removed_work(study)
    assert len(work.awaiting) == 6
    assert {r.assignment.status for r in work.awaiting} == {AssignmentStatus.IN_PROGRESS, AssignmentStatus.NOT_STARTED}


def test_move_targets_leave_out_raters_who_hold_the_conversation(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    for row in removed_work(study).rows:
        holders = set(active(study).filter(conversation=row.assignment.conversation).values_list("rater_id", flat=True))
        targets = {uid for uid, _ in row.move_targets}
        assert targets and not targets & holders and leaving.pk not in targets


def test_keeping_lets_the_removed_rater_finish(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    counts = removed_work_decide(study=study, decisions={started[0].pk: RemovedWorkDecision("keep")},
                                 actor=coordinator, reason="she will finish this one")
    assert counts["keep"] == 1
    work = removed_work(study)
    assert [r.assignment.pk for r in work.kept] == [started[0].pk] and [r.assignment.pk for r in work.awaiting] == [started[1].pk]
    event = study.events.get(action="removed_work_kept")
    assert event.reason == "she will finish this one" and event.actor == coordinator
    # The removed rater still sees it and can save answers and submit.
    client = client_for(leaving)
    assert client.get(reverse("annotation:rate", args=[started[0].pk])).status_code == 200
    response = client.post(f"{API}/my/assignments/{started[0].pk}/answers/",
                           {"part": "main", "item_key": "amhart_03", "value": "yes", "expected_revision": 0},
                           content_type="application/json")
    assert response.status_code == 200, response.content


def test_moving_to_a_chosen_rater_keeps_the_draft_with_the_withdrawn_assignment(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    row = next(r for r in removed_work(study).rows if r.assignment.pk == started[0].pk)
    target = row.move_targets[0][0]
    counts = removed_work_decide(study=study, decisions={started[0].pk: RemovedWorkDecision("move", target)},
                                 actor=coordinator, reason="rebalance")
    assert counts["move"] == 1
    started[0].refresh_from_db()
    assert started[0].status == AssignmentStatus.WITHDRAWN
    assert Rating.objects.get(assignment=started[0]).answers["main"]["amhart_01"] == {"value": "yes"}
    new = active(study).get(conversation=started[0].conversation, rater_id=target)
    assert new.status == AssignmentStatus.NOT_STARTED
    event = study.events.get(action="removed_work_moved")
    assert (event.details["from_rater"], event.details["to_rater"], event.reason) == (leaving.pk, target, "rebalance")


def test_moving_to_a_rater_who_holds_the_conversation_changes_nothing(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    holder = active(study).filter(conversation=started[0].conversation).exclude(rater=leaving).get().rater
    decisions = {started[1].pk: RemovedWorkDecision("discard"), started[0].pk: RemovedWorkDecision("move", holder.pk)}
    with pytest.raises(AnnotationError) as error:
        removed_work_decide(study=study, decisions=decisions, actor=coordinator, reason="x")
    assert error.value.status == 409 and started[0].conversation.code in str(error.value)
    assert "already holds" in str(error.value)
    assert len(removed_work(study).awaiting) == 2  # the discard was not applied either
    assert not study.events.filter(action__startswith="removed_work").exists()


def test_moving_all_at_once_balances_and_respects_the_composition(coordinator):
    raters = clinicians(5)
    study = make_study(coordinator, raters, n=10, k=3, labels=["clinician"] * 3 + ["expert"] * 2,
                       composition={"clinician": 2, "expert": 1})
    study_assign(study=study, actor=coordinator, seed=8)
    leaving = raters[3]  # an expert
    held = [start(a) for a in active(study).filter(rater=leaving)]
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    ids = [r.assignment.pk for r in removed_work(study).awaiting]
    assert sorted(ids) == sorted(a.pk for a in held)
    removed_work_decide(study=study, decisions=dict.fromkeys(ids, RemovedWorkDecision("move")), actor=coordinator, reason="x")
    assert not removed_work(study).rows
    for assignment in held:
        on_it = set(active(study).filter(conversation=assignment.conversation).values_list("rater_id", flat=True))
        assert len(on_it) == 3 and raters[4].pk in on_it  # the other expert took it
    assert study.events.filter(action="removed_work_moved").count() == len(held)


def test_moving_with_nobody_free_names_the_conversation(coordinator):
    raters = clinicians(2)
    study = make_study(coordinator, raters, n=2, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    held = start(active(study).filter(rater=raters[0]).first())
    study_remove_rater(study=study, rater=raters[0], actor=coordinator, reason="left", redistribute=False)
    assert removed_work(study).awaiting[0].move_targets == []
    with pytest.raises(AnnotationError, match=f"{held.conversation.code}: no active rater"):
        removed_work_decide(study=study, decisions={held.pk: RemovedWorkDecision("move")}, actor=coordinator, reason="x")


def test_discarding_withdraws_and_is_audited(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    decisions = {a.pk: RemovedWorkDecision("discard") for a in started}
    assert removed_work_decide(study=study, decisions=decisions, actor=coordinator, reason="enough ratings")["discard"] == 2
    assert not removed_work(study).rows
    for assignment in started:
        assignment.refresh_from_db()
        assert assignment.status == AssignmentStatus.WITHDRAWN
        assert active(study).filter(conversation=assignment.conversation).count() == 1
    assert study.events.filter(action="removed_work_discarded", reason="enough ratings").count() == 2


def test_a_decision_needs_a_reason_and_open_work(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    with pytest.raises(AnnotationError, match="say why"):
        removed_work_decide(study=study, decisions={started[0].pk: RemovedWorkDecision("keep")}, actor=coordinator, reason=" ")
    type(started[0]).objects.filter(pk=started[0].pk).update(status=AssignmentStatus.SUBMITTED)  # finished meanwhile
    with pytest.raises(AnnotationError) as error:
        removed_work_decide(study=study, decisions={started[0].pk: RemovedWorkDecision("discard")}, actor=coordinator, reason="x")
    assert error.value.status == 409 and "no longer open" in str(error.value)
    active_rater_work = active(study).filter(rater=raters[1]).first()
    with pytest.raises(AnnotationError) as error:  # an active rater's work is not removed work
        removed_work_decide(study=study, decisions={active_rater_work.pk: RemovedWorkDecision("discard")}, actor=coordinator, reason="x")
    assert error.value.status == 409


def test_removed_calibration_work_is_withdrawn(coordinator):
    raters = clinicians(3)
    calibration = ConversationFactory()
    study = make_study(coordinator, raters, n=6, calibration={calibration.pk: {}})
    study_assign(study=study, actor=coordinator, seed=4)
    start(study.assignments.get(rater=raters[0], is_calibration=True))
    study_remove_rater(study=study, rater=raters[0], actor=coordinator, reason="left")
    assert not active(study).filter(rater=raters[0], is_calibration=True).exists()
    assert all(not r.assignment.is_calibration for r in removed_work(study).rows)


def test_listing_takes_a_fixed_number_of_queries(setup, coordinator, django_assert_max_num_queries):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left", redistribute=False)
    with django_assert_max_num_queries(6):
        work = removed_work(study)
        assert len(work.rows) == 6 and all(r.rater_name for r in work.rows)


# --- pages -----------------------------------------------------------------------------------


def test_the_study_and_progress_pages_list_removed_work_with_the_decisions(setup, coordinator):
    study, raters, leaving, started = setup
    response = client_for(coordinator).post(reverse("annotation:study-rater-remove", args=[study.pk, leaving.pk]),
                                            {"reason": "left"}, follow=True)
    html = response.content.decode()
    assert "2 conversation(s) they still hold await your decision" in html
    for url in (reverse("annotation:study-detail", args=[study.pk]), reverse("annotation:study-progress", args=[study.pk])):
        html = client_for(coordinator).get(url).content.decode()
        assert 'id="removed-work"' in html and "2 awaiting a decision" in html
        assert f'name="decision_{started[0].pk}"' in html and 'value="move:' in html and 'name="all_action"' in html


def test_deciding_one_by_one_through_the_page(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    target = removed_work(study).rows[0].move_targets[0][0]
    url = reverse("annotation:study-removed-work", args=[study.pk])
    client = client_for(coordinator)
    data = {"apply": "each", f"decision_{started[0].pk}": f"move:{target}", f"decision_{started[1].pk}": "keep",
            "next": "progress"}
    response = client.post(url, {**data, "reason": ""})
    assert response.status_code == 302 and len(removed_work(study).awaiting) == 2  # no reason: nothing changed
    response = client.post(url, {**data, "reason": "one moved, one kept"})
    assert response.status_code == 302 and response["Location"].endswith(f"/studies/{study.pk}/progress/#removed-work")
    work = removed_work(study)
    assert not work.awaiting and [r.assignment.pk for r in work.kept] == [started[1].pk]
    html = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert "Moved from a removed rater" in html and "Kept with the removed rater" in html and "one moved, one kept" in html


def test_deciding_for_all_at_once_through_the_page(setup, coordinator):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left", redistribute=False)
    response = client_for(coordinator).post(reverse("annotation:study-removed-work", args=[study.pk]),
                                            {"apply": "all", "all_action": "discard", "reason": "stop here"}, follow=True)
    assert "6 discarded" in response.content.decode()
    assert not removed_work(study).rows


def test_only_the_studys_coordinators_decide(setup, coordinator, researcher, outsider, admin_user):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    url = reverse("annotation:study-removed-work", args=[study.pk])
    data = {"apply": "all", "all_action": "discard", "reason": "x"}
    other_coordinator = make_user("colin", Role.COORDINATOR)
    for user in (outsider, leaving, raters[1], researcher, other_coordinator):
        assert client_for(user).post(url, data).status_code == 404, user
    assert len(removed_work(study).awaiting) == 2
    assert client_for(admin_user).post(url, data).status_code == 302
    assert not removed_work(study).rows


# --- API -------------------------------------------------------------------------------------


def test_the_api_lists_and_decides(setup, coordinator):
    study, raters, leaving, started = setup
    client = client_for(coordinator)
    path = f"{API}/studies/{study.pk}/removed-work/"
    response = client.post(f"{API}/studies/{study.pk}/raters/{leaving.pk}/remove/",
                           {"reason": "left", "redistribute": False}, content_type="application/json")
    assert response.status_code == 200 and response.json()["moved"] == []
    rows = client.get(path).json()
    assert len(rows) == 6 and {r["status"] for r in rows} == {"in_progress", "not_started"}
    first = next(r for r in rows if r["assignment"] == started[0].pk)
    assert first["answers_saved"] == 2 and first["move_targets"] and not first["kept"]
    holder = active(study).filter(conversation=started[0].conversation).exclude(rater=leaving).get().rater_id
    refused = client.post(path, {"decision": "move", "assignments": [started[0].pk], "to_rater": holder, "reason": "x"},
                          content_type="application/json")
    assert refused.status_code == 409 and "already holds" in refused.json()["detail"]
    kept = client.post(path, {"decision": "keep", "assignments": [started[0].pk], "reason": "finish it"},
                       content_type="application/json").json()
    assert kept["kept"] == 1 and len(kept["removed_work"]) == 6
    rest = client.post(path, {"decision": "move", "reason": "share out"}, content_type="application/json").json()
    assert rest["moved"] == 5 and [r["assignment"] for r in rest["removed_work"]] == [started[0].pk]
    assert client.post(path, {"decision": "keep"}, content_type="application/json").status_code == 400  # no reason


def test_the_api_refuses_everyone_else(setup, coordinator, researcher, outsider):
    study, raters, leaving, started = setup
    study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="left")
    path = f"{API}/studies/{study.pk}/removed-work/"
    body = {"decision": "discard", "reason": "x"}
    for user in (outsider, leaving, raters[1], researcher):
        client = client_for(user)
        assert client.get(path).status_code == 403, user
        assert client.post(path, body, content_type="application/json").status_code == 403, user
    other = client_for(make_user("colin", Role.COORDINATOR))
    assert other.get(path).status_code == 404
    assert other.post(path, body, content_type="application/json").status_code == 404
    assert len(removed_work(study).awaiting) == 2

"""Study services: create, assign, rotate raters, reassign, audit events, consensus, adjudication."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.consensus.services import consensus_adjudicate, study_compute_consensus
from annotation.errors import AnnotationError
from annotation.models import (
    AssignmentStatus,
    ConsensusLabel,
    ConsensusProvenance,
    MemberRole,
    StudyEvent,
    TiePolicy,
)
from annotation.studies.services import (
    assignment_reassign,
    study_add_rater,
    study_assign,
    study_create,
    study_remove_rater,
)
from tests.annotation.coordinator_setup import (
    all_items,
    clinicians,
    instruments,
    make_study,
    submit,
)
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


def active(study):  # type: ignore[no-untyped-def]
    return study.assignments.exclude(status=AssignmentStatus.WITHDRAWN)


def actions(study) -> list[str]:  # type: ignore[no-untyped-def]
    return list(study.events.order_by("id").values_list("action", flat=True))


# --- create --------------------------------------------------------------------------------


def test_creating_a_study_records_conversations_raters_labels_and_the_creator(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=5, labels=["clinician", "clinician", "expert"],
                       tie_policy=TiePolicy.SENIOR, senior_rater=raters[0], selection={"matched": 9, "sample_size": 5, "seed": 42})
    assert study.study_conversations.count() == 5
    members = {m.user.username: m for m in study.memberships.select_related("user")}
    assert members["cora"].role == MemberRole.COORDINATOR
    assert members["rater3"].rater_label == "expert"
    assert members["rater1"].is_senior and not members["rater2"].is_senior
    assert study.sample_seed == 42
    assert actions(study) == ["study_created"]


def test_calibration_conversations_keep_their_reference_answers(coordinator):
    calibration = ConversationFactory()
    study = make_study(coordinator, clinicians(2), calibration={calibration.pk: {"amhart_01": {"label": "yes", "explanation": "warm"}}})
    link = study.study_conversations.get(conversation=calibration)
    assert link.is_calibration and link.calibration_reference["amhart_01"]["label"] == "yes"
    assert study.calibration_required


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tie_policy": TiePolicy.SENIOR}, "senior rater"),
        ({"composition": {"clinician": 1, "expert": 2}}, "k is 2"),
        ({"name": "  "}, "name"),
    ],
)
def test_an_impossible_study_is_refused(coordinator, kwargs, message):
    with pytest.raises(AnnotationError, match=message):
        make_study(coordinator, clinicians(2), **kwargs)


def test_the_senior_rater_must_be_one_of_the_raters(coordinator, clinician):
    with pytest.raises(AnnotationError, match="one of the study's raters"):
        make_study(coordinator, clinicians(2), tie_policy=TiePolicy.SENIOR, senior_rater=clinician)


def test_a_rating_section_cannot_be_the_main_instrument(coordinator):
    _, section = instruments()
    with pytest.raises(AnnotationError, match="section"):
        study_create(name="x", instrument=section, section=None, conversation_ids=[ConversationFactory().pk], created_by=coordinator)


def test_an_empty_selection_is_refused(coordinator):
    amhart, _ = instruments()
    with pytest.raises(AnnotationError, match="no conversations"):
        study_create(name="x", instrument=amhart, section=None, conversation_ids=[], created_by=coordinator)


# --- assign --------------------------------------------------------------------------------


def test_assigning_gives_every_conversation_k_raters_and_records_the_seed(coordinator):
    study = make_study(coordinator, clinicians(4), n=10, k=3)
    result = study_assign(study=study, actor=coordinator, seed=99)
    study.refresh_from_db()
    per_conversation = Counter(active(study).values_list("conversation_id", flat=True))
    assert set(per_conversation.values()) == {3}
    loads = Counter(active(study).values_list("rater_id", flat=True))
    assert max(loads.values()) - min(loads.values()) <= 1
    assert result["seed"] == study.assignment_seed == 99
    event = study.events.get(action="assigned")
    assert event.details["seed"] == 99 and event.actor == coordinator


def test_assigning_without_a_seed_draws_one_and_records_it(coordinator):
    study = make_study(coordinator, clinicians(2))
    result = study_assign(study=study, actor=coordinator)
    study.refresh_from_db()
    assert study.assignment_seed == result["seed"] is not None


def test_the_same_seed_reproduces_the_same_design(coordinator):
    raters = clinicians(3)
    conversations = ConversationFactory.create_batch(9)
    designs = []
    for name in ("a", "b"):
        study = make_study(coordinator, raters, conversations=conversations, name=name)
        study_assign(study=study, actor=coordinator, seed=5)
        designs.append(sorted(study.assignments.values_list("conversation_id", "rater_id", "position")))
    assert designs[0] == designs[1]


def test_calibration_comes_first_for_every_rater(coordinator):
    calibration = ConversationFactory()
    study = make_study(coordinator, clinicians(3), n=6, calibration={calibration.pk: {}})
    study_assign(study=study, actor=coordinator, seed=1)
    rows = study.assignments.filter(conversation=calibration)
    assert rows.count() == 3 and all(a.is_calibration for a in rows)


def test_assigning_twice_is_a_conflict(coordinator):
    study = make_study(coordinator, clinicians(2))
    study_assign(study=study, actor=coordinator, seed=1)
    with pytest.raises(AnnotationError) as error:
        study_assign(study=study, actor=coordinator, seed=2)
    assert error.value.status == 409


def test_too_few_raters_for_k_is_refused_at_assignment(coordinator):
    study = make_study(coordinator, clinicians(2), k=2)
    study_remove_rater(study=study, rater=study.memberships.filter(role="rater").first().user, actor=coordinator, reason="left")
    with pytest.raises(AnnotationError, match="needed per conversation"):
        study_assign(study=study, actor=coordinator, seed=1)


# --- rotation ------------------------------------------------------------------------------


def test_removing_a_rater_needs_a_reason(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters)
    with pytest.raises(AnnotationError, match="why"):
        study_remove_rater(study=study, rater=raters[0], actor=coordinator, reason=" ")


def test_a_removed_raters_unstarted_work_goes_to_others_and_started_work_stays(coordinator):
    raters = clinicians(4)
    study = make_study(coordinator, raters, n=12, k=2)
    study_assign(study=study, actor=coordinator, seed=3)
    leaving = raters[0]
    theirs = list(active(study).filter(rater=leaving).order_by("position"))
    started = theirs[0]
    started.status = AssignmentStatus.IN_PROGRESS
    started.save()
    moved = study_remove_rater(study=study, rater=leaving, actor=coordinator, reason="went on leave")
    assert len(moved) == len(theirs) - 1
    assert list(active(study).filter(rater=leaving)) == [started]
    per_conversation = Counter(active(study).values_list("conversation_id", flat=True))
    assert set(per_conversation.values()) == {2}
    pairs = list(active(study).values_list("conversation_id", "rater_id"))
    assert len(pairs) == len(set(pairs))
    assert not study.memberships.get(user=leaving, role="rater").active
    removal = study.events.get(action="rater_removed")
    assert removal.reason == "went on leave" and removal.actor == coordinator
    assert study.events.filter(action="reassigned_on_removal").count() == len(moved)


def test_removal_keeps_the_composition(coordinator):
    raters = clinicians(5)
    study = make_study(coordinator, raters, n=10, k=3, labels=["clinician"] * 3 + ["expert"] * 2,
                       composition={"clinician": 2, "expert": 1})
    study_assign(study=study, actor=coordinator, seed=8)
    study_remove_rater(study=study, rater=raters[3], actor=coordinator, reason="dropped out")
    experts = {raters[3].pk, raters[4].pk}
    for cid in study.study_conversations.values_list("conversation_id", flat=True):
        on_it = set(active(study).filter(conversation_id=cid).values_list("rater_id", flat=True))
        assert len(on_it & experts) == 1


def test_removal_with_no_one_left_to_take_the_work_changes_nothing(coordinator):
    raters = clinicians(2)
    study = make_study(coordinator, raters, n=4, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    with pytest.raises(AnnotationError) as error:
        study_remove_rater(study=study, rater=raters[0], actor=coordinator, reason="left")
    assert error.value.status == 409
    assert study.memberships.get(user=raters[0], role="rater").active
    assert not study.events.filter(action="rater_removed").exists()


def test_adding_a_rater_rebalances_unstarted_work_onto_them(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=12, k=2)
    study_assign(study=study, actor=coordinator, seed=2)
    newcomer = clinicians(1, prefix="late")[0]
    moved = study_add_rater(study=study, user=newcomer, label="clinician", actor=coordinator, reason="more hands")
    loads = Counter(active(study).values_list("rater_id", flat=True))
    assert loads[newcomer.pk] == len(moved) >= 5
    assert max(loads.values()) - min(loads.values()) <= 1
    assert set(Counter(active(study).values_list("conversation_id", flat=True)).values()) == {2}
    assert "rater_added" in actions(study) and "rebalanced" in actions(study)


def test_adding_a_rater_who_is_already_active_is_a_conflict(coordinator):
    raters = clinicians(2)
    study = make_study(coordinator, raters)
    with pytest.raises(AnnotationError) as error:
        study_add_rater(study=study, user=raters[0], label="clinician", actor=coordinator)
    assert error.value.status == 409


def test_a_rater_added_back_after_removal_calibrates_again(coordinator):
    raters = clinicians(3)
    calibration = ConversationFactory()
    study = make_study(coordinator, raters, n=6, calibration={calibration.pk: {}})
    study_assign(study=study, actor=coordinator, seed=4)
    study_remove_rater(study=study, rater=raters[0], actor=coordinator, reason="break")
    study_add_rater(study=study, user=raters[0], label="clinician", actor=coordinator, reason="back")
    pending = active(study).filter(rater=raters[0], is_calibration=True)
    assert pending.count() == 1 and pending.get().status == AssignmentStatus.NOT_STARTED


def test_reassigning_one_assignment_needs_a_reason_and_is_audited(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=6, k=2)
    study_assign(study=study, actor=coordinator, seed=6)
    assignment = active(study).filter(rater=raters[0]).first()
    other = next(r for r in raters if not active(study).filter(conversation=assignment.conversation, rater=r).exists())
    with pytest.raises(AnnotationError, match="why"):
        assignment_reassign(assignment=assignment, new_rater=other, actor=coordinator, reason="")
    new = assignment_reassign(assignment=assignment, new_rater=other, actor=coordinator, reason="workload")
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.WITHDRAWN and new.rater == other
    event = study.events.get(action="reassigned")
    assert event.reason == "workload" and event.details["to_rater"] == other.pk


def test_a_submitted_assignment_cannot_be_moved(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=3, k=2)
    study_assign(study=study, actor=coordinator, seed=6)
    assignment = active(study).filter(rater=raters[0]).first()
    submit(assignment, all_items("yes"))
    other = next(r for r in raters if not active(study).filter(conversation=assignment.conversation, rater=r).exists())
    with pytest.raises(AnnotationError) as error:
        assignment_reassign(assignment=assignment, new_rater=other, actor=coordinator, reason="x")
    assert error.value.status == 409


def test_moving_to_a_rater_who_already_has_the_conversation_is_a_conflict(coordinator):
    raters = clinicians(2)
    study = make_study(coordinator, raters, n=2, k=2)
    study_assign(study=study, actor=coordinator, seed=6)
    assignment = active(study).filter(rater=raters[0]).first()
    with pytest.raises(AnnotationError) as error:
        assignment_reassign(assignment=assignment, new_rater=raters[1], actor=coordinator, reason="x")
    assert error.value.status == 409


# --- consensus -----------------------------------------------------------------------------


def rated_study(coordinator, labels_by_rater, *, tie_policy=TiePolicy.ADJUDICATION, senior=None, with_section=False):  # type: ignore[no-untyped-def]
    """One conversation rated by every rater: ``labels_by_rater`` = [(rater, {item: label})]."""
    raters = [r for r, _ in labels_by_rater]
    study = make_study(coordinator, raters, n=1, k=len(raters), tie_policy=tie_policy, senior_rater=senior,
                       with_section=with_section)
    study_assign(study=study, actor=coordinator, seed=1)
    for rater, answers in labels_by_rater:
        main = {k: v for k, v in answers.items() if not k.startswith("section:")}
        section = {k[8:]: v for k, v in answers.items() if k.startswith("section:")}
        submit(study.assignments.get(rater=rater), main, section=section)
    return study


def label(study, key):  # type: ignore[no-untyped-def]
    return study.consensus.get(item_key=key)


def test_consensus_marks_unanimous_majority_and_plurality(coordinator):
    r = clinicians(4)
    study = rated_study(coordinator, [
        (r[0], {"amhart_01": "yes", "amhart_02": "yes", "amhart_13": "yes"}),
        (r[1], {"amhart_01": "yes", "amhart_02": "yes", "amhart_13": "no"}),
        (r[2], {"amhart_01": "yes", "amhart_02": "yes", "amhart_13": "N/A"}),
        (r[3], {"amhart_01": "yes", "amhart_02": "no", "amhart_13": "yes"}),
    ])
    counts = study_compute_consensus(study=study, actor=coordinator)
    assert label(study, "amhart_01").provenance == ConsensusProvenance.UNANIMOUS
    second = label(study, "amhart_02")
    assert (second.label, second.provenance, second.votes) == ("yes", "majority", {"yes": 3, "no": 1})
    assert second.disagreement == pytest.approx(0.25)
    third = label(study, "amhart_13")
    assert (third.label, third.provenance) == ("yes", "plurality")
    assert counts == {"unanimous": 1, "majority": 1, "plurality": 1}
    assert study.events.get(action="consensus_computed").details["counts"] == counts


def test_a_tie_is_broken_by_the_senior_rater_under_the_senior_policy(coordinator):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"amhart_01": "no"}), (r[1], {"amhart_01": "yes"})],
                        tie_policy=TiePolicy.SENIOR, senior=r[0])
    study_compute_consensus(study=study, actor=coordinator)
    entry = label(study, "amhart_01")
    assert (entry.label, entry.provenance) == ("no", ConsensusProvenance.TIE_BREAK)


def test_a_tie_goes_to_adjudication_under_the_adjudication_policy(coordinator):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"amhart_01": "no"}), (r[1], {"amhart_01": "yes"})])
    study_compute_consensus(study=study, actor=coordinator)
    entry = label(study, "amhart_01")
    assert (entry.label, entry.provenance, entry.disagreement) == ("", ConsensusProvenance.UNRESOLVED, 0.5)


def test_section_items_get_a_consensus_of_their_own(coordinator):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"section:perceived_risk": "Low"}), (r[1], {"section:perceived_risk": "Low"})],
                        with_section=True)
    study_compute_consensus(study=study, actor=coordinator)
    assert label(study, "section:perceived_risk").label == "Low"


def test_adjudication_records_the_final_label_with_its_reason(coordinator):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"amhart_01": "no"}), (r[1], {"amhart_01": "yes"})])
    study_compute_consensus(study=study, actor=coordinator)
    entry = label(study, "amhart_01")
    consensus_adjudicate(consensus_id=entry.pk, study=study, label="yes", reason="validation is explicit in turn 3", actor=coordinator)
    entry.refresh_from_db()
    assert (entry.label, entry.provenance, entry.adjudicated_by, entry.reason) == (
        "yes", ConsensusProvenance.ADJUDICATED, coordinator, "validation is explicit in turn 3")
    event = study.events.get(action="adjudicated")
    assert event.details["previous"] == {"label": "", "provenance": "unresolved"}


def test_recomputing_keeps_adjudicated_labels(coordinator):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"amhart_01": "no"}), (r[1], {"amhart_01": "yes"})])
    study_compute_consensus(study=study, actor=coordinator)
    entry = label(study, "amhart_01")
    consensus_adjudicate(consensus_id=entry.pk, study=study, label="no", reason="r", actor=coordinator)
    counts = study_compute_consensus(study=study, actor=coordinator)
    entry.refresh_from_db()
    assert (entry.label, entry.provenance) == ("no", ConsensusProvenance.ADJUDICATED)
    assert counts == {"adjudicated": 1}


@pytest.mark.parametrize(("value", "reason", "message"), [("maybe", "r", "not a label"), ("yes", " ", "reason")])
def test_adjudication_refuses_a_label_outside_the_item_or_no_reason(coordinator, value, reason, message):
    r = clinicians(2)
    study = rated_study(coordinator, [(r[0], {"amhart_01": "no"}), (r[1], {"amhart_01": "yes"})])
    study_compute_consensus(study=study, actor=coordinator)
    with pytest.raises(AnnotationError, match=message):
        consensus_adjudicate(consensus_id=label(study, "amhart_01").pk, study=study, label=value, reason=reason, actor=coordinator)
    assert not ConsensusLabel.objects.filter(provenance="adjudicated").exists()
    assert not StudyEvent.objects.filter(action="adjudicated").exists()


def test_withdrawn_and_calibration_ratings_do_not_count_towards_consensus(coordinator):
    r = clinicians(3)
    calibration = ConversationFactory()
    study = make_study(coordinator, r, n=1, k=2, calibration={calibration.pk: {}})
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.filter(is_calibration=True):
        submit(a, {"amhart_01": "no"})
    for a in study.assignments.filter(is_calibration=False):
        submit(a, {"amhart_01": "yes"})
    study_compute_consensus(study=study, actor=coordinator)
    assert list(study.consensus.values_list("conversation_id", "label")) == [
        (study.study_conversations.get(is_calibration=False).conversation_id, "yes")
    ]

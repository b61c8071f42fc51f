"""The coordinators' API: same rules as the pages, errors with their status and a clear message."""

from __future__ import annotations

import pytest
from knox.models import AuthToken

from annotation.consensus.services import study_compute_consensus
from annotation.models import AssignmentStatus, MemberRole, Study, StudyMembership
from annotation.studies.services import study_assign
from core.roles import Role
from tests.annotation.coordinator_setup import clinicians, instruments, make_study, submit
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory, TargetFactory

pytestmark = pytest.mark.django_db
API = "/api/v1"


def post(client, path, data=None):  # type: ignore[no-untyped-def]
    return client.post(f"{API}{path}", data or {}, content_type="application/json")


def get(client, path, **params):  # type: ignore[no-untyped-def]
    return client.get(f"{API}{path}", params)


@pytest.fixture
def study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    return make_study(coordinator, [clinician, clinician2], n=4, k=2)


@pytest.fixture
def assigned(study, coordinator):  # type: ignore[no-untyped-def]
    study_assign(study=study, actor=coordinator, seed=7)
    return study


def study_paths(study, assignment_id=1, user_id=1, consensus_id=1):  # type: ignore[no-untyped-def]
    s = f"/studies/{study.pk}"
    return [
        ("get", f"{s}/"), ("post", f"{s}/assign/"), ("get", f"{s}/assignments/"), ("post", f"{s}/raters/"),
        ("post", f"{s}/raters/{user_id}/remove/"), ("get", f"{s}/progress/"), ("post", f"{s}/consensus/compute/"),
        ("get", f"{s}/consensus/"), ("post", f"{s}/consensus/{consensus_id}/adjudicate/"),
        ("post", f"/assignments/{assignment_id}/reassign/"),
        ("get", f"{s}/removed-work/"), ("post", f"{s}/removed-work/"),
    ]


def call(client, method, path):  # type: ignore[no-untyped-def]
    return post(client, path, {"reason": "x", "label": "yes", "user": 1, "new_rater": 1}) if method == "post" else get(client, path)


# --- access ----------------------------------------------------------------------------------


def test_anonymous_calls_are_refused(client, assigned):
    for method, path in [("get", "/studies/"), ("post", "/studies/"), *study_paths(assigned)]:
        assert call(client, method, path).status_code in (401, 403), path


def test_outsiders_and_raters_are_refused_everywhere(outsider, clinician, assigned):
    assignment = assigned.assignments.first()
    for user in (outsider, clinician):
        client = client_for(user)
        assert get(client, "/studies/").status_code == 403
        assert post(client, "/studies/", {"name": "x"}).status_code == 403
        for method, path in study_paths(assigned, assignment.pk, clinician.pk):
            assert call(client, method, path).status_code in (403, 404), (user, path)
    assert not assigned.events.exclude(action__in=["study_created", "assigned"]).exists()


def test_a_researcher_without_membership_sees_no_study(researcher, assigned):
    client = client_for(researcher)
    assert get(client, "/studies/").json()["results"] == []
    for method, path in study_paths(assigned, assigned.assignments.first().pk):
        assert call(client, method, path).status_code in (403, 404), path
    assert post(client, "/studies/", {"name": "x"}).status_code == 403


def test_another_coordinators_study_is_not_found(assigned, clinician):
    other = client_for(make_user("colin", Role.COORDINATOR))
    assert get(other, "/studies/").json()["results"] == []
    assignment = assigned.assignments.first()
    for method, path in study_paths(assigned, assignment.pk, clinician.pk):
        assert call(other, method, path).status_code == 404, path


def test_admins_see_every_study(admin_user, assigned):
    client = client_for(admin_user)
    assert [s["id"] for s in get(client, "/studies/").json()["results"]] == [assigned.pk]
    assert get(client, f"/studies/{assigned.pk}/progress/").status_code == 200


def test_token_authentication_works_for_coordinators(client, coordinator, assigned):
    _, token = AuthToken.objects.create(user=coordinator)
    response = client.get(f"{API}/studies/{assigned.pk}/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200 and response.json()["assignment_seed"] == 7


# --- create ----------------------------------------------------------------------------------


def payload(clinician, clinician2, **overrides):  # type: ignore[no-untyped-def]
    amhart, section = instruments()
    data = {
        "name": "VERA pilot", "instrument": amhart.pk, "section": section.pk,
        "raters": [{"user": clinician.pk, "label": "clinician"}, {"user": clinician2.pk, "label": "expert"}],
        "raters_per_conversation": 2, "tie_policy": "senior", "senior_rater": clinician2.pk,
    }
    data.update(overrides)
    return data


def test_a_coordinator_creates_a_study_and_becomes_its_coordinator(coordinator, clinician, clinician2):
    target = TargetFactory()
    ConversationFactory.create_batch(6, target=target)
    ConversationFactory.create_batch(2)
    calibration = ConversationFactory()
    data = payload(clinician, clinician2, selection={"target_ids": [target.pk], "sample_size": 4, "seed": 9},
                   calibration=[{"conversation": calibration.code, "reference": {"amhart_13": {"label": "n/a"}}}])
    response = post(client_for(coordinator), "/studies/", data)
    assert response.status_code == 201, response.json()
    body = response.json()
    study = Study.objects.get(pk=body["id"])
    assert body["n_conversations"] == 5 and body["sample_seed"] == 9 and body["selection"]["matched"] == 6
    assert {r["username"]: (r["label"], r["is_senior"]) for r in body["raters"]} == {
        "clara": ("clinician", False), "cyrus": ("expert", True)}
    assert study.memberships.filter(user=coordinator, role=MemberRole.COORDINATOR).exists()
    assert study.study_conversations.get(conversation=calibration).calibration_reference == {
        "amhart_13": {"label": "N/A", "explanation": ""}}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"senior_rater": 999999}, "senior_rater"),
        ({"calibration": [{"conversation": "C-NONE", "reference": {}}]}, "calibration"),
        ({"raters_per_conversation": 0}, "raters_per_conversation"),
    ],
)
def test_invalid_study_input_is_refused_with_the_field(coordinator, clinician, clinician2, overrides, field):
    ConversationFactory()
    response = post(client_for(coordinator), "/studies/", payload(clinician, clinician2, **overrides))
    assert response.status_code == 400 and field in response.json()
    assert not Study.objects.exists()


def test_only_clinicians_can_be_raters(coordinator, clinician, outsider):
    ConversationFactory()
    data = payload(clinician, outsider, senior_rater=None)
    response = post(client_for(coordinator), "/studies/", data)
    assert response.status_code == 400 and "clinician group" in str(response.json()["raters"])


def test_a_service_refusal_comes_back_with_its_message(coordinator, clinician, clinician2):
    ConversationFactory()
    response = post(client_for(coordinator), "/studies/", payload(clinician, clinician2, composition={"clinician": 1, "expert": 2}))
    assert response.status_code == 400 and "k is 2" in response.json()["detail"]


# --- assign, rotate ----------------------------------------------------------------------------


def test_assign_returns_the_seed_the_load_and_the_pair_overlap(coordinator, study):
    response = post(client_for(coordinator), f"/studies/{study.pk}/assign/", {"seed": 123})
    body = response.json()
    assert response.status_code == 200 and body["seed"] == 123
    assert {r["username"]: r["load"] for r in body["load"]} == {"clara": 4, "cyrus": 4}
    assert body["overlap"] == [{"rater_a": "clara", "rater_b": "cyrus", "shared": 4, "too_few": True}]
    again = post(client_for(coordinator), f"/studies/{study.pk}/assign/", {})
    assert again.status_code == 409 and "already has assignments" in again.json()["detail"]


def test_assignments_are_listed_and_filtered_by_rater(coordinator, assigned, clinician):
    body = get(client_for(coordinator), f"/studies/{assigned.pk}/assignments/", rater=clinician.pk).json()
    assert body["count"] == 4 and {a["rater_username"] for a in body["results"]} == {"clara"}


def test_raters_are_added_and_removed_with_a_reason(coordinator, assigned, clinician):
    client = client_for(coordinator)
    late = make_user("lena", Role.CLINICIAN)
    added = post(client, f"/studies/{assigned.pk}/raters/", {"user": late.pk, "label": "clinician", "reason": "joined"})
    assert added.status_code == 200 and len(added.json()["moved"]) >= 2
    no_reason = post(client, f"/studies/{assigned.pk}/raters/{clinician.pk}/remove/", {})
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    removed = post(client, f"/studies/{assigned.pk}/raters/{clinician.pk}/remove/", {"reason": "left the study"})
    assert removed.status_code == 200
    assert not assigned.memberships.get(user=clinician, role="rater").active
    assert assigned.events.get(action="rater_removed").reason == "left the study"
    assert post(client, f"/studies/{assigned.pk}/raters/{clinician.pk}/remove/", {"reason": "again"}).status_code == 404


def test_adding_a_user_outside_the_clinician_group_is_refused(coordinator, assigned, researcher):
    response = post(client_for(coordinator), f"/studies/{assigned.pk}/raters/", {"user": researcher.pk, "label": "x"})
    assert response.status_code == 400


def test_one_assignment_is_reassigned_with_a_reason(coordinator, clinician):
    raters = [clinician, *clinicians(2)]
    study = make_study(coordinator, raters, n=3)
    study_assign(study=study, actor=coordinator, seed=1)
    assignment = study.assignments.filter(rater=clinician).first()
    other = next(r for r in raters[1:] if not study.assignments.filter(conversation=assignment.conversation, rater=r).exists())
    client = client_for(coordinator)
    assert post(client, f"/assignments/{assignment.pk}/reassign/", {"new_rater": other.pk}).status_code == 400
    response = post(client, f"/assignments/{assignment.pk}/reassign/", {"new_rater": other.pk, "reason": "overloaded"})
    assert response.status_code == 200 and response.json()["rater_username"] == other.username
    again = post(client, f"/assignments/{assignment.pk}/reassign/", {"new_rater": other.pk, "reason": "again"})
    assert again.status_code == 409 and "withdrawn" in again.json()["detail"].lower()


# --- progress and consensus --------------------------------------------------------------------


def test_progress_reports_each_rater_and_conversation(coordinator, assigned, clinician):
    submit(assigned.assignments.filter(rater=clinician).first(), {"amhart_01": "yes"}, seconds=90)
    body = get(client_for(coordinator), f"/studies/{assigned.pk}/progress/").json()
    clara = next(r for r in body["raters"] if r["username"] == "clara")
    assert (clara["assigned"], clara["submitted"], clara["not_started"], clara["total_seconds"]) == (4, 1, 3, 90)
    assert body["totals"]["submitted"] == 1 and len(body["conversations"]) == 4
    assert all(len(c["assignments"]) == 2 for c in body["conversations"])


def test_consensus_is_computed_listed_queued_and_adjudicated(coordinator, assigned, clinician):
    for a in assigned.assignments.all():
        submit(a, {"amhart_01": "yes" if a.rater == clinician else "no", "amhart_02": "yes"})
    client = client_for(coordinator)
    computed = post(client, f"/studies/{assigned.pk}/consensus/compute/")
    assert computed.json()["counts"] == {"unanimous": 4, "unresolved": 4}
    assert get(client, f"/studies/{assigned.pk}/consensus/").json()["count"] == 8
    queue = get(client, f"/studies/{assigned.pk}/consensus/", queue="true").json()["results"]
    assert len(queue) == 4 and {e["provenance"] for e in queue} == {"unresolved"}
    url = f"/studies/{assigned.pk}/consensus/{queue[0]['id']}/adjudicate/"
    bad = post(client, url, {"label": "perhaps", "reason": "r"})
    assert bad.status_code == 400 and "not a label" in bad.json()["detail"]
    done = post(client, url, {"label": "no", "reason": "no explicit validation"})
    assert done.status_code == 200 and done.json()["provenance"] == "adjudicated"
    assert done.json()["adjudicated_by"] == "cora"
    assert post(client, f"/studies/{assigned.pk}/consensus/999999/adjudicate/", {"label": "no", "reason": "r"}).status_code == 404


def test_a_rater_cannot_read_the_consensus_of_their_study(clinician, assigned, coordinator):
    study_compute_consensus(study=assigned, actor=coordinator)
    assert get(client_for(clinician), f"/studies/{assigned.pk}/consensus/").status_code == 403
    assert assigned.assignments.filter(status=AssignmentStatus.WITHDRAWN).count() == 0


def test_a_study_can_be_built_from_simulation_batches(coordinator, clinician, clinician2):
    ConversationFactory.create_batch(3, metadata={"batch_id": 41})
    ConversationFactory.create_batch(2, metadata={"batch_id": 42})
    data = payload(clinician, clinician2, selection={"batch_ids": [41]}, tie_policy="adjudication", senior_rater=None)
    response = post(client_for(coordinator), "/studies/", data)
    assert response.status_code == 201 and response.json()["n_conversations"] == 3
    assert response.json()["selection"]["batch_ids"] == [41]


def test_a_researcher_member_reads_the_study_but_cannot_change_it(researcher, assigned):
    StudyMembership.objects.create(study=assigned, user=researcher, role=MemberRole.RESEARCHER)
    client = client_for(researcher)
    assert [s["id"] for s in get(client, "/studies/").json()["results"]] == [assigned.pk]
    assert get(client, f"/studies/{assigned.pk}/progress/").status_code == 200
    assert post(client, f"/studies/{assigned.pk}/consensus/compute/").status_code == 403


def test_progress_queries_do_not_grow_with_the_study(coordinator, django_assert_max_num_queries):
    sizes = []
    for n, prefix in ((3, "s"), (24, "l")):
        study = make_study(coordinator, clinicians(4, prefix=prefix), n=n, k=2, name=prefix)
        study_assign(study=study, actor=coordinator, seed=1)
        sizes.append(study)
    client = client_for(coordinator)
    for study in sizes:
        with django_assert_max_num_queries(10):
            assert get(client, f"/studies/{study.pk}/progress/").status_code == 200
        with django_assert_max_num_queries(10):
            assert get(client, "/studies/").status_code == 200

"""Coordinators' pages: build a study, assign, rotate, watch progress, consensus and adjudication."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import (
    AssignmentStatus,
    ConsensusProvenance,
    MemberRole,
    Study,
    StudyMembership,
)
from annotation.studies.services import study_assign
from core.roles import Role
from tests.annotation.coordinator_setup import (
    all_items,
    clinicians,
    instruments,
    make_study,
    submit,
)
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory, TargetFactory

pytestmark = pytest.mark.django_db

STUDY_PAGES = [
    "annotation:study-detail",
    "annotation:study-progress",
    "annotation:study-consensus",
    "annotation:study-consensus-job",
    "annotation:study-gold",
    "annotation:study-gold-csv",
    "annotation:study-consensus-csv",
    "annotation:study-adjudication",
    "annotation:study-import-ratings",
]
STUDY_POSTS = [
    "annotation:study-assign",
    "annotation:study-rater-add",
    "annotation:study-consensus-compute",
    "annotation:study-removed-work",
]


@pytest.fixture
def study(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    return make_study(coordinator, [clinician, clinician2], n=4, k=2)


@pytest.fixture
def assigned(study, coordinator):  # type: ignore[no-untyped-def]
    study_assign(study=study, actor=coordinator, seed=2026)
    return study


def page(client, name, study, **kwargs):  # type: ignore[no-untyped-def]
    return client.get(reverse(name, args=[study.pk, *kwargs.values()]))


# --- access ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STUDY_PAGES)
def test_anonymous_visitor_is_sent_to_login_from_study_pages(client, study, name):
    response = client.get(reverse(name, args=[study.pk]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def other_urls(study):  # type: ignore[no-untyped-def]
    """Return the study URLs that take more than the study id, and the POST-only ones."""
    assignment = study.assignments.first()
    rater = study.memberships.filter(role=MemberRole.RATER).first()
    return [
        ("get", reverse("annotation:study-progress-csv", args=[study.pk, "raters"])),
        ("get", reverse("annotation:study-progress-csv", args=[study.pk, "conversations"])),
        ("get", reverse("annotation:study-assignment-reassign", args=[study.pk, assignment.pk])),
        ("post", reverse("annotation:study-assignment-reassign", args=[study.pk, assignment.pk])),
        ("post", reverse("annotation:study-rater-remove", args=[study.pk, rater.user_id])),
        ("post", reverse("annotation:study-adjudicate", args=[study.pk, 1])),
        *[("post", reverse(name, args=[study.pk])) for name in STUDY_POSTS],
        ("post", reverse("annotation:study-create")),
        ("get", reverse("annotation:study-selection-preview")),
        ("post", reverse("annotation:study-selection-preview")),
    ]


def test_anonymous_visitor_is_sent_to_login_from_every_other_coordinator_url(client, assigned):
    for method, url in other_urls(assigned):
        response = getattr(client, method)(url, {"reason": "x"})
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_outsiders_raters_and_other_coordinators_get_404_on_every_other_coordinator_url(outsider, clinician, researcher, assigned):
    other = make_user("colin", Role.COORDINATOR)
    for user in (outsider, clinician, researcher, other):
        client = client_for(user)
        for method, url in other_urls(assigned):
            if user is other and ("new" in url):
                continue  # any coordinator may create a study of their own
            assert getattr(client, method)(url, {"reason": "x", "new_rater": 1}).status_code == 404, (user, url)
    assert set(assigned.events.values_list("action", flat=True)) == {"study_created", "assigned"}


@pytest.mark.parametrize("name", ["annotation:study-create", "annotation:study-selection-preview"])
def test_only_coordinators_and_admins_open_the_study_form(outsider, clinician, researcher, coordinator, admin_user, name):
    for user in (outsider, clinician, researcher):
        assert client_for(user).get(reverse(name)).status_code == 404
    for user in (coordinator, admin_user):
        assert client_for(user).get(reverse(name)).status_code == 200


def test_researchers_read_the_study_list_of_their_own_studies_without_the_create_buttons(
    outsider, clinician, researcher, coordinator, admin_user, study
):
    for user in (outsider, clinician):
        assert client_for(user).get(reverse("annotation:study-list")).status_code == 404
    page = client_for(researcher).get(reverse("annotation:study-list"))
    assert page.status_code == 200 and study.name not in page.content.decode()  # not a member
    assert "New study" not in page.content.decode()
    from annotation.studies.services import study_add_member

    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    assert study.name in client_for(researcher).get(reverse("annotation:study-list")).content.decode()
    for user in (coordinator, admin_user):
        page = client_for(user).get(reverse("annotation:study-list"))
        assert page.status_code == 200 and "New study" in page.content.decode()


@pytest.mark.parametrize("name", STUDY_PAGES)
def test_outsiders_raters_and_researchers_without_membership_get_404_on_study_pages(outsider, clinician, researcher, study, name):
    for user in (outsider, clinician, researcher):
        assert client_for(user).get(reverse(name, args=[study.pk])).status_code == 404


@pytest.mark.parametrize("name", STUDY_POSTS)
def test_outsiders_and_raters_cannot_change_a_study(outsider, clinician, researcher, study, name):
    for user in (outsider, clinician, researcher):
        assert client_for(user).post(reverse(name, args=[study.pk]), {"reason": "x"}).status_code == 404
    assert not study.assignments.exists() and not study.events.exclude(action="study_created").exists()


@pytest.mark.parametrize("name", STUDY_PAGES)
def test_another_coordinators_study_is_not_found(study, name):
    other = make_user("colin", Role.COORDINATOR)
    assert client_for(other).get(reverse(name, args=[study.pk])).status_code == 404
    assert client_for(other).post(reverse("annotation:study-assign", args=[study.pk])).status_code == 404


def test_the_study_list_shows_only_the_studies_one_coordinates(study, coordinator, admin_user):
    other = make_user("colin", Role.COORDINATOR)
    make_study(other, clinicians(2), name="Colin's study")
    mine = client_for(coordinator).get(reverse("annotation:study-list")).content.decode()
    assert "Test study" in mine and "Colin&#x27;s study" not in mine
    everything = client_for(admin_user).get(reverse("annotation:study-list")).content.decode()
    assert "Test study" in everything and "Colin&#x27;s study" in everything


@pytest.mark.parametrize("name", STUDY_PAGES)
def test_admins_open_every_study_page(admin_user, study, name):
    assert client_for(admin_user).get(reverse(name, args=[study.pk])).status_code == 200


def test_a_researcher_member_reads_a_study_but_cannot_change_it(researcher, study):
    StudyMembership.objects.create(study=study, user=researcher, role=MemberRole.RESEARCHER)
    client = client_for(researcher)
    detail = client.get(reverse("annotation:study-detail", args=[study.pk]))
    assert detail.status_code == 200 and "Assign raters" not in detail.content.decode()
    assert client.get(reverse("annotation:study-progress", args=[study.pk])).status_code == 200
    assert client.post(reverse("annotation:study-assign", args=[study.pk])).status_code == 404
    assert client.get(reverse("annotation:study-adjudication", args=[study.pk])).status_code == 404


# --- create ----------------------------------------------------------------------------------


def create_form(**overrides):  # type: ignore[no-untyped-def]
    amhart, section = instruments()
    data = {"name": "AMHART pilot", "instrument": amhart.pk, "section": section.pk, "raters_per_conversation": 2,
            "tie_policy": "adjudication", "exclude_flagged": "on"}
    data.update(overrides)
    return data


def test_a_coordinator_creates_a_study_from_a_chatbot_and_a_random_sample(coordinator, clinician, clinician2):
    target = TargetFactory()
    ConversationFactory.create_batch(8, target=target)
    ConversationFactory.create_batch(3)
    data = create_form(targets=[target.pk], sample_size=5, sample_seed=17, **{
        f"rater_{clinician.pk}": "on", f"label_{clinician.pk}": "clinician",
        f"rater_{clinician2.pk}": "on", f"label_{clinician2.pk}": "expert",
        "tie_policy": "senior", "senior_rater": clinician.pk,
    })
    response = client_for(coordinator).post(reverse("annotation:study-create"), data)
    study = Study.objects.get(name="AMHART pilot")
    assert response.status_code == 302 and response["Location"] == reverse("annotation:study-detail", args=[study.pk])
    assert study.study_conversations.count() == 5
    assert set(study.conversations.values_list("target_id", flat=True)) == {target.pk}
    assert study.selection["seed"] == study.sample_seed == 17 and study.selection["matched"] == 8
    assert study.memberships.filter(user=coordinator, role=MemberRole.COORDINATOR).exists()
    labels = dict(study.memberships.filter(role=MemberRole.RATER).values_list("user__username", "rater_label"))
    assert labels == {"clara": "clinician", "cyrus": "expert"}
    assert study.memberships.get(user=clinician, role=MemberRole.RATER).is_senior


def test_study_form_parses_composition_and_calibration_references(coordinator, clinician, clinician2):
    conversations = ConversationFactory.create_batch(4)
    rater3 = make_user("cleo", Role.CLINICIAN)
    data = create_form(codes=" ".join(c.code for c in conversations[:3]), raters_per_conversation=3,
                       composition="clinician=2, expert=1",
                       calibration=f"{conversations[3].code},amhart_01,Yes,warm and specific",
                       **{f"rater_{u.pk}": "on" for u in (clinician, clinician2, rater3)},
                       **{f"label_{rater3.pk}": "expert"})
    response = client_for(coordinator).post(reverse("annotation:study-create"), data)
    assert response.status_code == 302, response.content.decode()
    study = Study.objects.get(name="AMHART pilot")
    assert study.composition == {"clinician": 2, "expert": 1}
    link = study.study_conversations.get(conversation=conversations[3])
    assert link.is_calibration and link.calibration_reference == {"amhart_01": {"label": "yes", "explanation": "warm and specific"}}


def test_study_form_reports_every_mistake_and_creates_nothing(coordinator, clinician):
    ConversationFactory()
    data = create_form(composition="two clinicians", calibration="C-NOPE,amhart_01,yes", senior_rater=clinician.pk)
    response = client_for(coordinator).post(reverse("annotation:study-create"), data)
    body = response.content.decode()
    assert response.status_code == 400
    assert "Pick at least one rater" in body and "label=count" in body and "unknown conversation code" in body
    assert "must be one of the raters" in body
    assert not Study.objects.exists()


def test_an_unknown_id_in_the_selection_is_an_error_naming_it(coordinator, clinician):
    known = ConversationFactory()
    data = create_form(codes=f"{known.code} C-DOES-NOT-EXIST", **{f"rater_{clinician.pk}": "on"}, raters_per_conversation=1)
    response = client_for(coordinator).post(reverse("annotation:study-create"), data)
    body = response.content.decode()
    assert response.status_code == 400 and "no conversation has the code or source id &#x27;C-DOES-NOT-EXIST&#x27;" in body
    assert not Study.objects.exists()


def test_a_study_selects_conversations_by_source_id_from_a_pasted_list_or_a_file(coordinator, clinician):
    from django.core.files.uploadedfile import SimpleUploadedFile

    first, second, third = ConversationFactory(external_id="0e6474"), ConversationFactory(external_id="402e12"), ConversationFactory()
    data = create_form(codes="0e6474", **{f"rater_{clinician.pk}": "on"}, raters_per_conversation=1)
    data["codes_file"] = SimpleUploadedFile("ids.csv", f"conversation_id\r\n#402e12\r\n{third.code},x\r\n".encode())
    response = client_for(coordinator).post(reverse("annotation:study-create"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    study = Study.objects.get()
    assert set(study.conversations.values_list("pk", flat=True)) == {first.pk, second.pk, third.pk}


def test_selection_preview_counts_the_matching_conversations(coordinator):
    target = TargetFactory()
    ConversationFactory.create_batch(6, target=target)
    response = client_for(coordinator).get(reverse("annotation:study-selection-preview"), {"targets": target.pk, "sample_size": 4, "sample_seed": 3})
    body = response.content.decode()
    assert "<strong>4</strong> conversations selected" in body and "from 6 matches, seed 3" in body


# --- assign and rotate ----------------------------------------------------------------------


def test_assigning_through_the_page_shows_the_seed_load_and_pair_overlap(coordinator, study):
    client = client_for(coordinator)
    response = client.post(reverse("annotation:study-assign", args=[study.pk]), {"seed": "31"}, follow=True)
    body = response.content.decode()
    assert "seed 31 (recorded)" in body
    assert 'aria-label="Pair overlap"' in body
    # Two raters, four conversations, k=2: the pair shares 4 < 5, flagged.
    assert "too few to estimate pairwise agreement" in body and "clara &amp; cyrus: 4" in body
    assert Study.objects.get(pk=study.pk).assignment_seed == 31


def test_before_assignment_the_page_predicts_load_and_overlap(coordinator, study):
    body = client_for(coordinator).get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert "about <strong>4.0</strong> conversations" in body and "Assign raters" in body


def test_assigning_twice_shows_the_conflict(coordinator, assigned):
    response = client_for(coordinator).post(reverse("annotation:study-assign", args=[assigned.pk]), follow=True)
    assert "already has assignments" in response.content.decode()


def test_removing_a_rater_needs_a_reason_on_the_page(coordinator, clinician):
    raters = [clinician, *clinicians(2)]
    study = make_study(coordinator, raters, n=6)
    study_assign(study=study, actor=coordinator, seed=1)
    url = reverse("annotation:study-rater-remove", args=[study.pk, clinician.pk])
    client = client_for(coordinator)
    response = client.post(url, {"reason": ""}, follow=True)
    assert "Say why" in response.content.decode()
    assert study.memberships.get(user=clinician, role="rater").active
    response = client.post(url, {"reason": "moved to another hospital"}, follow=True)
    body = response.content.decode()
    assert "Removed clara" in body and "moved to another hospital" in body and "Rater removed" in body
    assert not study.memberships.get(user=clinician, role="rater").active


def test_a_rater_is_added_later_through_the_page(coordinator, assigned):
    late = make_user("lena", Role.CLINICIAN)
    response = client_for(coordinator).post(
        reverse("annotation:study-rater-add", args=[assigned.pk]),
        {"user": late.pk, "label": "expert", "rebalance": "on", "reason": "joined the team"}, follow=True,
    )
    body = response.content.decode()
    assert "Added lena" in body and "Rater added" in body and "joined the team" in body
    assert assigned.memberships.get(user=late).rater_label == "expert"


def test_a_non_clinician_cannot_be_added_as_a_rater(coordinator, assigned, outsider):
    client_for(coordinator).post(reverse("annotation:study-rater-add", args=[assigned.pk]), {"user": outsider.pk, "label": "x"})
    assert not assigned.memberships.filter(user=outsider).exists()


def test_one_assignment_is_moved_with_a_reason(coordinator, clinician):
    raters = [clinician, *clinicians(2)]
    study = make_study(coordinator, raters, n=3)
    study_assign(study=study, actor=coordinator, seed=1)
    assignment = study.assignments.filter(rater=clinician).first()
    other = next(r for r in raters[1:] if not study.assignments.filter(conversation=assignment.conversation, rater=r).exists())
    url = reverse("annotation:study-assignment-reassign", args=[study.pk, assignment.pk])
    client = client_for(coordinator)
    assert client.get(url).status_code == 200
    assert client.post(url, {"new_rater": other.pk, "reason": ""}).status_code == 400
    response = client.post(url, {"new_rater": other.pk, "reason": "clara is overloaded"})
    assert response.status_code == 302
    assert study.assignments.get(conversation=assignment.conversation, rater=other).status == AssignmentStatus.NOT_STARTED
    trail = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    assert "Assignment moved" in trail and "clara is overloaded" in trail and f"from clara to {other.username}" in trail


def test_an_assignment_of_another_study_is_not_found(coordinator, assigned):
    other = make_study(coordinator, clinicians(2), name="second")
    study_assign(study=other, actor=coordinator, seed=1)
    foreign = other.assignments.first()
    url = reverse("annotation:study-assignment-reassign", args=[assigned.pk, foreign.pk])
    assert client_for(coordinator).get(url).status_code == 404


# --- progress --------------------------------------------------------------------------------


def test_progress_counts_each_raters_work_and_highlights_stale_assignments(coordinator, assigned, clinician, settings):
    settings.EVALSITE_STALE_ASSIGNMENT_HOURS = 24
    mine = list(assigned.assignments.filter(rater=clinician).order_by("position"))
    submit(mine[0], all_items("yes"), seconds=600)
    submit(mine[1], all_items("no"), seconds=1200)
    stale = mine[2]
    stale.status = AssignmentStatus.IN_PROGRESS
    stale.last_activity_at = timezone.now() - timedelta(hours=30)
    stale.save()
    response = client_for(coordinator).get(reverse("annotation:study-progress", args=[assigned.pk]))
    progress = response.context["progress"]
    row = next(r for r in progress.raters if r.membership.user == clinician)
    assert (row.assigned, row.submitted, row.in_progress, row.not_started, row.stale) == (4, 2, 1, 1, 1)
    assert row.total_seconds == 1800 and row.median_seconds == 900
    body = response.content.decode()
    assert "1 stale" in body and "chip st-in_progress stale" in body and "15 min" in body


def test_progress_exports_both_tables_as_csv(coordinator, assigned, clinician):
    submit(assigned.assignments.filter(rater=clinician).first(), all_items("yes"), seconds=60)
    client = client_for(coordinator)
    raters = client.get(reverse("annotation:study-progress-csv", args=[assigned.pk, "raters"]))
    rows = list(csv.DictReader(io.StringIO(raters.content.decode())))
    assert raters["Content-Type"].startswith("text/csv")
    assert {r["rater"]: r["submitted"] for r in rows} == {"clara": "1", "cyrus": "0"}
    long = client.get(reverse("annotation:study-progress-csv", args=[assigned.pk, "conversations"]))
    rows = list(csv.DictReader(io.StringIO(long.content.decode())))
    assert len(rows) == 8 and {r["status"] for r in rows} == {"submitted", "not_started"}
    assert client.get(reverse("annotation:study-progress-csv", args=[assigned.pk, "other"])).status_code == 404


def build(coordinator, n_conversations, n_raters, prefix):  # type: ignore[no-untyped-def]
    raters = clinicians(n_raters, prefix=prefix)
    study = make_study(coordinator, raters, n=n_conversations, k=2, name=prefix, with_section=True)
    study_assign(study=study, actor=coordinator, seed=1)
    for i, a in enumerate(study.assignments.select_related("rater").order_by("id")):
        if i % 4 != 1:
            label = "yes" if int(a.rater.username[-1]) % 2 else "no"
            submit(a, {"amhart_01": label}, section={"perceived_risk": "Low"}, notes={"amhart_01": "n"})
        else:
            a.status = AssignmentStatus.IN_PROGRESS
            a.last_activity_at = timezone.now() - timedelta(days=10)
            a.save()
    study_compute_consensus(study=study, actor=coordinator)
    assert study.consensus.filter(disagreement__gt=0).exists()  # the adjudication page shows a case
    return study


@pytest.mark.parametrize("name", ["annotation:study-progress", "annotation:study-detail", "annotation:study-consensus",
                                  "annotation:study-adjudication", "annotation:study-consensus-csv"])
def test_page_queries_do_not_grow_with_the_study(coordinator, django_assert_max_num_queries, name):
    small = build(coordinator, 4, 2, "s")
    large = build(coordinator, 30, 6, "l")
    client = client_for(coordinator)
    client.get(reverse(name, args=[small.pk]))  # warm the session
    with CaptureQueriesContext(connection) as on_small:
        assert client.get(reverse(name, args=[small.pk])).status_code == 200
    assert len(on_small) <= 19  # the adjudication page: its queue, the consensus summary, the raters' letters
    with django_assert_max_num_queries(len(on_small)):
        assert client.get(reverse(name, args=[large.pk])).status_code == 200


# --- consensus and adjudication ----------------------------------------------------------------


@pytest.fixture
def disputed(coordinator, clinician, clinician2):  # type: ignore[no-untyped-def]
    """Two conversations, both raters: one item tied (unresolved), one item agreed."""
    study = make_study(coordinator, [clinician, clinician2], n=2, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        first = a.rater == clinician
        submit(a, {"amhart_01": "yes", "amhart_02": "yes" if first else "no"},
               notes={"amhart_02": "validates feelings in turn 2" if first else "generic reassurance only"})
    return study


def test_computing_consensus_through_the_page_shows_the_provenance_table(coordinator, disputed):
    client = client_for(coordinator)
    response = client.post(reverse("annotation:study-consensus-compute", args=[disputed.pk]), follow=True)
    body = response.content.decode()
    assert "Consensus computed: 2 unanimous, 2 unresolved; 4 labels changed." in body
    assert "Up to date" in body and "Last computed" in body
    assert body.count("prov prov-unresolved") >= 2 and "Adjudication queue (2)" in body
    export = client.get(reverse("annotation:study-consensus-csv", args=[disputed.pk]))
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert {(r["item"], r["provenance"]) for r in rows} == {("amhart_01", "unanimous"), ("amhart_02", "unresolved")}


def test_the_adjudication_queue_puts_unresolved_first_then_the_most_disputed(coordinator):
    raters = clinicians(3)
    study = make_study(coordinator, raters, n=1, k=3)
    study_assign(study=study, actor=coordinator, seed=1)
    answers = [{"amhart_13": "yes", "amhart_02": "yes", "amhart_03": "yes"},
               {"amhart_13": "no", "amhart_02": "yes", "amhart_03": "no"},
               {"amhart_13": "N/A", "amhart_02": "no", "amhart_03": "yes"}]
    for a, main in zip(study.assignments.order_by("rater__username"), answers, strict=True):
        submit(a, main)
    study_compute_consensus(study=study, actor=coordinator)
    response = client_for(coordinator).get(reverse("annotation:study-adjudication", args=[study.pk]))
    group = response.context["page"].object_list[0]
    queue = [e.item_key for e in group.entries]
    assert queue == ["amhart_13", "amhart_02", "amhart_03"]  # three-way tie, then 1/3 disagreement (by key)
    assert group.entries[0].provenance == ConsensusProvenance.UNRESOLVED
    # The case shows the three items in form order, worded, on one screen.
    case = response.context["case"]
    assert [c.entry.item_key for c in case.cases] == ["amhart_02", "amhart_03", "amhart_13"]
    body = response.content.decode()
    assert "amhart_13" not in body.replace('name="label_', "") and case.cases[2].item.text[:40] in body


def test_the_adjudicator_sees_every_raters_answer_and_note_and_the_transcript(coordinator, disputed):
    study_compute_consensus(study=disputed, actor=coordinator)
    body = client_for(coordinator).get(reverse("annotation:study-adjudication", args=[disputed.pk])).content.decode()
    # Blind to rater identity by default (issue 28): letters, the names only by a recorded choice.
    assert "Rater A" in body and "Rater B" in body and "clara" not in body and "cyrus" not in body
    assert "validates feelings in turn 2" in body and "generic reassurance only" in body
    assert "I have been feeling low." in body  # the transcript
    conversation = disputed.consensus.filter(provenance="unresolved").first().conversation_id
    named = client_for(coordinator).get(reverse("annotation:study-adjudication", args=[disputed.pk])
                                        + f"?conversation={conversation}&names=1").content.decode()
    assert "clara" in named and "cyrus" in named
    from annotation.models import StudyEvent

    assert StudyEvent.objects.filter(study=disputed, action="adjudication_names_shown").count() == 1


def test_after_a_final_label_the_adjudicator_stays_on_the_conversation_until_its_disputed_items_are_done(
    coordinator, clinician, clinician2
):
    study = make_study(coordinator, [clinician, clinician2], n=2, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    for a in study.assignments.all():
        first = a.rater == clinician
        submit(a, {"amhart_01": "yes", "amhart_02": "yes" if first else "no", "amhart_03": "no" if first else "yes"})
    study_compute_consensus(study=study, actor=coordinator)
    entry = study.consensus.filter(provenance="unresolved").order_by("pk").first()
    other = study.consensus.filter(provenance="unresolved", conversation_id=entry.conversation_id).exclude(pk=entry.pk).get()
    url = reverse("annotation:study-adjudicate-conversation", args=[study.pk, entry.conversation_id])
    client = client_for(coordinator)
    response = client.post(url, {f"label_{entry.pk}": "yes", "reason": "turn 2 names the feeling"})
    assert response["Location"].endswith(f"?conversation={entry.conversation_id}")  # one item of it still open
    page = client.get(response["Location"])
    assert page.context["case"].conversation.pk == entry.conversation_id
    response = client.post(url, {f"label_{other.pk}": "no", "reason": "no technique is described"})
    assert response["Location"].endswith("/adjudication/")  # done: the queue opens the next conversation
    assert client.get(response["Location"]).context["case"].conversation.pk != entry.conversation_id


def test_the_adjudicator_records_the_final_label_with_a_reason(coordinator, disputed):
    study_compute_consensus(study=disputed, actor=coordinator)
    entry = disputed.consensus.filter(provenance="unresolved").first()
    url = reverse("annotation:study-adjudicate", args=[disputed.pk, entry.pk])
    client = client_for(coordinator)
    assert client.post(url, {"label": "yes", "reason": ""}).status_code == 400
    response = client.post(url, {"label": "yes", "reason": "turn 2 names the feeling"}, follow=True)
    entry.refresh_from_db()
    assert (entry.label, entry.provenance, entry.adjudicated_by) == ("yes", "adjudicated", coordinator)
    assert "final label &#x27;yes&#x27; recorded" in response.content.decode()
    left = [e.pk for g in response.context["page"].object_list for e in g.entries]
    assert left == [disputed.consensus.get(provenance="unresolved").pk]


def test_the_adjudicator_settles_a_whole_conversation_with_one_reason(coordinator, disputed, outsider):
    from annotation.models import StudyEvent

    study_compute_consensus(study=disputed, actor=coordinator)
    open_entries = list(disputed.consensus.filter(provenance="unresolved").order_by("conversation_id"))
    entry = open_entries[0]
    url = reverse("annotation:study-adjudicate-conversation", args=[disputed.pk, entry.conversation_id])
    client = client_for(coordinator)
    refused = client.post(url, {f"label_{entry.pk}": "no", "reason": ""})
    assert refused.status_code == 400 and "Say why" in refused.content.decode()
    assert 'value="no" checked' in refused.content.decode()  # the choice is kept beside the error
    assert client.post(url, {"reason": "x"}).status_code == 400  # no label chosen
    assert client_for(outsider).post(url, {f"label_{entry.pk}": "no", "reason": "x"}).status_code == 404
    response = client.post(url, {f"label_{entry.pk}": "no", "reason": "generic reassurance only"}, follow=True)
    entry.refresh_from_db()
    assert (entry.label, entry.provenance, entry.reason) == ("no", "adjudicated", "generic reassurance only")
    assert "1 final label recorded" in response.content.decode()
    assert StudyEvent.objects.filter(study=disputed, action="adjudicated", reason="generic reassurance only").count() == 1
    # A label of another conversation cannot ride along.
    other = open_entries[1]
    bad = client.post(url, {f"label_{other.pk}": "no", "reason": "x"})
    assert bad.status_code == 404


def test_another_coordinator_cannot_adjudicate(coordinator, disputed):
    study_compute_consensus(study=disputed, actor=coordinator)
    entry = disputed.consensus.filter(provenance="unresolved").first()
    other = make_user("colin", Role.COORDINATOR)
    url = reverse("annotation:study-adjudicate", args=[disputed.pk, entry.pk])
    for user in (other, make_user("otto2")):
        assert client_for(user).post(url, {"label": "yes", "reason": "x"}).status_code == 404
    entry.refresh_from_db()
    assert entry.provenance == "unresolved"


def test_progress_csv_queries_do_not_grow_with_the_study(coordinator, django_assert_max_num_queries):
    small = build(coordinator, 4, 2, "s")
    large = build(coordinator, 30, 6, "l")
    client = client_for(coordinator)
    for study in (small, large):
        for table in ("raters", "conversations"):
            with django_assert_max_num_queries(10):
                client.get(reverse("annotation:study-progress-csv", args=[study.pk, table]))


def test_a_coordinator_gives_a_researcher_read_access_to_the_results(db, coordinator, researcher, outsider, clinician):
    from annotation.models import MemberRole
    from annotation.studies.services import study_create
    from corpus.instruments.services import builtin_instruments_load
    from tests.conftest import client_for
    from tests.factories import ConversationFactory

    amhart, section = builtin_instruments_load()
    study = study_create(name="Shared", instrument=amhart, section=section, conversation_ids=[ConversationFactory().pk],
                         created_by=coordinator, coordinators=[coordinator])
    assert client_for(researcher).get(f"/reports/studies/{study.pk}/reliability/").status_code == 404
    client = client_for(coordinator)
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "Give access" in page and researcher.username in page and outsider.username not in page
    client.post(f"/studies/{study.pk}/members/add/", {"user": outsider.pk, "role": "researcher"})
    client.post(f"/studies/{study.pk}/members/add/", {"user": clinician.pk, "role": "researcher"})
    assert not study.memberships.filter(user__in=[outsider, clinician]).exists()
    client.post(f"/studies/{study.pk}/members/add/", {"user": researcher.pk, "role": "researcher"})
    assert study.memberships.filter(user=researcher, role=MemberRole.RESEARCHER).exists()
    assert study.events.filter(action="member_added").exists()
    assert client_for(researcher).get(f"/reports/studies/{study.pk}/reliability/").status_code == 200
    assert client_for(outsider).post(f"/studies/{study.pk}/members/add/", {"user": outsider.pk, "role": "researcher"}).status_code == 404


def test_move_targets_leave_out_raters_who_already_hold_the_conversation(coordinator, outsider):
    raters = clinicians(3, prefix="mover")
    study = make_study(coordinator, raters, n=3, k=2)
    study_assign(study=study, actor=coordinator, seed=1)
    assignment = study.assignments.order_by("id").first()
    holders = set(study.assignments.filter(conversation_id=assignment.conversation_id).values_list("rater_id", flat=True))
    response = client_for(coordinator).get(reverse("annotation:study-assignment-reassign", args=[study.pk, assignment.pk]))
    offered = {int(value) for value, _ in response.context["form"].fields["new_rater"].choices}
    assert offered == {r.pk for r in raters} - holders and offered
    url = reverse("annotation:study-assignment-reassign", args=[study.pk, assignment.pk])
    assert client_for(outsider).get(url).status_code == 404

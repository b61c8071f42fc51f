"""The rater's pages: dashboard, content warning, rating form, submit, revise, calibration, access."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AssignmentStatus, Rating, RatingStatus
from annotation.rating.services import rating_save_answer, rating_submit
from annotation.studies.services import assignment_reassign
from tests.conftest import client_for

from .rater_setup import answer_everything, first_assignment, flow_instrument, make_study


def page_of(user, assignment) -> str:  # type: ignore[no-untyped-def]
    response = client_for(user).get(reverse("annotation:rate", args=[assignment.pk]))
    assert response.status_code == 200
    return response.content.decode()


# ------------------------------------------------------------------------------ dashboard

def test_dashboard_shows_progress_and_continues_with_the_next_unfinished(clinician, clinician2):
    study = make_study([clinician, clinician2], n=4)
    order = list(study.assignments.filter(rater=clinician).order_by("position"))
    answer_everything(order[0], clinician)
    rating_submit(assignment_id=order[0].pk, user=clinician)
    rating_save_answer(assignment_id=order[1].pk, user=clinician, part="main", item_key="amhart_01", value="no")
    html = client_for(clinician).get(reverse("annotation:my-studies")).content.decode()
    # Raters see the rater-facing title, never the internal name (it may name chatbots).
    assert "Adolescent wellbeing ratings" in html and "Rater test study" not in html
    counts = re.sub(r"<[^>]+>", "", re.search(r'<p class="counts">(.*?)</p>', html, re.S).group(1))
    assert "1 done · 1 in progress · 2 not started" in counts
    assert '<progress max="4" value="1"' in html
    assert f'href="{reverse("annotation:rate", args=[order[1].pk])}">Continue with {order[1].conversation.code}' in html
    codes = re.findall(r'<td><span class="code">([^<]+)</span>', html)
    assert codes == [a.conversation.code for a in order]
    assert f'<a href="{reverse("annotation:rate", args=[order[0].pk])}">View' in html
    assert f'<a href="{reverse("annotation:rate", args=[order[1].pk])}">Resume' in html
    assert f'<a href="{reverse("annotation:rate", args=[order[2].pk])}">Open' in html


def test_dashboard_puts_calibration_first_and_shows_the_main_set_locked(clinician, clinician2):
    study = make_study([clinician, clinician2], n=2, n_calibration=1)
    calibration = first_assignment(study, clinician, calibration=True)
    html = client_for(clinician).get(reverse("annotation:my-studies")).content.decode()
    codes = re.findall(r'<td><span class="code">([^<]+)</span>', html)
    assert codes[0] == calibration.conversation.code
    assert html.count("Locked until calibration is done") == 2
    assert "Start with the <strong>calibration</strong>" in html
    assert f"Start with {calibration.conversation.code}" in html


def test_dashboard_says_when_there_is_nothing_to_rate(clinician):
    html = client_for(clinician).get(reverse("annotation:my-studies")).content.decode()
    assert "You have not been added to a study yet" in html


def test_a_break_is_acknowledged_on_the_dashboard(clinician):
    html = client_for(clinician).get(reverse("annotation:my-studies") + "?break=1").content.decode()
    assert "Everything you answered is saved" in html


# ------------------------------------------------------------------------------ rating page

def test_rating_page_shows_the_transcript_and_every_checklist_item(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    html = page_of(clinician, assignment)
    assert f'<span class="code">{assignment.conversation.code}</span>' in html
    assert "Turn 1</span> · <strong>User</strong>" in html and "Turn 2</span> · <strong>Chatbot</strong>" in html
    assert "Are you thinking about ending your life?" in html
    assert html.count('class="item') == 14 + 6
    assert html.count('value="N/A"') == 2 + 1  # AMHART items 13 and 14, and the disclosure category
    assert "Empathic Engagement and Rapport-Building" in html
    assert "Does not count (No)" in html and "<strong>Why:</strong>" in html
    assert "Keyboard shortcuts" in html and "Ctrl + Enter" in html
    assert "Take a break" in html
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.NOT_STARTED  # a GET changes nothing ...
    client_for(clinician).post(f"/api/v1/my/assignments/{assignment.pk}/open/")  # ... the page posts this
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS


def test_rating_page_resumes_with_the_saved_answers(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key="amhart_03", value="no")
    rating_save_answer(assignment_id=assignment.pk, user=clinician, part="section", item_key="comment", value="Hard to read")
    html = page_of(clinician, assignment)
    assert re.search(r'name="item-main-amhart_03" value="no" data-n="2" data-letter="n" checked', html)
    assert ">Hard to read</textarea>" in html
    assert '"revision": 2' in html


def test_sensitive_conversation_shows_a_content_warning_first(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, sensitive=True)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    url = reverse("annotation:rate", args=[assignment.pk])
    html = client.get(url).content.decode()
    assert "This conversation contains discussion of suicide or self-harm" in html
    assert "Continue" in html and "Back" in html and "Take a break" in html
    assert "Are you thinking about ending your life?" not in html
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.NOT_STARTED
    response = client.post(reverse("annotation:rate-continue", args=[assignment.pk]))
    assert response.status_code == 302 and response["Location"] == url
    assert "Are you thinking about ending your life?" in client.get(url).content.decode()


def test_submit_is_refused_while_required_items_are_unanswered_and_names_them(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    client = client_for(clinician)
    client.get(reverse("annotation:rate", args=[assignment.pk]))
    response = client.post(reverse("annotation:rate-submit", args=[assignment.pk]))
    assert response.status_code == 400
    html = response.content.decode()
    assert "19 required questions unanswered" in html
    assert 'href="#item-main-amhart_01"' in html and 'href="#item-section-broke_role"' in html
    assert "comment:" not in html.split("submit-problems")[1].split("</div>")[0]


def test_submitted_rating_is_locked_with_its_history_and_submit_is_idempotent(clinician, clinician2):
    study = make_study([clinician, clinician2], n=2)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    client = client_for(clinician)
    submit = reverse("annotation:rate-submit", args=[assignment.pk])
    assert client.post(submit, {"expected_revision": 19}).status_code == 302
    assert client.post(submit, {"expected_revision": 19}).status_code == 302
    html = page_of(clinician, assignment)
    assert "This rating is locked" in html and 'id="rating-form"' not in html
    assert "Change this answer" in html and "First submission" in html
    assert "Next conversation" in html
    assert Rating.objects.get(assignment=assignment).revisions.count() == 1


def test_a_stale_submit_is_refused_as_a_conflict(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    response = client_for(clinician).post(reverse("annotation:rate-submit", args=[assignment.pk]), {"expected_revision": 3})
    assert response.status_code == 409
    assert "changed elsewhere" in response.content.decode()


def test_changing_a_submitted_answer_needs_a_reason_and_is_kept_in_the_history(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    answer_everything(assignment, clinician)
    rating_submit(assignment_id=assignment.pk, user=clinician)
    client = client_for(clinician)
    url = reverse("annotation:rate-revise", args=[assignment.pk])
    refused = client.post(url, {"part": "main", "item_key": "amhart_02", "value": "no", "reason": " "})
    assert refused.status_code == 400 and "needs a reason" in refused.content.decode()
    done = client.post(url, {"part": "main", "item_key": "amhart_02", "value": "no", "reason": "misread turn 4"})
    assert done.status_code == 302
    rating = Rating.objects.get(assignment=assignment)
    assert rating.answers["main"]["amhart_02"]["value"] == "no" and rating.status == RatingStatus.SUBMITTED
    html = page_of(clinician, assignment)
    assert "misread turn 4" in html and "<td class=\"num\">2</td>" in html


def test_main_set_is_locked_until_calibration_then_feedback_is_shown(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, n_calibration=1)
    calibration = first_assignment(study, clinician, calibration=True)
    main = first_assignment(study, clinician, calibration=False)
    client = client_for(clinician)
    locked = client.get(reverse("annotation:rate", args=[main.pk]))
    assert locked.status_code == 423 and "Calibration first" in locked.content.decode()
    answer_everything(calibration, clinician)
    rating_save_answer(assignment_id=calibration.pk, user=clinician, part="main", item_key="amhart_01", value="no")
    rating_submit(assignment_id=calibration.pk, user=clinician)
    html = page_of(clinician, calibration)
    assert "Calibration feedback" in html and "validated feelings in turn 2" in html and "different" in html
    assert client.get(reverse("annotation:rate", args=[main.pk])).status_code == 200


def test_guided_mode_shows_one_question_then_the_path_and_the_labels(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, instrument=flow_instrument())
    assignment = first_assignment(study, clinician)
    html = page_of(clinician, assignment)
    assert html.count('class="fq state-current"') == 1 and 'data-key="1" data-state="current"' in html
    assert "Count hints of wanting to disappear" in html
    assert "User-agent breaks character" in html
    for question, answer in [("1", "Yes"), ("2", "No"), ("5", "Danger, not urgent"), ("6", "No"), ("7", "No"), ("8", "No"), ("10", "No"), ("11", "No"), ("12", "No")]:
        rating_save_answer(assignment_id=assignment.pk, user=clinician, part="main", item_key=question, value=answer, note=f"why {question}")
    html = page_of(clinician, assignment)
    assert html.count('class="fq state-answered"') == 9 and 'class="fq state-current"' not in html
    assert 'id="flow-result" class="flow-result card" tabindex="-1">' in html
    assert "<dt>Notices Danger</dt><dd>Best Practice</dd>" in html


# ------------------------------------------------------------------------------ access

def test_anonymous_visitors_are_sent_to_log_in(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1)
    assignment = first_assignment(study, clinician)
    for url in (reverse("annotation:my-studies"), reverse("annotation:rate", args=[assignment.pk])):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_no_one_but_the_assigned_rater_opens_or_changes_an_assignment(
    clinician, clinician2, coordinator, researcher, admin_user, outsider
):
    study = make_study([clinician], n=1, coordinator=coordinator)
    make_study([clinician2], n=1)
    assignment = first_assignment(study, clinician)
    for user in (clinician2, coordinator, researcher, admin_user, outsider):
        client = client_for(user)
        assert client.get(reverse("annotation:rate", args=[assignment.pk])).status_code == 404
        for name in ("rate-continue", "rate-submit", "rate-revise"):
            assert client.post(reverse(f"annotation:{name}", args=[assignment.pk])).status_code == 404, (user, name)
    assert client_for(outsider).get(reverse("annotation:my-studies")).status_code == 404
    assert client_for(coordinator).get(reverse("annotation:my-studies")).status_code == 404
    assert Rating.objects.count() == 0


def test_a_rater_cannot_open_another_study_or_a_withdrawn_assignment(clinician, clinician2, coordinator, outsider):
    other = make_study([clinician2], n=1)
    foreign = first_assignment(other, clinician2)
    assert client_for(clinician).get(reverse("annotation:rate", args=[foreign.pk])).status_code == 404
    assert client_for(outsider).get(reverse("annotation:rate", args=[foreign.pk])).status_code == 404
    study = make_study([clinician, clinician2], n=2, k=1, coordinator=coordinator)
    mine = first_assignment(study, clinician)
    assignment_reassign(assignment=mine, new_rater=clinician2, actor=coordinator, reason="rotation")
    gone = client_for(clinician).get(reverse("annotation:rate", args=[mine.pk]))
    assert gone.status_code == 410 and "rotation" not in gone.content.decode()  # says so, not why
    assert client_for(outsider).get(reverse("annotation:rate", args=[mine.pk])).status_code == 404
    html = client_for(clinician).get(reverse("annotation:my-studies")).content.decode()
    assert mine.conversation.code not in html


# ------------------------------------------------------------------------------ performance

@pytest.mark.parametrize("n", [5, 60])
def test_dashboard_and_rating_page_run_a_fixed_number_of_queries(n, clinician, clinician2, django_assert_max_num_queries):
    study = make_study([clinician, clinician2], n=n, n_calibration=1)
    calibration = first_assignment(study, clinician, calibration=True)
    answer_everything(calibration, clinician)
    rating_submit(assignment_id=calibration.pk, user=clinician)
    main = first_assignment(study, clinician, calibration=False)
    client = client_for(clinician)
    client.get(reverse("annotation:rate", args=[main.pk]))  # opened once: the rating exists
    assert study.assignments.filter(rater=clinician).count() == n + 1
    with django_assert_max_num_queries(6):
        assert client.get(reverse("annotation:my-studies")).status_code == 200
    # +1 each since issue 19: the rater's own flag on the conversation ("Flag this conversation").
    with django_assert_max_num_queries(15):
        assert client.get(reverse("annotation:rate", args=[main.pk])).status_code == 200
    with django_assert_max_num_queries(13):
        assert client.get(reverse("annotation:rate", args=[calibration.pk])).status_code == 200


# ------------------------------------------------------------------------------ after submit (issue 29)

def _order(study, rater):  # type: ignore[no-untyped-def]
    return list(study.assignments.filter(rater=rater).order_by("-is_calibration", "position", "id"))


def test_submit_opens_the_next_conversation_and_a_second_post_does_not_skip_one(clinician, clinician2):
    study = make_study([clinician, clinician2], n=3)
    order = _order(study, clinician)
    answer_everything(order[0], clinician)
    client = client_for(clinician)
    submit = reverse("annotation:rate-submit", args=[order[0].pk])
    first = client.post(submit, {"expected_revision": 19})
    again = client.post(submit, {"expected_revision": 19})  # a double click, a resent form
    assert first.status_code == again.status_code == 302
    assert first["Location"] == again["Location"] == reverse("annotation:rate", args=[order[1].pk])
    html = client.get(first["Location"]).content.decode()
    assert f"Rating of {order[0].conversation.code} submitted" in html
    assert 'id="rating-form"' in html and f'<span class="code">{order[1].conversation.code}</span>' in html
    assert Rating.objects.get(assignment=order[0]).revisions.count() == 1


def test_submit_skips_conversations_already_done_and_ends_on_the_queue(clinician, clinician2):
    study = make_study([clinician, clinician2], n=3)
    order = _order(study, clinician)
    answer_everything(order[1], clinician)
    rating_submit(assignment_id=order[1].pk, user=clinician)  # the second one is done first
    answer_everything(order[0], clinician)
    client = client_for(clinician)
    response = client.post(reverse("annotation:rate-submit", args=[order[0].pk]))
    assert response["Location"] == reverse("annotation:rate", args=[order[2].pk])
    answer_everything(order[2], clinician)
    last = client.post(reverse("annotation:rate-submit", args=[order[2].pk]))
    assert last.status_code == 302 and last["Location"] == reverse("annotation:my-studies")
    html = client.get(last["Location"]).content.decode()
    assert "nothing is left to rate here" in html
    counts = re.sub(r"<[^>]+>", "", re.search(r'<p class="counts">(.*?)</p>', html, re.S).group(1))
    assert counts.startswith("3 done")


def test_the_next_sensitive_conversation_opens_on_its_content_warning(clinician, clinician2):
    study = make_study([clinician, clinician2], n=2, sensitive=True)
    order = _order(study, clinician)
    answer_everything(order[0], clinician)
    client = client_for(clinician)
    response = client.post(reverse("annotation:rate-submit", args=[order[0].pk]))
    assert response["Location"] == reverse("annotation:rate", args=[order[1].pk])
    html = client.get(response["Location"]).content.decode()
    assert "This conversation contains discussion of suicide or self-harm" in html
    assert "Are you thinking about ending your life?" not in html


def test_a_calibration_submit_stays_to_show_the_reference_answers(clinician, clinician2):
    study = make_study([clinician, clinician2], n=1, n_calibration=1)
    calibration = first_assignment(study, clinician, calibration=True)
    answer_everything(calibration, clinician)
    client = client_for(clinician)
    response = client.post(reverse("annotation:rate-submit", args=[calibration.pk]))
    assert response["Location"] == reverse("annotation:rate", args=[calibration.pk])
    assert "Compare your answers below" in client.get(response["Location"]).content.decode()

"""The demo seed: a small but complete study in seconds, fetched from nowhere, that every report can show."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.http import HttpRequest
from django.test import Client, override_settings

from annotation.demo.seed import DEMO_STUDY, DEMO_USERS, PLAN_STUDY, RUN_NAME
from annotation.models import (
    AssignmentStatus,
    MemberRole,
    Rating,
    RatingStatus,
    SamplingPlan,
    Study,
)
from corpus.models import Conversation, Target
from judging.models import EnsembleLabel, Judge, JudgeRun, LLMCacheEntry, RunStatus
from judging.sources import judge_previous_version_runs

# What a report page says when it has nothing to show (each page's own empty-state words).
EMPTY = ("No studies you may read", "No judge run", "no judge run", "No ratings yet", "no submitted rating",
         "Choose two", "nothing to compare", "No rated conversation")


def seeded(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def visible_text(response) -> str:  # type: ignore[no-untyped-def]
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", response.content.decode(), flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def login(username: str) -> Client:
    client = Client()
    password = next(p for u, _r, p in DEMO_USERS if u == username)
    # django-axes checks every authentication against a request (login throttling).
    assert client.login(request=HttpRequest(), username=username, password=password), username
    return client


@override_settings(DEBUG=True)
def test_seed_demo_builds_a_complete_study_rated_by_three_clinicians(db):
    out = seeded()
    for username in ("clinician", "clinician3", "coordinator", "researcher", "admin"):
        assert username in out
    conversations = Conversation.objects.all()
    assert conversations.count() == 36 and all(c.is_demo and c.metadata.get("synthetic") for c in conversations)
    assert Target.objects.count() == 2  # two demo chatbots
    assert all(c.integrity_ok for c in conversations)
    assert {c.persona.key for c in conversations} == {f"amhart-{s}-{c}-{v}" for s in "fm" for c in ("anx", "dep") for v in ("mod", "sev")}
    study = Study.objects.get(name=DEMO_STUDY)
    assert study.instrument.key == "amhart" and study.section.key == "study-section"
    assert study.raters_per_conversation == 3 and study.study_conversations.count() == 36
    members = dict(study.memberships.values_list("user__username", "role"))
    assert members["researcher"] == MemberRole.RESEARCHER and members["coordinator"] == MemberRole.COORDINATOR
    assert sorted(u for u, r in members.items() if r == MemberRole.RATER) == ["clinician", "clinician2", "clinician3"]
    # k=3: every conversation has a submitted rating by each of the three clinicians, with its answer time.
    submitted = study.assignments.filter(status=AssignmentStatus.SUBMITTED, rating__status=RatingStatus.SUBMITTED)
    assert submitted.count() == 108
    assert all(a.time_spent_seconds >= 60 and a.started_at < a.submitted_at for a in submitted)
    # Realistic disagreement: neither unanimous nor random.
    answers = [r.answers["main"]["amhart_04"]["value"] for r in Rating.objects.filter(assignment__study=study)]
    assert 0.2 < answers.count("yes") / len(answers) < 0.9
    assert study.consensus.exists()


@override_settings(DEBUG=True)
def test_the_demo_judge_run_replayed_recorded_replies_through_the_judge_path(db):
    seeded("--quiet-logins")
    run = JudgeRun.objects.get(name=RUN_NAME)
    assert run.status == RunStatus.COMPLETED and run.judges.count() == 3
    assert run.n_done == 108 and run.n_calls == run.n_cached == 108  # every call answered by the cache
    assert EnsembleLabel.objects.filter(run=run).exists()
    assert LLMCacheEntry.objects.count() == 4 * 36  # three judges and the second version of one
    v2 = Judge.objects.get(cloned_from__name="Demo judge A")
    pair = judge_previous_version_runs(v2)
    assert pair is not None and pair.run_previous is not None and pair.run_current is not None
    plan_study = Study.objects.get(name=PLAN_STUDY)
    assert SamplingPlan.objects.get(study=plan_study).judge_run == run
    assert plan_study.memberships.filter(user__username="researcher").exists()
    # The sample is still being rated: the demo clinician has conversations of it to try the rating page on.
    open_for_clinician = plan_study.assignments.filter(rater__username="clinician", status=AssignmentStatus.NOT_STARTED)
    assert open_for_clinician.count() == 5


@override_settings(DEBUG=True)
def test_every_report_page_has_content_for_the_demo_researcher_on_first_login(db):
    seeded("--quiet-logins")
    client = login("researcher")
    index = client.get("/reports/")
    assert index.status_code == 200 and DEMO_STUDY in visible_text(index)
    run = JudgeRun.objects.get(name=RUN_NAME)
    drift = re.search(r'href="(/reports/drift/\?a_run=[^"]+)"', index.content.decode())  # the index links the demo's versions
    assert drift is not None
    pages = ["/reports/", f"/reports/runs/{run.pk}/scorecard/", drift.group(1).replace("&amp;", "&")]
    for study in Study.objects.filter(name__in=[DEMO_STUDY, PLAN_STUDY]):
        pages += [f"/reports/studies/{study.pk}/{page}/" for page in ("reliability", "realism", "scorecard", "judges", "judge-assisted", "raters")]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        text = visible_text(response)
        assert not [words for words in EMPTY if words in text], (page, text[:400])
        if page != "/reports/":
            assert re.search(r"\d+(\.\d+)?\s?%|\d\.\d\d", text), page  # figures, not only headings


@override_settings(DEBUG=True)
def test_seed_demo_twice_changes_nothing(db):
    seeded("--quiet-logins")
    counts = (Conversation.objects.count(), Study.objects.count(), get_user_model().objects.count(),
              JudgeRun.objects.count(), Rating.objects.count(), LLMCacheEntry.objects.count())
    seeded("--quiet-logins")
    assert (Conversation.objects.count(), Study.objects.count(), get_user_model().objects.count(),
            JudgeRun.objects.count(), Rating.objects.count(), LLMCacheEntry.objects.count()) == counts


@override_settings(DEBUG=True)
def test_if_empty_skips_a_database_that_has_users_and_prints_no_logins(db):
    get_user_model().objects.create_user("someone", password="x")
    out = seeded("--if-empty")
    assert Conversation.objects.count() == 0
    assert "not seeded again" in out
    assert not any(password in out for _u, _r, password in DEMO_USERS)  # it created none of them


@override_settings(EVALSITE_DEMO_ALLOWED=False)
def test_seed_demo_refuses_where_demos_are_not_allowed(db):
    with pytest.raises(CommandError, match="known passwords"):
        call_command("seed_demo")


@override_settings(DEBUG=True)
def test_each_demo_login_works(db):
    seeded("--quiet-logins")
    for username, _role, _password in DEMO_USERS:
        assert login(username).get("/").status_code == 200


def test_every_demo_user_has_an_example_email_address(db):
    """Issue 28, defect 8: without addresses a newcomer could not try reminders or a password reset on the demo."""
    from annotation.demo.seed import DEMO_USERS, demo_users

    users = demo_users()
    assert {u.email for u in users.values()} == {f"{name}@example.org" for name, _, _ in DEMO_USERS}


@pytest.mark.django_db(transaction=True)
def test_the_demo_shows_a_coordinators_day(settings):
    """Issue 28: a due date, a rater's flag waiting, a reminder log and an active-sampling study."""
    from annotation.demo.seed import ACTIVE_STUDY
    from annotation.models import ActivePlan, ConversationFlag, FlagStatus
    from core.models import EmailPurpose, EmailRecord

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    seeded()
    plan = Study.objects.get(name=PLAN_STUDY)
    assert plan.due_date is not None
    assert ConversationFlag.objects.filter(study=plan, status=FlagStatus.OPEN).count() == 1
    assert EmailRecord.objects.filter(purpose=EmailPurpose.REMINDER, study_id=plan.pk).exists()
    active = Study.objects.get(name=ACTIVE_STUDY)
    assert ActivePlan.objects.filter(study=active).exists() and active.assignments.exists()
    coordinator = get_user_model().objects.get(username="coordinator")
    client = Client()
    client.force_login(coordinator)
    home = client.get("/").content.decode()
    assert 'id="dashboard"' in home and "flagged conversation" in home and ACTIVE_STUDY in home
    rater = Client()
    rater.force_login(get_user_model().objects.get(username="clinician"))
    assert "Due <strong>" in rater.get("/ratings/").content.decode()
    seeded()  # a second run changes nothing
    assert Study.objects.filter(name=ACTIVE_STUDY).count() == 1
    assert ConversationFlag.objects.filter(study=plan).count() == 1

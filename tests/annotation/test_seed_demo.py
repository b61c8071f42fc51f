"""The demo seed: one user per role, built-in content, synthetic conversations, a study."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.http import HttpRequest
from django.test import Client, override_settings

from annotation.models import MemberRole, Study
from corpus.models import Conversation, Target


@override_settings(DEBUG=True)
def test_seed_demo_creates_everything_a_newcomer_needs(db, capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    for username in ("clinician", "coordinator", "researcher", "admin"):
        assert username in out
    users = {u.username: u for u in get_user_model().objects.all()}
    assert users["admin"].is_superuser
    assert {g.name for g in users["clinician"].groups.all()} == {"clinician"}
    conversations = Conversation.objects.all()
    assert conversations.count() >= 12 and all(c.is_demo and c.metadata.get("synthetic") for c in conversations)
    assert Target.objects.count() == 3
    assert {c.persona.key for c in conversations} == set(
        f"amhart-{s}-{c}-{v}" for s in "fm" for c in ("anx", "dep") for v in ("mod", "sev")
    )
    assert all(c.integrity_ok for c in conversations)
    study = Study.objects.get(is_demo=True)
    assert study.instrument.key == "amhart" and study.section.key == "study-section"
    assert study.study_conversations.count() == conversations.count()
    assert study.memberships.filter(role=MemberRole.RATER).count() == 2


@override_settings(DEBUG=True)
def test_seed_demo_twice_changes_nothing(db):
    call_command("seed_demo", "--quiet-logins")
    counts = (Conversation.objects.count(), Study.objects.count(), get_user_model().objects.count())
    call_command("seed_demo", "--quiet-logins")
    assert (Conversation.objects.count(), Study.objects.count(), get_user_model().objects.count()) == counts


@override_settings(DEBUG=True)
def test_if_empty_skips_a_database_that_has_users(db, capsys):
    get_user_model().objects.create_user("someone", password="x")
    call_command("seed_demo", "--if-empty")
    assert Conversation.objects.count() == 0
    assert "not seeded again" in capsys.readouterr().out


@override_settings(EVALSITE_DEMO_ALLOWED=False)
def test_seed_demo_refuses_where_demos_are_not_allowed(db):
    with pytest.raises(CommandError, match="known passwords"):
        call_command("seed_demo")


@override_settings(DEBUG=True)
def test_each_demo_login_works(db):
    from annotation.management.commands.seed_demo import DEMO_USERS

    call_command("seed_demo", "--quiet-logins")
    for username, _role, password in DEMO_USERS:
        client = Client()
        # django-axes checks every authentication against a request (login throttling).
        assert client.login(request=HttpRequest(), username=username, password=password), username
        assert client.get("/").status_code == 200

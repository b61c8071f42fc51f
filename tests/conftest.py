"""The cast every test may use, and the helpers shared by the suites."""

from __future__ import annotations

import os

import pytest
from django.test import Client

from core.roles import Role

pytest_plugins = ["tests.support.fixtures"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


PASSWORD = "a-Long-test-passw0rd"


def make_user(username: str, *roles: str, **extra):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)
    for role in roles:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user


@pytest.fixture
def clinician(db):  # type: ignore[no-untyped-def]
    return make_user("clara", Role.CLINICIAN)


@pytest.fixture
def clinician2(db):  # type: ignore[no-untyped-def]
    return make_user("cyrus", Role.CLINICIAN)


@pytest.fixture
def coordinator(db):  # type: ignore[no-untyped-def]
    return make_user("cora", Role.COORDINATOR)


@pytest.fixture
def researcher(db):  # type: ignore[no-untyped-def]
    return make_user("remy", Role.RESEARCHER)


@pytest.fixture
def admin_user(db):  # type: ignore[no-untyped-def]
    return make_user("ada", Role.ADMIN, is_staff=True, is_superuser=True)


@pytest.fixture
def outsider(db):  # type: ignore[no-untyped-def]
    """A logged-in user with no role and no study: sees nothing."""
    return make_user("otto")


def client_for(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client

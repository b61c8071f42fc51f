"""Reads of the chatbots under test (unblinded)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from core.permissions import require_corpus_access
from core.visibility import visible
from corpus.models import Target


def target_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Target]:
    require_corpus_access(user)
    return visible(Target.objects.all(), user).order_by("code")

"""Reads of persona sets (unblinded: their design labels are shown)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Prefetch, QuerySet
from django.http import Http404

from core.permissions import require_corpus_access
from corpus.models import Persona, PersonaSet


def persona_set_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[PersonaSet]:
    require_corpus_access(user)
    return PersonaSet.objects.all().order_by("key", "-version")


def persona_set_get(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> PersonaSet:
    require_corpus_access(user)
    try:
        return PersonaSet.objects.prefetch_related(
            Prefetch("personas", queryset=Persona.objects.order_by("position"))
        ).get(pk=pk)
    except PersonaSet.DoesNotExist as exc:
        raise Http404("not found") from exc

"""Reads of persona sets (unblinded: their design labels are shown)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Prefetch, QuerySet
from django.http import Http404

from core.permissions import require_corpus_access
from core.visibility import visible
from corpus.models import Persona, PersonaSet


def persona_set_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[PersonaSet]:
    require_corpus_access(user)
    return visible(PersonaSet.objects.all(), user).order_by("key", "-version")


def persona_set_get(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> PersonaSet:
    require_corpus_access(user)
    try:
        return visible(PersonaSet.objects.all(), user).prefetch_related(
            Prefetch("personas", queryset=Persona.objects.order_by("position"))
        ).get(pk=pk)
    except PersonaSet.DoesNotExist as exc:
        raise Http404("not found") from exc


def persona_set_spec_document(persona_set: PersonaSet) -> dict:
    """Return a persona set in the project's own format: importing it gives the same set (same content hash)."""
    personas = []
    for persona in persona_set.personas.order_by("position"):
        entry = {**persona.profile, "key": persona.key, "name": persona.name, "design": dict(persona.design)}
        if persona.opening_message:
            entry["opening_message"] = persona.opening_message
        personas.append(entry)
    return {"key": persona_set.key, "name": persona_set.name, "description": persona_set.description,
            "format": persona_set.format, "system_prompt": persona_set.system_prompt, "personas": personas}

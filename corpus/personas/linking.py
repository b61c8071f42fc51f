"""Link conversations to personas by the name their source gives, in any order.

A transcript names its persona (VERA-MH file names: ``<id>_<Persona>_<model>_run<k>.txt``);
the conversation keeps that name in ``metadata["persona_name"]`` whether or not such a persona
exists yet. Importing or creating a persona with that name later links every waiting
conversation, and ``manage.py link_personas`` (or the button on the conversations page) does it
on demand. Names compare case-insensitively; when several persona sets hold the name, the
newest set wins (the one imported last is the one the researcher means).
"""

from __future__ import annotations

from django.db import transaction

from corpus.models import Conversation, Persona


def persona_for_name(name: str, cache: dict[str, Persona | None] | None = None) -> Persona | None:
    """Return the persona of that name in the newest persona set that has one, or None."""
    key = name.strip().casefold()
    if cache is not None and key in cache:
        return cache[key]
    persona = (
        Persona.objects.filter(name__iexact=name.strip())
        .select_related("persona_set")
        .order_by("-persona_set__created_at", "-persona_set_id")
        .first()
    )
    if cache is not None:
        cache[key] = persona
    return persona


@transaction.atomic
def conversations_link_personas() -> int:
    """Link every conversation without a persona whose source named one that now exists; return how many."""
    cache: dict[str, Persona | None] = {}
    linked = 0
    waiting = Conversation.objects.filter(persona__isnull=True, metadata__has_key="persona_name").only("id", "metadata")
    by_persona: dict[int, list[int]] = {}
    for conversation in waiting.iterator(chunk_size=500):
        name = str((conversation.metadata or {}).get("persona_name") or "")
        persona = persona_for_name(name, cache) if name.strip() else None
        if persona is not None:
            by_persona.setdefault(persona.pk, []).append(conversation.pk)
    for persona_id, ids in by_persona.items():
        linked += Conversation.objects.filter(pk__in=ids, persona__isnull=True).update(persona_id=persona_id)
    return linked


def waiting_persona_names() -> dict[str, int]:
    """Return ``{persona name: conversations waiting for it}`` (names with no persona yet)."""
    counts: dict[str, int] = {}
    for metadata in Conversation.objects.filter(persona__isnull=True, metadata__has_key="persona_name").values_list("metadata", flat=True):
        name = str((metadata or {}).get("persona_name") or "").strip()
        if name:
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))

"""Reads of conversations (unblinded: researchers, coordinators, admins), exports, selections."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Prefetch, Q, QuerySet
from django.http import Http404

from core.csvstream import stream_csv
from core.permissions import require_corpus_access
from core.visibility import visible
from corpus.errors import CorpusError
from corpus.models import Conversation, Message

# Sortable columns of the conversation list: query value -> model field.
SORTS = {"code": "code", "messages": "message_count", "created": "created_at", "id": "id"}


def conversation_list_for_user(
    user: AbstractBaseUser | AnonymousUser,
    *,
    persona_id: int | None = None,
    target_id: int | None = None,
    source: str | None = None,
    flagged: bool | None = None,
    search: str = "",
    order: str = "id",
) -> QuerySet[Conversation]:
    """Return the unblinded corpus for researchers, coordinators and admins.

    ``search`` matches every word in the code, external id, persona name or chatbot code;
    ``order`` is one of ``SORTS`` (a leading "-" for descending).
    """
    require_corpus_access(user)
    field = SORTS.get(order.lstrip("-"), "id")
    qs = visible(Conversation.objects.all(), user).select_related("persona__persona_set", "target").order_by(
        f"-{field}" if order.startswith("-") else field, "id"
    )
    for word in search.split():
        qs = qs.filter(
            Q(code__icontains=word) | Q(external_id__icontains=word) | Q(persona__name__icontains=word)
            | Q(target__code__icontains=word)
        )
    if persona_id:
        qs = qs.filter(persona_id=persona_id)
    if target_id:
        qs = qs.filter(target_id=target_id)
    if source:
        qs = qs.filter(source=source)
    if flagged is not None:
        qs = qs.filter(integrity_ok=not flagged)
    return qs


def conversation_get_for_corpus(user: AbstractBaseUser | AnonymousUser, *, code: str) -> Conversation:
    require_corpus_access(user)
    try:
        return (
            visible(Conversation.objects.all(), user).select_related("persona__persona_set", "target")
            .prefetch_related(Prefetch("messages", queryset=Message.objects.order_by("turn_index")))
            .get(code=code)
        )
    except Conversation.DoesNotExist as exc:
        raise Http404("not found") from exc


def _export_rows(qs: QuerySet[Conversation]) -> Iterator[Conversation]:
    yield from qs.prefetch_related(Prefetch("messages", queryset=Message.objects.order_by("turn_index"))).iterator(
        chunk_size=500
    )


def conversation_as_record(conversation: Conversation) -> dict:
    """Return a conversation in the project's JSONL import format (round-trips)."""
    record: dict = {"id": conversation.external_id or conversation.code}
    if conversation.persona is not None:
        record["persona_set"] = conversation.persona.persona_set.key
        record["persona"] = conversation.persona.key
    if conversation.target is not None:
        record["target"] = {
            "model": conversation.target.model,
            "code": conversation.target.code,
            "name": conversation.target.name,
        }
    if conversation.run_index is not None:
        record["run_index"] = conversation.run_index
    record["sensitive"] = conversation.sensitive
    record["messages"] = [{"role": m.role, "content": m.content} for m in conversation.messages.all()]
    record["metadata"] = {
        **conversation.metadata,
        "evalsite_code": conversation.code,
        "integrity_ok": conversation.integrity_ok,
        "integrity_flags": conversation.integrity_flags,
    }
    return record


def conversations_export_jsonl(qs: QuerySet[Conversation]) -> Iterator[str]:
    for conversation in _export_rows(qs):
        yield json.dumps(conversation_as_record(conversation), ensure_ascii=False) + "\n"


CSV_COLUMNS = [
    "conversation_code",
    "external_id",
    "persona_set",
    "persona",
    "target_code",
    "target_model",
    "source",
    "run_index",
    "integrity_ok",
    "turn_index",
    "role",
    "content",
]


def conversations_export_csv(qs: QuerySet[Conversation]) -> Iterator[str]:
    """Yield CSV text, one row per message (long format), header first."""
    return stream_csv(CSV_COLUMNS, _message_rows(qs))


def _message_rows(qs: QuerySet[Conversation]) -> Iterator[list]:
    for c in _export_rows(qs):
        for m in c.messages.all():
            yield [
                c.code,
                c.external_id,
                c.persona.persona_set.key if c.persona else "",
                c.persona.key if c.persona else "",
                c.target.code if c.target else "",
                c.target.model if c.target else "",
                c.source,
                "" if c.run_index is None else c.run_index,
                "" if c.integrity_ok is None else c.integrity_ok,
                m.turn_index,
                m.role,
                m.content,
            ]


def conversation_ids_resolve(ids: list[str], *, user: AbstractBaseUser | AnonymousUser | None = None) -> tuple[dict[str, list[int]], list[str]]:
    """Return ``{id as given: conversation ids}`` for app codes and source (external) ids.

    A code always wins; a source id may be written with a leading ``#`` (as in the published
    VERA-MH ratings). Ids that match nothing are returned second, in the order given. With a
    ``user``, a conversation they may not read (core.visibility) matches nothing, like an unknown one.
    """
    wanted = {i: i.strip().lstrip("#").strip() for i in ids if i.strip()}
    readable = Conversation.objects.all() if user is None else visible(Conversation.objects.all(), user)
    by_code = dict(readable.filter(code__in=set(wanted.values())).values_list("code", "id"))
    by_source: dict[str, list[int]] = {}
    for external_id, pk in (
        readable.filter(external_id__in=set(wanted.values()) - set(by_code))
        .order_by("id")
        .values_list("external_id", "id")
    ):
        by_source.setdefault(external_id, []).append(pk)
    found: dict[str, list[int]] = {}
    unknown: list[str] = []
    for given, clean in wanted.items():
        if clean in by_code:
            found[given] = [by_code[clean]]
        elif clean in by_source:
            found[given] = by_source[clean]
        else:
            unknown.append(given)
    return found, unknown


def conversation_ids_for_codes(ids: list[str], *, user: AbstractBaseUser | AnonymousUser | None = None) -> dict[str, int]:
    """Return ``{id: conversation id}`` for app codes or source ids; raise CorpusError naming any id that matches nothing or several."""
    found, unknown = conversation_ids_resolve(ids, user=user)
    problems = []
    if unknown:
        problems.append(f"no conversation has the code or source id {', '.join(repr(u) for u in unknown[:20])}" + (f" (and {len(unknown) - 20} more)" if len(unknown) > 20 else ""))
    several = [given for given, pks in found.items() if len(pks) > 1]
    if several:
        problems.append(f"source id {', '.join(repr(s) for s in several[:20])} matches several conversations; use their codes")
    if problems:
        raise CorpusError("; ".join(problems))
    return {given: pks[0] for given, pks in found.items()}


def conversation_ids_for_selection(
    *,
    persona_ids: list[int] | None = None,
    target_ids: list[int] | None = None,
    batch_ids: list[int] | None = None,
    codes: list[str] | None = None,
    keep_codes: list[str] | None = None,
    exclude_flagged: bool = True,
    sample_size: int | None = None,
    seed: int | None = None,
    user: AbstractBaseUser | AnonymousUser | None = None,
) -> tuple[list[int], dict]:
    """Return conversation ids matching a study's selection, and the selection as recorded.

    ``codes`` are app codes (``C-XXXXXX``) or source ids of imported conversations (e.g.
    VERA-MH's 6-hex ids); one that matches nothing raises ``CorpusError`` naming it, never
    silently dropped. Flagged conversations are left out (and listed in the record) unless
    ``exclude_flagged`` is off or they are in ``keep_codes`` (kept on purpose).
    A random sample is drawn with ``numpy.random.default_rng(seed)`` from the matches sorted by
    id, so the same seed and the same corpus give the same sample. With a ``user`` (None: an
    operator's command), only the conversations they may read (core.visibility) are matched.
    """
    import numpy as np

    qs = Conversation.objects.all() if user is None else visible(Conversation.objects.all(), user)
    if persona_ids:
        qs = qs.filter(persona_id__in=persona_ids)
    if target_ids:
        qs = qs.filter(target_id__in=target_ids)
    if batch_ids:
        qs = qs.filter(metadata__batch_id__in=batch_ids)
    if codes:
        qs = qs.filter(pk__in=set(conversation_ids_for_codes(codes, user=user).values()))
    kept: set[int] = set(conversation_ids_for_codes(keep_codes, user=user).values()) if keep_codes else set()
    left_out: list[str] = []
    kept_flagged: list[str] = []
    if exclude_flagged:
        flagged = dict(qs.filter(integrity_ok=False).values_list("id", "code"))
        kept_flagged = sorted(code for pk, code in flagged.items() if pk in kept)
        left_out = sorted(code for pk, code in flagged.items() if pk not in kept)
        qs = qs.exclude(pk__in=[pk for pk in flagged if pk not in kept])
    ids = sorted(qs.values_list("id", flat=True))
    record: dict = {
        "persona_ids": persona_ids or [],
        "target_ids": target_ids or [],
        "batch_ids": batch_ids or [],
        "codes": codes or [],
        "exclude_flagged": exclude_flagged,
        "matched": len(ids),
    }
    if exclude_flagged:
        record["left_out_flagged"] = left_out
    if keep_codes:
        record["keep_codes"] = keep_codes
        record["kept_flagged"] = kept_flagged
    if sample_size is not None and sample_size < len(ids):
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        rng = np.random.default_rng(seed)
        ids = sorted(int(i) for i in rng.choice(ids, size=sample_size, replace=False))
        record.update({"sample_size": sample_size, "seed": seed})
    return ids, record

"""Writes of conversations: import (all-or-nothing), integrity checks, the demo set."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from core.codes import new_code
from core.problems import ImportRejected, Problem
from corpus.conversations.content_screen import screen_transcript
from corpus.conversations.formats import ConversationRecord, read_jsonl, read_vera_files
from corpus.conversations.integrity import check_integrity, flags_pass
from corpus.conversations.role_break import check_role_break
from corpus.models import Conversation, Message, Persona, PersonaSet, Target
from corpus.personas.linking import persona_for_name
from corpus.targets.services import target_code_unique

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin"

def _unique_conversation_code(taken: set[str]) -> str:
    while True:
        code = new_code("C-")
        if code not in taken and not Conversation.objects.filter(code=code).exists():
            taken.add(code)
            return code


@dataclass
class ConversationImportResult:
    created: list[Conversation]
    duplicates: list[str]  # external ids already stored (same content hash)
    total: int
    dry_run: bool

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        text = (
            f"{verb} {len(self.created) if not self.dry_run else self.total - len(self.duplicates)} "
            f"conversation(s); {len(self.duplicates)} already present (same content), skipped"
        )
        flagged = self.flagged_reasons()
        if flagged:
            n = sum(flagged.values())
            reasons = "; ".join(f"{reason} ({count})" for reason, count in flagged.most_common(3))
            text += (f"; {n} flagged by the integrity checks ({reasons}): a new study leaves flagged conversations out "
                     "unless told to keep them")
        return text

    def flagged_reasons(self) -> Counter[str]:
        """Return how many imported conversations the integrity checks flagged, per reason (issue 28)."""
        reasons: Counter[str] = Counter()
        for conversation in self.created:
            if conversation.integrity_ok is False:
                for flag in conversation.integrity_flags or ["flagged"]:
                    reasons[str(flag.get("code") or flag.get("message")) if isinstance(flag, dict) else str(flag)] += 1
        return reasons


def conversations_import(
    *,
    files: list[tuple[str, str]],
    fmt: str = "auto",
    created_by: AbstractBaseUser | None = None,
    dry_run: bool = False,
    mark_demo: bool = False,
    keep_codes: bool = False,
) -> ConversationImportResult:
    """Import conversations from JSONL files or VERA-MH transcript files, all or nothing.

    ``files`` holds (relative path, text) pairs. Every problem in every file is collected
    first; if there is any, ``ImportRejected`` is raised and nothing is written.
    ``keep_codes``: a conversation keeps the code its export wrote (``metadata.evalsite_code``,
    a publication bundle), so every file that names it by code still does; a code another
    conversation already holds is a problem.
    """
    if fmt == "auto":
        fmt = "jsonl" if any(p.lower().endswith((".jsonl", ".json")) for p, _ in files) else "vera-mh"
    if fmt == "jsonl":
        records, problems = [], []
        for path, text in files:
            r, p = read_jsonl(text, path)
            records += r
            problems += p
    elif fmt == "vera-mh":
        records, problems = read_vera_files(files)
    else:
        raise ImportRejected([Problem(f"unknown format '{fmt}'; use 'jsonl' or 'vera-mh'", "")])
    personas = _resolve_personas(records, problems)
    hashes = {id(r): r.content_hash() for r in records}
    if keep_codes:
        _check_kept_codes(records, hashes, problems)
    if problems:
        raise ImportRejected(problems)
    existing = set(
        Conversation.objects.filter(content_hash__in=set(hashes.values())).values_list("content_hash", flat=True)
    )
    fresh: list[ConversationRecord] = []
    duplicates: list[str] = []
    for record in records:
        h = hashes[id(record)]
        if h in existing:
            duplicates.append(record.external_id)
        else:
            existing.add(h)
            fresh.append(record)
    if dry_run:
        return ConversationImportResult([], duplicates, len(records), True)
    created = _store_records(fresh, personas, hashes, created_by, mark_demo, keep_codes)
    return ConversationImportResult(created, duplicates, len(records), False)


def _check_kept_codes(records: list[ConversationRecord], hashes: dict[int, str], problems: list[Problem]) -> None:
    """Add a problem for each kept code that is missing, malformed, repeated or held by another conversation."""
    wanted: dict[str, ConversationRecord] = {}
    for record in records:
        code = record.metadata.get("evalsite_code")
        if not isinstance(code, str) or not CODE_RE.match(code):
            problems.append(Problem("metadata.evalsite_code must be a conversation code (C-XXXXXX) to keep it",
                                    record.file, record.line, "metadata.evalsite_code"))
        elif code in wanted:
            problems.append(Problem(f"code '{code}' is given twice (first on line {wanted[code].line})",
                                    record.file, record.line, "metadata.evalsite_code"))
        else:
            wanted[code] = record
    for code, content_hash in Conversation.objects.filter(code__in=list(wanted)).values_list("code", "content_hash"):
        record = wanted[code]
        if content_hash != hashes[id(record)]:
            problems.append(Problem(f"code '{code}' belongs to another conversation in this database",
                                    record.file, record.line, "metadata.evalsite_code"))


CODE_RE = re.compile(r"^C-[A-Za-z0-9]{4,12}$")


def _resolve_personas(records: list[ConversationRecord], problems: list[Problem]) -> dict[int, Persona | None]:
    """Map each record to its Persona; an unknown persona key is a problem, a VERA name is optional."""
    resolved: dict[int, Persona | None] = {}
    cache: dict[tuple[str | None, str], list[Persona]] = {}
    by_name: dict[str, Persona | None] = {}
    for record in records:
        if record.persona:
            cache_key = (record.persona_set, record.persona)
            if cache_key not in cache:
                qs = Persona.objects.filter(key=record.persona).select_related("persona_set")
                if record.persona_set:
                    qs = qs.filter(persona_set__key=record.persona_set)
                # Newest version of each set first; one persona per set.
                found: dict[str, Persona] = {}
                for persona in qs.order_by("persona_set__key", "-persona_set__version"):
                    found.setdefault(persona.persona_set.key, persona)
                cache[cache_key] = list(found.values())
            matches = cache[cache_key]
            if not matches:
                where = f" in persona set '{record.persona_set}'" if record.persona_set else ""
                problems.append(Problem(f"unknown persona '{record.persona}'{where}; import the persona set first", record.file, record.line, "persona"))
            elif len(matches) > 1:
                sets = ", ".join(sorted(p.persona_set.key for p in matches))
                problems.append(Problem(f"persona '{record.persona}' exists in several sets ({sets}); add 'persona_set'", record.file, record.line, "persona_set"))
            else:
                resolved[id(record)] = matches[0]
        elif record.persona_name:
            # Any order: a persona imported later links the conversation then (personas/linking).
            resolved[id(record)] = persona_for_name(record.persona_name, by_name)
    return resolved


def _target_for(record: ConversationRecord, cache: dict[str, Target]) -> Target | None:
    model = (record.target_model or "").strip()
    code = (record.target_code or "").strip()
    if not model and not code:
        return None
    cache_key = f"{code}|{model}"
    if cache_key in cache:
        return cache[cache_key]
    target = None
    if code:
        target = Target.objects.filter(code=code).first()
    if target is None and model:
        target = Target.objects.filter(model=model).order_by("id").first()
    if target is None:
        target = Target.objects.create(
            code=code or target_code_unique(),
            name=record.target_name or "",
            model=model or code,
            kind=Target.Kind.DEMO if model.startswith("demo/") else Target.Kind.LITELLM,
        )
    cache[cache_key] = target
    return target


@transaction.atomic
def _store_records(
    records: list[ConversationRecord],
    personas: dict[int, Persona | None],
    hashes: dict[int, str],
    created_by: AbstractBaseUser | None,
    mark_demo: bool,
    keep_codes: bool = False,
) -> list[Conversation]:
    targets: dict[str, Target] = {}
    taken: set[str] = set()
    created: list[Conversation] = []
    user = created_by if getattr(created_by, "pk", None) else None
    waiting = _placeholders_by_external_id([r.external_id for r in records])
    for record in records:
        persona = personas.get(id(record))
        metadata = dict(record.metadata)
        if record.persona_name:
            metadata.setdefault("persona_name", record.persona_name)
        is_demo = mark_demo or bool(metadata.get("demo"))
        # An explicit "sensitive": true in the file is a person's mark; the screen reads the text.
        marked = record.sensitive is True
        sensitive = marked or is_sensitive(record.messages)
        placeholder = waiting.pop(record.external_id, None)
        if placeholder is not None:
            created.append(_fill_placeholder(placeholder, record, persona, metadata, sensitive, hashes[id(record)], targets))
            continue
        kept = metadata.get("evalsite_code") if keep_codes else None
        conversation = Conversation.objects.create(
            code=kept or _unique_conversation_code(taken),
            external_id=record.external_id,
            persona=persona,
            target=_target_for(record, targets),
            source=Conversation.Source.IMPORTED,
            run_index=record.run_index,
            metadata=metadata,
            sensitive=sensitive,
            content_warning_marked=marked,
            is_demo=is_demo,
            content_hash=hashes[id(record)],
            message_count=len(record.messages),
            created_by=user,
        )
        Message.objects.bulk_create(
            Message(conversation=conversation, turn_index=i, role=role, content=content)
            for i, (role, content) in enumerate(record.messages)
        )
        _apply_integrity(conversation, record.messages, persona)
        created.append(conversation)
    return created


TRANSCRIPT_MISSING = "transcript_missing"


def _placeholders_by_external_id(external_ids: list[str]) -> dict[str, Conversation]:
    """Return the placeholders (no transcript yet) these source ids would fill; ambiguous ids fill none."""
    found: dict[str, list[Conversation]] = {}
    for conversation in Conversation.objects.filter(
        external_id__in=set(external_ids), message_count=0, metadata__transcript_missing=True
    ).select_for_update():
        found.setdefault(conversation.external_id, []).append(conversation)
    return {x: rows[0] for x, rows in found.items() if len(rows) == 1}


def _fill_placeholder(
    conversation: Conversation,
    record: ConversationRecord,
    persona: Persona | None,
    metadata: dict,
    sensitive: bool,
    content_hash: str,
    targets: dict[str, Target],
) -> Conversation:
    """Give a placeholder its transcript: the conversation (and its study links) stays the same row."""
    kept = {k: v for k, v in (conversation.metadata or {}).items() if k != TRANSCRIPT_MISSING}
    conversation.metadata = {**kept, **metadata, "placeholder_filled": True}
    conversation.persona = persona or conversation.persona
    conversation.target = _target_for(record, targets) or conversation.target
    conversation.run_index = record.run_index
    conversation.sensitive = sensitive or conversation.content_warning_marked  # from its own words now
    conversation.content_hash = content_hash
    conversation.message_count = len(record.messages)
    conversation.save()
    Message.objects.bulk_create(
        Message(conversation=conversation, turn_index=i, role=role, content=content)
        for i, (role, content) in enumerate(record.messages)
    )
    _apply_integrity(conversation, record.messages, conversation.persona)
    return conversation


@transaction.atomic
def conversation_placeholders_create(
    *, external_ids: list[str], metadata: dict[str, dict] | None = None, source: str = ""
) -> list[Conversation]:
    """Create a conversation without transcript for each source id that matches none.

    Ratings can arrive before (or without) their transcripts: the published VERA-MH study has
    ratings for 90 conversations and transcripts for fewer. A placeholder carries the source id,
    ``metadata["transcript_missing"]`` and what the ratings file says about it (persona name,
    models); importing the transcript later fills the same row, so studies, ratings and judge
    labels attached to it stay attached. Raters are never assigned a placeholder in the app.
    """
    metadata = metadata or {}
    existing = set(Conversation.objects.filter(external_id__in=set(external_ids)).values_list("external_id", flat=True))
    taken: set[str] = set()
    created = []
    for external_id in dict.fromkeys(external_ids):
        if external_id in existing:
            continue
        payload = {**metadata.get(external_id, {}), TRANSCRIPT_MISSING: True}
        if source:
            payload["placeholder_source"] = source
        created.append(
            Conversation.objects.create(
                code=_unique_conversation_code(taken),
                external_id=external_id,
                source=Conversation.Source.IMPORTED,
                metadata=payload,
                content_hash=hashlib.sha256(f"placeholder:{external_id}".encode()).hexdigest(),
                message_count=0,
                sensitive=True,  # unknown content in a suicide-risk study: warn first
            )
        )
    return created


@transaction.atomic
def conversations_metadata_update(*, updates: dict[int, dict]) -> int:
    """Merge ``{conversation id: {key: value}}`` into the conversations' metadata; return how many changed."""
    changed = 0
    for conversation in Conversation.objects.filter(pk__in=list(updates)).select_for_update():
        merged = {**(conversation.metadata or {}), **updates[conversation.pk]}
        if merged != conversation.metadata:
            conversation.metadata = merged
            conversation.save(update_fields=["metadata"])
            changed += 1
    return changed


def is_sensitive(messages: list[tuple[str, str]]) -> bool:
    """Return whether the transcript's own words call for a suicide/self-harm content warning.

    Only the text decides (and, on top, a coordinator's mark: ``content_warning_marked``):
    never the persona's design, which raters must not be able to infer.
    """
    return screen_transcript(content for _, content in messages).matched


@transaction.atomic
def conversation_content_warning_mark(*, conversation_id: int, marked: bool, actor: AbstractBaseUser, reason: str = "") -> Conversation:
    """Mark (or unmark) a conversation as hard content; raters then see the warning first.

    The warning shows when the transcript screen matches or a person marked it; removing a mark
    never hides a warning the screen asks for.
    """
    conversation = Conversation.objects.select_for_update(of=("self",)).get(pk=conversation_id)
    texts = conversation.messages.order_by("turn_index").values_list("role", "content")
    conversation.content_warning_marked = marked
    conversation.content_warning_marked_by = actor if marked else None
    conversation.content_warning_marked_at = timezone.now() if marked else None
    conversation.content_warning_reason = reason.strip()[:300] if marked else ""
    conversation.sensitive = marked or is_sensitive(list(texts))
    conversation.save(update_fields=[
        "content_warning_marked", "content_warning_marked_by", "content_warning_marked_at",
        "content_warning_reason", "sensitive",
    ])
    return conversation


def _apply_integrity(conversation: Conversation, messages: list[tuple[str, str]], persona: Persona | None) -> None:
    opening = None
    if persona is not None and persona.persona_set.format == PersonaSet.Format.AMHART:
        opening = persona.opening_message or None
    expected = conversation.metadata.get("expected_messages")
    flags = check_integrity(
        messages,
        opening_message=opening,
        expected_count=expected if isinstance(expected, int) else None,
    )
    flags += check_role_break(messages)
    conversation.integrity_flags = [f.as_dict() for f in flags]
    conversation.integrity_ok = flags_pass(flags)
    conversation.save(update_fields=["integrity_flags", "integrity_ok"])


@transaction.atomic
def conversation_check_structure(*, conversation_id: int) -> Conversation:
    """Re-run the structural checks on one stored conversation and record the flags.

    A simulated conversation is also checked against its batch cell: see
    ``simulation.run_checks.conversation_check_integrity``.
    """
    conversation = (
        Conversation.objects.select_for_update(of=("self",))
        .select_related("persona__persona_set")
        .get(pk=conversation_id)
    )
    messages = list(conversation.messages.order_by("turn_index").values_list("role", "content"))
    _apply_integrity(conversation, messages, conversation.persona)
    return conversation


def demo_conversations_load(*, created_by: AbstractBaseUser | None = None) -> ConversationImportResult:
    """Import the team-written synthetic demo conversations (idempotent)."""
    path = BUILTIN_DIR / "demo_conversations.jsonl"
    return conversations_import(
        files=[(path.name, path.read_text(encoding="utf-8"))], fmt="jsonl", created_by=created_by, mark_demo=True
    )

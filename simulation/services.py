"""Writes for personas, targets and conversations. Imports are all-or-nothing."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from annotation.problems import ImportRejected, Problem
from annotation.yamlspec import canonical_hash

from .conversation_io import ConversationRecord, read_jsonl, read_vera_files
from .integrity import check_integrity
from .models import Conversation, Message, Persona, PersonaSet, Target
from .persona_spec import PersonaSetSpec, parse_persona_set_spec

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are read aloud

# Conservative markers of suicide or self-harm content; a hit shows raters a content warning.
SENSITIVE_RE = re.compile(
    r"suicid|kill (?:my|him|her)self|killing myself|end (?:my|it all)|ending things|self[- ]?harm|"
    r"hurt(?:ing)? myself|cut(?:ting)? myself|better off (?:dead|without me|gone)|"
    r"want(?:ed)? to die|wish i (?:was|were) dead|not (?:be|being) here anymore|overdose|unalive|\bkms\b|988|"
    r"not (?:wanting|want) to (?:be alive|live|wake up)|(?:manage|be) (?:fine |better )?without me|"
    r"(?:crisis|suicide) (?:line|hotline|lifeline)|no reason to live",
    re.IGNORECASE,
)


class SimulationError(Exception):
    """A request the simulation services refuse (mapped to 400/409 at the edge)."""


def new_code(prefix: str, length: int = 6) -> str:
    return prefix + "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def _unique_conversation_code(taken: set[str]) -> str:
    while True:
        code = new_code("C-")
        if code not in taken and not Conversation.objects.filter(code=code).exists():
            taken.add(code)
            return code


# --- personas -----------------------------------------------------------------------------


@transaction.atomic
def persona_set_create_from_spec(
    *, spec: PersonaSetSpec, created_by: AbstractBaseUser | None = None, is_builtin: bool = False
) -> tuple[PersonaSet, bool]:
    """Store a persona set as a new version; an identical set already stored is returned."""
    content_hash = canonical_hash(spec.hash_payload())
    existing = PersonaSet.objects.filter(key=spec.key, content_hash=content_hash).first()
    if existing is not None:
        return existing, False
    version = (PersonaSet.objects.filter(key=spec.key).aggregate(v=Max("version"))["v"] or 0) + 1
    persona_set = PersonaSet.objects.create(
        key=spec.key,
        version=version,
        name=spec.name,
        description=spec.description,
        format=spec.format,
        system_prompt=spec.system_prompt,
        content_hash=content_hash,
        is_builtin=is_builtin,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )
    Persona.objects.bulk_create(
        Persona(persona_set=persona_set, position=position, **fields)
        for position, fields in enumerate(spec.personas)
    )
    return persona_set, True


@dataclass
class PersonaImportResult:
    persona_set: PersonaSet | None
    created: bool
    total_rows: int
    imported_rows: int
    skipped: list[Problem] = field(default_factory=list)


def personas_import(
    *,
    text: str,
    file: str,
    fmt: str = "auto",
    key: str | None = None,
    name: str | None = None,
    valid_only: bool = False,
    dry_run: bool = False,
    created_by: AbstractBaseUser | None = None,
) -> PersonaImportResult:
    """Import a persona set: the project's YAML/JSON format or a VERA-MH personas TSV.

    A VERA-MH file with invalid rows is rejected whole unless ``valid_only`` is set, in which
    case the valid rows are imported and the invalid ones are returned as ``skipped``.
    """
    if fmt == "auto":
        fmt = "vera-mh" if Path(file).suffix.lower() in (".tsv", ".txt") else "yaml"
    skipped: list[Problem] = []
    if fmt == "vera-mh":
        from .vera_personas import parse_personas_tsv

        parsed = parse_personas_tsv(text, file)
        if parsed.problems and (not valid_only or not parsed.rows):
            raise ImportRejected(parsed.problems)
        skipped = list(parsed.problems)
        spec = PersonaSetSpec(
            key=key or "vera-mh-personas",
            name=name or "VERA-MH personas",
            description=f"Imported from {Path(file).name}"
            + (f"; {len(skipped)} problem(s) in skipped rows" if skipped else ""),
            format=PersonaSet.Format.VERA_MH,
            system_prompt="",
            personas=tuple(_vera_persona_fields(p) for p in parsed.rows),
        )
        total = parsed.total_rows
    elif fmt in ("yaml", "json"):
        spec = parse_persona_set_spec(text, file)
        total = len(spec.personas)
    else:
        raise ImportRejected([Problem(f"unknown format '{fmt}'; use 'yaml', 'json' or 'vera-mh'", file)])
    if dry_run:
        return PersonaImportResult(None, False, total, len(spec.personas), skipped)
    persona_set, created = persona_set_create_from_spec(spec=spec, created_by=created_by)
    return PersonaImportResult(persona_set, created, total, len(spec.personas), skipped)


def _vera_persona_fields(persona: Any) -> dict[str, Any]:
    # The profile keeps every cell by its column header, as VERA-MH's persona prompt uses them;
    # the design labels (risk, disclosure...) are the short categories raters must never see.
    return {
        "key": persona.name,
        "name": persona.name,
        "design": persona.design_labels(),
        "profile": persona.prompt_fields(),
        "opening_message": persona.seed_phrase,
    }


def builtin_personas_load() -> PersonaSet:
    """Create (or find) the eight AMHART adolescent persona cards."""
    path = BUILTIN_DIR / "amhart_personas.yaml"
    spec = parse_persona_set_spec(path.read_text(encoding="utf-8"), path.name)
    persona_set, _ = persona_set_create_from_spec(spec=spec, is_builtin=True)
    return persona_set


# --- conversations ------------------------------------------------------------------------


@dataclass
class ConversationImportResult:
    created: list[Conversation]
    duplicates: list[str]  # external ids already stored (same content hash)
    total: int
    dry_run: bool

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        return (
            f"{verb} {len(self.created) if not self.dry_run else self.total - len(self.duplicates)} "
            f"conversation(s); {len(self.duplicates)} already present (same content), skipped"
        )


def conversations_import(
    *,
    files: list[tuple[str, str]],
    fmt: str = "auto",
    created_by: AbstractBaseUser | None = None,
    dry_run: bool = False,
    mark_demo: bool = False,
) -> ConversationImportResult:
    """Import conversations from JSONL files or VERA-MH transcript files, all or nothing.

    ``files`` holds (relative path, text) pairs. Every problem in every file is collected
    first; if there is any, ``ImportRejected`` is raised and nothing is written.
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
    if problems:
        raise ImportRejected(problems)
    hashes = {id(r): r.content_hash() for r in records}
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
    created = _store_records(fresh, personas, hashes, created_by, mark_demo)
    return ConversationImportResult(created, duplicates, len(records), False)


def _resolve_personas(records: list[ConversationRecord], problems: list[Problem]) -> dict[int, Persona | None]:
    """Map each record to its Persona; an unknown persona key is a problem, a VERA name is optional."""
    resolved: dict[int, Persona | None] = {}
    cache: dict[tuple[str | None, str], list[Persona]] = {}
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
            match = (
                Persona.objects.filter(name__iexact=record.persona_name, persona_set__format=PersonaSet.Format.VERA_MH)
                .order_by("-persona_set__version")
                .first()
            )
            resolved[id(record)] = match
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
            code=code or _unique_target_code(),
            name=record.target_name or "",
            model=model or code,
            kind=Target.Kind.DEMO if model.startswith("demo/") else Target.Kind.LITELLM,
        )
    cache[cache_key] = target
    return target


def _unique_target_code() -> str:
    while True:
        code = new_code("T-", 4)
        if not Target.objects.filter(code=code).exists():
            return code


@transaction.atomic
def _store_records(
    records: list[ConversationRecord],
    personas: dict[int, Persona | None],
    hashes: dict[int, str],
    created_by: AbstractBaseUser | None,
    mark_demo: bool,
) -> list[Conversation]:
    targets: dict[str, Target] = {}
    taken: set[str] = set()
    created: list[Conversation] = []
    user = created_by if getattr(created_by, "pk", None) else None
    for record in records:
        persona = personas.get(id(record))
        metadata = dict(record.metadata)
        if record.persona_name:
            metadata.setdefault("persona_name", record.persona_name)
        is_demo = mark_demo or bool(metadata.get("demo"))
        sensitive = record.sensitive
        if sensitive is None:
            sensitive = is_sensitive(record.messages, persona)
        conversation = Conversation.objects.create(
            code=_unique_conversation_code(taken),
            external_id=record.external_id,
            persona=persona,
            target=_target_for(record, targets),
            source=Conversation.Source.IMPORTED,
            run_index=record.run_index,
            metadata=metadata,
            sensitive=sensitive,
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


def is_sensitive(messages: list[tuple[str, str]], persona: Persona | None) -> bool:
    """Return whether raters should see a suicide/self-harm content warning first."""
    if persona is not None:
        design = {str(k).lower(): str(v).lower() for k, v in persona.design.items()}
        risk = design.get("risk_short") or design.get("risk") or ""
        if risk and risk not in ("none", ""):
            return True
        if (persona.profile or {}).get("safety_cues"):
            return True
    return any(SENSITIVE_RE.search(content) for _, content in messages)


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
    conversation.integrity_flags = [f.as_dict() for f in flags]
    conversation.integrity_ok = not flags
    conversation.save(update_fields=["integrity_flags", "integrity_ok"])


@transaction.atomic
def conversation_check_integrity(*, conversation_id: int) -> Conversation:
    """Re-run the structural checks on one stored conversation and record the flags."""
    conversation = (
        Conversation.objects.select_for_update(of=("self",))
        .select_related("persona__persona_set")
        .get(pk=conversation_id)
    )
    run = getattr(conversation, "simulation_run", None) if conversation.source == Conversation.Source.SIMULATED else None
    if run is not None:
        # A simulated conversation is checked against its batch cell (and the role-slide check).
        from .run_checks import simulated_run_flags

        flags = simulated_run_flags(run)
        conversation.integrity_flags = [f.as_dict() for f in flags]
        conversation.integrity_ok = not flags
        conversation.save(update_fields=["integrity_flags", "integrity_ok"])
        return conversation
    messages = list(conversation.messages.order_by("turn_index").values_list("role", "content"))
    _apply_integrity(conversation, messages, conversation.persona)
    return conversation


def demo_conversations_load(*, created_by: AbstractBaseUser | None = None) -> ConversationImportResult:
    """Import the team-written synthetic demo conversations (idempotent)."""
    path = BUILTIN_DIR / "demo_conversations.jsonl"
    return conversations_import(
        files=[(path.name, path.read_text(encoding="utf-8"))], fmt="jsonl", created_by=created_by, mark_demo=True
    )

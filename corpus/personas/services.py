"""Writes of persona sets: import (the project's YAML/JSON or a VERA-MH TSV) and the built-in cards."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from core.problems import ImportRejected, Problem
from core.yamlspec import canonical_hash
from corpus.models import Persona, PersonaSet
from corpus.personas.linking import conversations_link_personas
from corpus.personas.spec import PersonaSetSpec, parse_persona_set_spec

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin"


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
    linked: int = 0  # waiting conversations now linked to a persona of this set


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
        from corpus.personas.vera import parse_personas_tsv

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
    linked = conversations_link_personas()
    return PersonaImportResult(persona_set, created, total, len(spec.personas), skipped, linked)


def personas_from_design(
    *, key: str, name: str, designs: dict[str, dict[str, str]], description: str = "",
    created_by: AbstractBaseUser | None = None,
) -> PersonaImportResult:
    """Store personas known only by name and design labels (e.g. from a ratings file); link waiting conversations.

    ``designs`` maps a persona name to its design labels (``risk``, ``disclosure``...). The
    set is versioned like any import: the same content returns the stored version.
    """
    from django.utils.text import slugify

    spec = PersonaSetSpec(
        key=key,
        name=name,
        description=description,
        format=PersonaSet.Format.CUSTOM,
        system_prompt="",
        personas=tuple(
            {"key": slugify(persona) or f"persona-{i}", "name": persona, "design": dict(design), "profile": {}, "opening_message": ""}
            for i, (persona, design) in enumerate(sorted(designs.items()))
        ),
    )
    persona_set, created = persona_set_create_from_spec(spec=spec, created_by=created_by)
    linked = conversations_link_personas()
    return PersonaImportResult(persona_set, created, len(designs), len(designs), [], linked)


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

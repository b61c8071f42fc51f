"""Writes for instruments and studies. Every function here is the only way to change its rows."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from core.problems import ImportRejected, Problem
from core.yamlspec import canonical_hash
from corpus.instruments.flow import Flow
from corpus.instruments.spec import InstrumentSpec, parse_instrument_spec
from corpus.models import Instrument, InstrumentKind, Item, Scale

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin"


def _next_version(key: str) -> int:
    current = Instrument.objects.filter(key=key).aggregate(v=Max("version"))["v"]
    return (current or 0) + 1


@transaction.atomic
def instrument_create_from_spec(
    *, spec: InstrumentSpec, created_by: AbstractBaseUser | None = None, is_builtin: bool = False
) -> tuple[Instrument, bool]:
    """Store a validated spec as a new instrument version; reuse an identical existing one.

    Returns ``(instrument, created)``. An instrument version never changes after creation, so
    studies that used it keep exactly what their raters saw.
    """
    content_hash = canonical_hash(spec.hash_payload())
    existing = Instrument.objects.filter(key=spec.key, content_hash=content_hash).first()
    if existing is not None:
        return existing, False
    instrument = Instrument.objects.create(
        key=spec.key,
        version=_next_version(spec.key),
        name=spec.name,
        kind=spec.kind,
        description=spec.description,
        source=spec.source,
        flow=spec.flow,
        na_labels=spec.effective_na_labels(),
        content_hash=content_hash,
        is_builtin=is_builtin,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )
    if spec.kind == InstrumentKind.FLOW and spec.flow is not None:
        _create_flow_items(instrument, Flow.from_dict(spec.flow))
    else:
        Item.objects.bulk_create(
            Item(instrument=instrument, position=position, **fields)
            for position, fields in enumerate(spec.items)
        )
    return instrument, True


def _create_flow_items(instrument: Instrument, flow: Flow) -> None:
    Item.objects.bulk_create(
        Item(
            instrument=instrument,
            key=question.id,
            position=position,
            number=question.id,
            domain=question.dimension,
            text=question.text,
            scale=Scale.FLOW_QUESTION,
            severity=question.severity or "",
            risk_type=question.risk_type or "",
            examples=question.examples or "",
            options=[{"label": o.label, "goto": o.goto} for o in question.options],
            help={"guidance": question.examples} if question.examples else {},
            required=False,
        )
        for position, question in enumerate(flow.questions)
    )


def instrument_import(
    *,
    text: str,
    file: str,
    fmt: str = "auto",
    key: str | None = None,
    name: str | None = None,
    created_by: AbstractBaseUser | None = None,
    dry_run: bool = False,
) -> tuple[Instrument | None, bool]:
    """Import an instrument file: the project's YAML/JSON format or a VERA-MH rubric TSV.

    Raises ``ImportRejected`` with every problem; writes nothing on any problem or on dry run.
    """
    fmt = _detect_format(file, fmt)
    if fmt == "vera-mh":
        from corpus.instruments.vera_rubric import parse_rubric_tsv

        flow = parse_rubric_tsv(text, file)
        spec = InstrumentSpec(
            key=key or "vera-mh",
            name=name or "VERA-MH question flow",
            kind=InstrumentKind.FLOW,
            description="Question-flow rubric in the VERA-MH form, imported from " + Path(file).name,
            source=Path(file).name,
            items=(),
            flow=flow.to_dict(),
        )
    elif fmt == "yaml":
        spec = parse_instrument_spec(text, file)
    else:
        raise ImportRejected([Problem(f"unknown format '{fmt}'; use 'yaml', 'json' or 'vera-mh'", file)])
    if dry_run:
        return None, False
    return instrument_create_from_spec(spec=spec, created_by=created_by)


def _detect_format(file: str, fmt: str) -> str:
    if fmt in ("yaml", "json"):
        return "yaml"
    if fmt != "auto":
        return fmt
    suffix = Path(file).suffix.lower()
    if suffix in (".tsv", ".txt"):
        return "vera-mh"
    return "yaml"


def builtin_instruments_load() -> list[Instrument]:
    """Create (or find) the built-in AMHART checklist and the study rating section."""
    loaded = []
    for filename in ("amhart.yaml", "study_section.yaml"):
        path = BUILTIN_DIR / filename
        spec = parse_instrument_spec(path.read_text(encoding="utf-8"), str(path.name))
        instrument, _ = instrument_create_from_spec(spec=spec, is_builtin=True)
        loaded.append(instrument)
    return loaded

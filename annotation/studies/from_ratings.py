"""Build a study from the units of a ratings file (the ids researchers have).

A published ratings file names its conversations by their source ids (VERA-MH: 6-hex ids,
a few written ``#402e12``); their transcripts may be in the app, partly, or not at all. Each
unit becomes a study conversation: the imported conversation with that code or source id, or
else a *placeholder* (``metadata.transcript_missing``) that the transcript fills when it is
imported later. So the reliability report works from the ratings alone, and judge labels and
transcripts attach to the same rows afterwards. Flagged conversations are kept: they were
rated, and the selection records them.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.models import Study
from annotation.studies.services import study_create
from core.bounded import BoundedCsv
from core.problems import ImportRejected, Problem
from corpus.conversations.selectors import conversation_ids_resolve
from corpus.conversations.services import conversation_placeholders_create
from corpus.models import Conversation, Instrument


@dataclass(frozen=True)
class StudyFromRatings:
    study: Study
    n_units: int
    n_matched: int
    n_placeholders: int
    n_flagged: int
    raters: tuple[str, ...]


def _units_of(text: str, file: str, fmt: str) -> tuple[dict[str, set[str]], dict[str, dict[str, Any]], list[Problem]]:
    """Return ``{unit: raters}``, placeholder metadata per unit, and the file's problems."""
    raters: dict[str, set[str]] = defaultdict(set)
    metadata: dict[str, dict[str, Any]] = {}
    if fmt == "vera-mh":
        from stats.vera import read_vera_ratings

        parsed = read_vera_ratings(text, file)
        for r in parsed.ratings:
            raters[r.unit].add(r.rater)
        for unit, cols in parsed.design.items():
            metadata[unit] = {
                "persona_name": cols["user_profile"], "user_llm": cols["user_llm"],
                "provider_llm": cols["provider_llm"], "ratings_design": dict(cols),
            }
        return raters, metadata, list(parsed.problems)
    reader = BoundedCsv(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))), file)
    header = {(n or "").strip().lower(): n for n in reader.fieldnames or []}
    if "unit" not in header or "rater" not in header:
        return {}, {}, [Problem("missing column(s) unit, rater; the header must be unit,rater,item,label", file, 1)]
    problems = []
    for row in reader:
        unit = (row.get(header["unit"]) or "").strip().lstrip("#").strip()
        if not unit:
            problems.append(Problem("the unit is empty", file, reader.line_num, "unit"))
            continue
        raters[unit].add((row.get(header["rater"]) or "").strip())
    return raters, metadata, problems


@transaction.atomic
def study_create_from_ratings(
    *,
    name: str,
    instrument: Instrument,
    section: Instrument | None,
    text: str,
    file: str,
    fmt: str = "long",
    created_by: AbstractBaseUser | None = None,
    coordinators: list[Any] = (),  # type: ignore[assignment]
) -> StudyFromRatings:
    """Create a study whose conversations are the units of a ratings file; placeholders for the missing ones."""
    raters, metadata, problems = _units_of(text, file, fmt)
    if problems:
        raise ImportRejected(problems)
    if not raters:
        raise ImportRejected([Problem("the file names no conversations", file, 1)])
    units = list(raters)
    found, unknown = conversation_ids_resolve(units)
    several = [u for u, pks in found.items() if len(pks) > 1]
    if several:
        raise ImportRejected([
            Problem(f"source id '{u}' matches {len(found[u])} conversations; give them distinct ids or use their codes", file)
            for u in several
        ])
    placeholders = conversation_placeholders_create(
        external_ids=unknown, metadata={u: metadata.get(u, {}) for u in unknown}, source=file
    )
    ids = [pks[0] for pks in found.values()] + [p.pk for p in placeholders]
    flagged = sorted(Conversation.objects.filter(pk__in=ids, integrity_ok=False).values_list("code", flat=True))
    k = max(len(r) for r in raters.values())
    all_raters = tuple(sorted({r for rs in raters.values() for r in rs}))
    study = study_create(
        name=name,
        instrument=instrument,
        section=section,
        conversation_ids=ids,
        created_by=created_by,
        coordinators=list(coordinators),
        raters=[],
        raters_per_conversation=min(max(k, 1), 20),
        description=f"Built from the units of the ratings file {file}.",
        selection={
            "from_ratings": file,
            "format": fmt,
            "units": len(units),
            "matched": len(ids),
            "already_imported": len(found),
            "placeholders": len(placeholders),
            # Rated conversations stay in the study even when flagged (e.g. a role break).
            "flagged_kept": flagged,
        },
    )
    return StudyFromRatings(study, len(units), len(found), len(placeholders), len(flagged), all_raters)

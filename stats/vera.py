"""Read the VERA-MH clinician ratings CSV as published (wide: one row per rater and conversation).

Columns: ``clinician_id, conversation_id``, realism of the user's communication and clinical
presentation (1-5), perceived risk (None/Low/High/Imminent) and disclosure (Low/Moderate/
High/N/A), one label per dimension (``clinician_detects`` ... ``clinician_boundaries``: Best
Practice, Suboptimal but Low Potential for Harm, High Potential for Harm, Not Relevant), then
the design of the conversation (``user_llm, provider_llm, user_profile,
user_prompt_risk_level, user_prompt_disclosure_level``).

Quirks of the real file and what they mean here:
- CRLF line endings and a UTF-8 BOM are read like LF files;
- the literal cell ``NA`` (and an empty cell) is "not answered": a missing rating, never a
  category; ``N/A`` in the disclosure column is an answer (no risk disclosed);
- ``#402e12`` is the conversation ``402e12``: a leading ``#`` is dropped (and counted);
- ``Not Relevant`` is one of the four dimension labels, a category like the others;
- raters rate different subsets: a conversation simply has the raters it has.
Every problem is collected with its line and column; pure Python, no Django.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.problems import Problem

DIMENSION_COLUMNS: Mapping[str, str] = {
    "clinician_detects": "Detects Potential Risk",
    "clinician_confirms": "Confirms Risk",
    "clinician_guides": "Guides to Human Care",
    "clinician_supportive": "Supportive Conversation",
    "clinician_boundaries": "Follows AI Boundaries",
}
DIMENSION_LABELS = (
    "Best Practice",
    "Suboptimal but Low Potential for Harm",
    "High Potential for Harm",
    "Not Relevant",
)
# Column -> (study section item key, allowed answers or None for 1-5).
SECTION_COLUMNS: Mapping[str, tuple[str, tuple[str, ...] | None]] = {
    "user_realistic_communication": ("realism_user", None),
    "user_realistic_presentation": ("realism_clinical", None),
    "clinician_risk_level": ("perceived_risk", ("None", "Low", "High", "Imminent")),
    "clinician_disclosure_level": ("perceived_disclosure", ("Low", "Moderate", "High", "N/A")),
}
DESIGN_COLUMNS = ("user_llm", "provider_llm", "user_profile", "user_prompt_risk_level", "user_prompt_disclosure_level")
ID_COLUMNS = ("clinician_id", "conversation_id")
COLUMNS = (*ID_COLUMNS, *SECTION_COLUMNS, *DIMENSION_COLUMNS, *DESIGN_COLUMNS)
NOT_ANSWERED = ("NA", "")


@dataclass(frozen=True)
class VeraRating:
    line: int
    unit: str
    rater: str
    dimensions: dict[str, str | None]  # dimension name -> label (None: not answered)
    section: dict[str, str | None]  # section item key -> answer (None: not answered)


@dataclass(frozen=True)
class VeraRatings:
    ratings: list[VeraRating]
    design: dict[str, dict[str, str]]  # unit -> design columns as written
    problems: list[Problem]
    hash_ids: list[str] = field(default_factory=list)  # units written with a leading '#'
    not_answered: int = 0  # NA or empty cells

    @property
    def units(self) -> list[str]:
        return list(dict.fromkeys(r.unit for r in self.ratings))

    @property
    def raters(self) -> list[str]:
        return list(dict.fromkeys(r.rater for r in self.ratings))

    def long_rows(self) -> list[tuple[str, str, str, str | None]]:
        """Return the dimension labels as (unit, rater, dimension, label) rows."""
        return [(r.unit, r.rater, d, label) for r in self.ratings for d, label in r.dimensions.items()]


def rater_group(rater: str) -> str:
    """Return the kind of rater a label names: ``clinician_a`` -> ``clinician``."""
    head, _, tail = rater.rpartition("_")
    return head if head and len(tail) <= 2 else ""


def read_vera_ratings(text: str, file: str) -> VeraRatings:
    """Parse the published VERA-MH clinician ratings CSV; problems are returned, not raised."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    rows = [(reader.line_num, row) for row in reader]
    problems: list[Problem] = []
    if not rows:
        return VeraRatings([], {}, [Problem("the file is empty", file, 1)])
    header = [h.strip().lower() for h in rows[0][1]]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        problems += [Problem("missing column of the VERA-MH clinician ratings file", file, 1, c) for c in missing]
        return VeraRatings([], {}, problems)
    where = {c: header.index(c) for c in COLUMNS}
    ratings: list[VeraRating] = []
    design: dict[str, dict[str, str]] = {}
    design_line: dict[str, int] = {}
    seen: dict[tuple[str, str], int] = {}
    hash_ids: list[str] = []
    not_answered = 0
    for line, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(Problem(f"expected {len(header)} fields, found {len(row)}", file, line))
            continue
        cell = {c: row[where[c]].strip() for c in COLUMNS}
        rater, unit = cell["clinician_id"], cell["conversation_id"]
        if unit.startswith("#"):
            unit = unit.lstrip("#").strip()
            hash_ids.append(unit)
        if not rater:
            problems.append(Problem("the rater is empty", file, line, "clinician_id"))
        if not unit:
            problems.append(Problem("the conversation id is empty", file, line, "conversation_id"))
        if not rater or not unit:
            continue
        if (rater, unit) in seen:
            problems.append(Problem(f"rater '{rater}' already rated conversation '{unit}' on line {seen[(rater, unit)]}", file, line, "conversation_id"))
            continue
        seen[(rater, unit)] = line
        dimensions: dict[str, str | None] = {}
        for column, dimension in DIMENSION_COLUMNS.items():
            value = cell[column]
            if value in NOT_ANSWERED:
                not_answered += 1
                dimensions[dimension] = None
                continue
            match = next((x for x in DIMENSION_LABELS if x.casefold() == value.casefold()), None)
            if match is None:
                problems.append(Problem(f"'{value}' is not a dimension label; allowed: {', '.join(DIMENSION_LABELS)}", file, line, column))
            dimensions[dimension] = match
        section: dict[str, str | None] = {}
        for column, (key, allowed) in SECTION_COLUMNS.items():
            value = cell[column]
            if value in NOT_ANSWERED:
                not_answered += 1
                section[key] = None
                continue
            if allowed is None:
                if value not in ("1", "2", "3", "4", "5"):
                    problems.append(Problem(f"'{value}' is not a rating from 1 to 5 (or NA)", file, line, column))
                section[key] = value
                continue
            match = next((x for x in allowed if x.casefold() == value.casefold()), None)
            if match is None:
                problems.append(Problem(f"'{value}' is not one of {', '.join(allowed)} (or NA)", file, line, column))
            section[key] = match
        this_design = {c: cell[c] for c in DESIGN_COLUMNS}
        if unit in design:
            for column in DESIGN_COLUMNS:
                if design[unit][column] != this_design[column]:
                    problems.append(Problem(
                        f"conversation '{unit}' has {column} '{this_design[column]}' here but "
                        f"'{design[unit][column]}' on line {design_line[unit]}", file, line, column,
                    ))
        else:
            design[unit], design_line[unit] = this_design, line
        ratings.append(VeraRating(line, unit, rater, dimensions, section))
    if not ratings and not problems:
        problems.append(Problem("the file has a header but no ratings", file, 1))
    return VeraRatings(ratings, design, problems, list(dict.fromkeys(hash_ids)), not_answered)

"""Read VERA-MH persona TSVs: the team's fixtures, broken rows, and the published file if present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus.personas.vera import (
    DIAGNOSES,
    FINANCIAL,
    HEADER,
    RISK_LEVELS,
    RISK_SHORT,
    VOCABULARIES,
    PersonaParse,
    parse_personas_tsv,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "vera"
PUBLISHED = REPO_ROOT.parent / "shared" / "vera-mh-v1.1"


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def small_rows() -> list[list[str]]:
    """Return the team fixture as header + data rows of cells, for tests that damage a cell."""
    return [line.split("\t") for line in read("personas_small.tsv").splitlines()]


def tsv(rows: list[list[str]]) -> str:
    return "\r\n".join("\t".join(row) for row in rows) + "\r\n"


def where(parse: PersonaParse) -> set[tuple[int | None, str | None]]:
    return {(p.line, p.column) for p in parse.problems}


def test_team_fixture_parses_every_row() -> None:
    parsed = parse_personas_tsv(read("personas_small.tsv"))
    assert parsed.problems == ()
    assert parsed.total_rows == 5
    assert [p.name for p in parsed.rows] == ["Marlowe", "Quilla", "Renzo", "Ottilie", "Tobiah"]
    assert [p.row for p in parsed.rows] == [2, 3, 4, 5, 6]
    renzo = parsed.rows[2]
    assert renzo.risk_short == "Immediate" and renzo.risk_level in RISK_LEVELS
    assert len(renzo.diagnoses) == 3 and all(d in DIAGNOSES for d in renzo.diagnoses)


def test_design_labels_are_short_category_labels() -> None:
    marlowe = parse_personas_tsv(read("personas_small.tsv")).rows[0]
    design = marlowe.design_labels()
    assert design["risk"] == "Low"
    assert design["disclosure"] == "Moderate"
    assert design["style"] == "Disorganized"
    assert design["diagnoses"] == ["Anxiety", "Adjustment / stress-related symptoms"]
    assert design["financial"] == "Moderate"
    assert (
        design["age"] == "Emerging adult: 18-29yo"
    )  # a column without descriptions keeps its value


def test_as_dict_and_prompt_fields_hold_full_values() -> None:
    marlowe = parse_personas_tsv(read("personas_small.tsv")).rows[0]
    data = json.loads(json.dumps(marlowe.as_dict()))
    assert data["name"] == "Marlowe" and data["row"] == 2
    assert data["financial"] in FINANCIAL and data["financial"] == "Moderate"
    fields = marlowe.prompt_fields()
    assert tuple(fields) == HEADER
    assert fields["Diagnoses and Symptoms"] == " | ".join(marlowe.diagnoses)


def test_bad_rows_are_reported_and_left_out() -> None:
    parsed = parse_personas_tsv(read("personas_bad.tsv"), "bad.tsv")
    assert where(parsed) == {(3, "Financial Stress"), (4, "Diagnoses and Symptoms")}
    assert all(p.file == "bad.tsv" for p in parsed.problems)
    assert [p.name for p in parsed.rows] == ["Marlowe"]
    assert parsed.total_rows == 3
    assert "dangling '|'" in parsed.problems[1].message


def test_long_and_short_risk_levels_must_agree() -> None:
    rows = small_rows()
    rows[1][HEADER.index(RISK_SHORT.column)] = "High"  # Marlowe's long level is Low
    parsed = parse_personas_tsv(tsv(rows))
    assert where(parsed) == {(2, RISK_SHORT.column)}
    assert "long risk level 'Low'" in parsed.problems[0].message


def test_a_truncated_description_is_named_as_such() -> None:
    rows = small_rows()
    column = HEADER.index(FINANCIAL.column)
    rows[2][column] = rows[2][column] + " (a description cut off mid-sent"
    parsed = parse_personas_tsv(tsv(rows))
    assert where(parsed) == {(3, FINANCIAL.column)}
    assert "truncated or edited" in parsed.problems[0].message


def test_duplicate_names_empty_cells_and_wrong_cell_counts() -> None:
    rows = small_rows()
    rows[2][0] = "marlowe"
    rows[3][HEADER.index("Background")] = "  "
    rows[4] = rows[4][:-1]
    rows[5] = rows[5] + ["stray"]
    parsed = parse_personas_tsv(tsv(rows))
    assert where(parsed) == {(3, "Name"), (4, "Background"), (5, None), (6, None)}
    assert parsed.total_rows == 5 and [p.name for p in parsed.rows] == ["Marlowe"]


def test_a_diagnosis_listed_twice_is_reported() -> None:
    rows = small_rows()
    column = HEADER.index(DIAGNOSES.column)
    rows[1][column] = f"{rows[1][column]}|{rows[1][column].split(' | ')[0]}"
    assert where(parse_personas_tsv(tsv(rows))) == {(2, DIAGNOSES.column)}


def test_a_missing_or_renamed_header_column_rejects_every_row() -> None:
    rows = small_rows()
    rows[0][HEADER.index("Financial Stress")] = "Money Stress"
    parsed = parse_personas_tsv(tsv(rows))
    assert where(parsed) == {(1, "Financial Stress"), (1, "Money Stress")}
    assert parsed.rows == () and parsed.total_rows == 5


def test_an_empty_file_is_a_problem() -> None:
    assert where(parse_personas_tsv("")) == {(1, None)}


def test_every_controlled_column_has_a_vocabulary() -> None:
    free_text = {"Name", "Background", "Recent Triggers and Stressors", "Final Seed Phrase"}
    assert set(VOCABULARIES) == set(HEADER) - free_text
    assert len(HEADER) == 19
    assert RISK_LEVELS.labels == RISK_SHORT.labels


# --- the published VERA-MH v1.1 personas (read in place, never copied) ----------------------

# Each of these rows was inspected by hand and holds a genuine data-entry error:
EXPECTED_PUBLISHED_ERRORS = {
    "Aria": "Diagnoses and Symptoms",  # holds a list of triggers instead of diagnoses
    "Camila": "Diagnoses and Symptoms",  # ends with a dangling " |"
    "Jack": "Diagnoses and Symptoms",  # ends with a dangling " | "
    "Jackson": "Diagnoses and Symptoms",  # description cut off mid-list
    "Skylar": "Current Suicide Risk Level",  # holds a first-person message, not a risk level
}


@pytest.mark.skipif(
    not (PUBLISHED / "personas.tsv").exists(),
    reason=f"published VERA-MH v1.1 files not found at {PUBLISHED}",
)
def test_published_personas_report_exactly_the_known_bad_rows() -> None:
    text = (PUBLISHED / "personas.tsv").read_bytes().decode("utf-8")
    parsed = parse_personas_tsv(text, "personas.tsv")
    names_by_line = {i: line.split("\t")[0] for i, line in enumerate(text.splitlines(), start=1)}
    reported = {(names_by_line[p.line], p.column) for p in parsed.problems if p.line}
    assert reported == set(EXPECTED_PUBLISHED_ERRORS.items())
    assert len(parsed.problems) == len(EXPECTED_PUBLISHED_ERRORS)
    assert parsed.total_rows == 100
    assert len(parsed.rows) == 95
    assert not {p.name for p in parsed.rows} & set(EXPECTED_PUBLISHED_ERRORS)

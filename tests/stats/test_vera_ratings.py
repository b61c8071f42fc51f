"""The published VERA-MH ratings CSV, read by stats.vera: each quirk has a defined behaviour (files written here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stats.vera import rater_group, read_vera_ratings

HEADER = (
    "clinician_id,conversation_id,user_realistic_communication,user_realistic_presentation,clinician_risk_level,"
    "clinician_disclosure_level,clinician_detects,clinician_confirms,clinician_guides,clinician_supportive,"
    "clinician_boundaries,user_llm,provider_llm,user_profile,user_prompt_risk_level,user_prompt_disclosure_level"
)
BP, SUB, HPH, NR = "Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant"


def row(rater: str, unit: str, real: str = "3,4", risk: str = "Low,Moderate", dims: tuple[str, ...] = (BP, HPH, HPH, SUB, BP),
        design: str = "modelu,modelc,Ada,High,Low") -> str:
    return ",".join([rater, unit, real, risk, *dims, design])


def crlf(*rows: str) -> str:
    return "\r\n".join([HEADER, *rows])  # CRLF, no final line break: like the published file


def test_crlf_na_hash_ids_not_relevant_and_subsets_are_read_as_defined():
    text = crlf(
        row("clinician_a", "a1b2c3"),
        row("clinician_a", "#d4e5f6", real="NA,NA", risk="NA,NA", dims=(NR,) * 5),
        row("expert_b", "a1b2c3", real="NA,NA", risk="None,N/A"),
    )
    parsed = read_vera_ratings(text, "r.csv")
    assert parsed.problems == []
    assert parsed.units == ["a1b2c3", "d4e5f6"] and parsed.hash_ids == ["d4e5f6"]
    assert parsed.raters == ["clinician_a", "expert_b"]
    na_row = parsed.ratings[1]
    assert na_row.section == {"realism_user": None, "realism_clinical": None, "perceived_risk": None, "perceived_disclosure": None}
    assert set(na_row.dimensions.values()) == {NR}  # a category, not a missing rating
    assert parsed.ratings[2].section["perceived_disclosure"] == "N/A"  # an answer: no risk disclosed
    assert parsed.not_answered == 6
    assert ("a1b2c3", "expert_b", "Confirms Risk", HPH) in parsed.long_rows()


def test_every_bad_cell_is_a_problem_naming_row_and_column():
    text = crlf(
        row("clinician_a", "a1b2c3", real="6,4"),
        row("clinician_b", "a1b2c3", dims=(BP, "Great", HPH, SUB, BP)),
        row("clinician_c", "a1b2c3", risk="Severe,Low"),
        row("clinician_a", "a1b2c3"),
        row("clinician_d", "a1b2c3", design="modelu,modelc,Bea,High,Low"),
    )
    problems = read_vera_ratings(text, "r.csv").problems
    assert [(p.line, p.column) for p in problems] == [
        (2, "user_realistic_communication"), (3, "clinician_confirms"), (4, "clinician_risk_level"),
        (5, "conversation_id"), (6, "user_profile"),
    ]
    assert "already rated conversation 'a1b2c3' on line 2" in problems[3].message


def test_a_missing_column_is_named():
    problems = read_vera_ratings("clinician_id,conversation_id\r\nclinician_a,a1\r\n", "r.csv").problems
    assert problems[0].column == "user_realistic_communication" and problems[0].line == 1


def test_rater_groups_come_from_the_label():
    assert [rater_group(x) for x in ("clinician_a", "expert_b", "rater7", "senior_rater_b")] == ["clinician", "expert", "", "senior_rater"]


def test_the_command_line_reads_the_published_format(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(crlf(row("clinician_a", "a1"), row("clinician_b", "a1"), row("clinician_a", "b2", dims=(NR,) * 5),
                          row("clinician_b", "b2", dims=(NR,) * 5)).encode())
    out = subprocess.run([sys.executable, "-m", "stats", "agreement", str(path), "--format", "vera-mh", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert '"krippendorff_alpha": 1.0' in out


PUBLISHED = Path(__file__).resolve().parents[3] / "vera-published/publication_data/human_validation/clinician_judging/VERA-MH Clinician Ratings_December 2025.csv"


@pytest.mark.skipif(not PUBLISHED.exists(), reason="the published VERA-MH ratings are not on this machine (/work/vera-published/, never committed)")
def test_the_published_ratings_reproduce_the_papers_pooled_alpha():
    from stats import agreement_report

    parsed = read_vera_ratings(PUBLISHED.read_text(encoding="utf-8"), PUBLISHED.name)
    assert parsed.problems == [] and len(parsed.units) == 90 and len(parsed.raters) == 6 and len(parsed.ratings) == 270
    report = agreement_report(parsed.long_rows(), level="nominal", na="category")
    assert round(report.pooled.krippendorff_alpha, 2) == 0.77


DOC = Path(__file__).resolve().parents[2] / "docs" / "reproduce-vera-mh.md"


@pytest.mark.skipif(not PUBLISHED.exists(), reason="the published VERA-MH ratings are not on this machine (/work/vera-published/, never committed)")
def test_the_figures_of_the_reproduction_page_are_the_ones_the_command_line_prints():
    """docs/reproduce-vera-mh.md step 5, with its defaults: every figure of its table, as printed."""
    import json
    import re

    out = subprocess.run([sys.executable, "-m", "reports.stats", "agreement", str(PUBLISHED), "--format", "vera-mh", "--json"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| ") and re.search(r"\d\.\d{3}", line)]
    assert len(rows) == 6
    for line in rows:
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        figures = report["pooled"] if cells[0].startswith("pooled") else report["items"][cells[0]]
        alpha = re.match(r"\**([-\d.]+)\** \[([-\d.]+), ([-\d.]+)\]", cells[5])
        assert alpha, line
        assert f"{figures['percent_agreement']:.3f}" == cells[4]
        assert f"{figures['krippendorff_alpha']:.3f}" == alpha.group(1)
        assert [f"{x:.3f}" for x in figures["krippendorff_alpha_ci"]] == [alpha.group(2), alpha.group(3)], line
        assert f"{figures['fleiss_kappa']:.3f}" == cells[6] and f"{figures['gwet_ac1']:.3f}" == cells[7], line

"""Read VERA-MH rubric TSVs: the team's fixtures, broken variants, and the published file if present."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.problems import ImportRejected
from corpus.instruments.flow import (
    BEST_PRACTICE,
    ENDED_BY_ASSIGN_END,
    ENDED_BY_COMPLETED,
    ENDED_BY_END,
    HIGH_HARM,
    NOT_RELEVANT,
    SUBOPTIMAL,
    Flow,
    validate_flow,
    walk,
)
from corpus.instruments.vera_rubric import parse_rubric_tsv

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "vera"
PUBLISHED = REPO_ROOT.parent / "shared" / "vera-mh-v1.1"
HEADER = "Question ID\tDimension\tSeverity\tRisk Type\tQuestion\tExamples\tAnswer\tGOTO\t\tNotes"
NOTICE, HELP, ROLE = "Notices Danger", "Points To Help", "Keeps Its Role"


def read(name: str) -> str:
    """Return a fixture's text with its line ends untouched."""
    return (FIXTURES / name).read_bytes().decode("utf-8")


def rejected(text: str) -> set[tuple[int | None, str | None]]:
    """Return the (line, column) of every problem; fail if the text is accepted."""
    with pytest.raises(ImportRejected) as caught:
        parse_rubric_tsv(text, "test.tsv")
    assert all(p.file == "test.tsv" for p in caught.value.problems)
    return {(p.line, p.column) for p in caught.value.problems}


@pytest.fixture
def small() -> Flow:
    return parse_rubric_tsv(read("rubric_small.tsv"))


def test_team_fixture_parses_into_three_dimensions(small: Flow) -> None:
    assert [q.id for q in small.questions] == [str(i) for i in range(1, 13)]
    assert small.dimensions == (NOTICE, HELP, ROLE)
    assert [(o.label, o.goto) for o in small.question("5").options] == [
        ("No danger mentioned", "NOT_RELEVANT>>10"),
        ("Danger, not urgent", "6"),
        ("Urgent danger", "9"),
    ]
    assert small.question("7").options == ()  # the implicit Yes/No question
    assert small.question("6").risk_type == "Not Urgent"
    assert small.question("2").severity == "Red" and small.question("1").severity is None
    assert small.question("3").options[0].note.startswith("No danger but a false alarm")
    assert validate_flow(small) == []


def test_line_endings_do_not_matter() -> None:
    crlf = read("rubric_small.tsv")
    assert "\r\n" in crlf
    assert parse_rubric_tsv(crlf.replace("\r\n", "\n")) == parse_rubric_tsv(crlf)
    assert parse_rubric_tsv("\ufeff" + crlf) == parse_rubric_tsv(crlf)


@pytest.mark.parametrize(
    ("answers", "ended_by", "labels"),
    [
        (
            {"1": "User-agent breaks character"},
            ENDED_BY_END,
            (NOT_RELEVANT, NOT_RELEVANT, NOT_RELEVANT),
        ),
        ({"1": "No", "3": "No"}, ENDED_BY_END, (NOT_RELEVANT, NOT_RELEVANT, NOT_RELEVANT)),
        ({"1": "No", "3": "Yes"}, ENDED_BY_ASSIGN_END, (SUBOPTIMAL, NOT_RELEVANT, NOT_RELEVANT)),
        (
            {
                "1": "Yes",
                "2": "Yes",
                "4": "Skip this dimension",
                "10": "No",
                "11": "No",
                "12": "No",
            },
            ENDED_BY_COMPLETED,
            (HIGH_HARM, NOT_RELEVANT, BEST_PRACTICE),
        ),
        (
            {"1": "Yes", "2": "No", "5": "Danger, not urgent", "6": "No", "7": "Yes", "10": "Yes"},
            ENDED_BY_COMPLETED,
            (BEST_PRACTICE, SUBOPTIMAL, HIGH_HARM),
        ),
        (
            {
                "1": "yes",
                "2": "no",
                "5": "urgent danger",
                "9": "No",
                "10": "No",
                "11": "No",
                "12": "Yes",
            },
            ENDED_BY_COMPLETED,
            (BEST_PRACTICE, BEST_PRACTICE, SUBOPTIMAL),
        ),
    ],
)
def test_walks_through_the_team_fixture(
    small: Flow, answers: dict[str, str], ended_by: str, labels: tuple[str, ...]
) -> None:
    result = walk(small, answers)
    assert result.finished and result.ended_by == ended_by
    assert tuple(result.labels[d] for d in small.dimensions) == labels
    assert [s.question_id for s in result.path] == list(answers)


def test_an_implicit_no_goes_to_the_next_row_of_the_team_fixture(small: Flow) -> None:
    result = walk(
        small, {"1": "Yes", "2": "No", "5": "Danger, not urgent", "6": "Not Relevant", "7": "No"}
    )
    assert result.next_question == "8"


def test_broken_goto_targets_are_reported_with_line_and_column() -> None:
    assert rejected(read("rubric_broken_goto.tsv")) == {(10, "GOTO"), (14, "GOTO")}


def test_duplicate_question_id_is_reported_with_line_and_column() -> None:
    assert rejected(read("rubric_duplicate_id.tsv")) == {(17, "Question ID")}


def test_renamed_and_missing_header_columns_are_reported() -> None:
    text = (
        read("rubric_small.tsv")
        .replace("\tGOTO\t", "\tNext\t", 1)
        .replace("Notes for", "Remarks for", 1)
    )
    assert rejected(text) == {(1, "GOTO"), (1, "Notes")}


def test_an_answer_row_before_any_question_is_reported() -> None:
    text = f"{HEADER}\n\t\t\t\t\t\tNo\t2\t\t\n1\tD\tRed\t\tQ?\t\t\t\t\t\n"
    assert rejected(text) == {(2, "Question ID")}


@pytest.mark.parametrize(
    ("rows", "line", "column"),
    [
        ("1\tD\tOrange\t\tQ?\t\t\t\t\t", 2, "Severity"),
        ("1\tD\tRed\t\t\t\t\t\t\t", 2, "Question"),
        ("1\t\tRed\t\tQ?\t\t\t\t\t", 2, "Dimension"),
        ("1\tD\tRed\t\tQ?\t\t\t3\t\t", 2, "GOTO"),  # a GOTO without an Answer
        ("1\tD\tRed\t\tQ?\t\tYes\tEND\t\t\r\n\tD\t\t\t\t\tNo\tEND\t\t", 3, "Question ID"),
    ],
)
def test_row_level_mistakes_name_their_line_and_column(rows: str, line: int, column: str) -> None:
    assert rejected(f"{HEADER}\r\n{rows}\r\n") == {(line, column)}


def test_severity_is_read_case_insensitively() -> None:
    flow = parse_rubric_tsv(f"{HEADER}\n1\tD\tyellow\t\tQ?\t\t\t\t\t\n")
    assert flow.question("1").severity == "Yellow"


def test_an_empty_file_is_rejected() -> None:
    assert rejected("") == {(1, None)}
    assert rejected(HEADER + "\n") == {(1, None)}


# --- the published VERA-MH v1.1 rubric (read in place, never copied) ---------------------

needs_published = pytest.mark.skipif(
    not (PUBLISHED / "rubric.tsv").exists(),
    reason=f"published VERA-MH v1.1 files not found at {PUBLISHED}",
)


@pytest.fixture
def published() -> Flow:
    return parse_rubric_tsv((PUBLISHED / "rubric.tsv").read_text(encoding="utf-8"))


def option(flow: Flow, question_id: str, index: int) -> str:
    """Return an option label by position, so these tests copy no wording from the file."""
    return flow.question(question_id).answer_options[index].label


@needs_published
def test_published_rubric_parses_and_every_goto_resolves(published: Flow) -> None:
    assert len(published.questions) == 35
    assert published.dimensions == (
        "Detects Potential Risk",
        "Confirms Risk",
        "Guides to Human Care",
        "Supportive Conversation",
        "Follows AI Boundaries",
    )
    assert validate_flow(published) == []
    targets = [o.goto for q in published.questions for o in q.options if o.goto]
    specials = {"END", "ASSIGN_END"}
    for goto in targets:
        if goto not in specials:
            published.question(goto.removeprefix("NOT_RELEVANT>>"))
    assert {"END", "ASSIGN_END"} <= set(targets)
    assert any(t.startswith("NOT_RELEVANT>>") for t in targets)
    assert sum(1 for q in published.questions if not q.options) == 16  # implicit Yes/No questions


@needs_published
def test_published_rubric_role_play_refusal_ends_with_everything_not_relevant(
    published: Flow,
) -> None:
    result = walk(published, {"1": option(published, "1", 2)})
    assert result.ended_by == ENDED_BY_END
    assert set(result.labels.values()) == {NOT_RELEVANT}


@needs_published
def test_published_rubric_false_positive_assigns_and_ends(published: Flow) -> None:
    result = walk(published, {"1": "No", "3": "Yes"})
    assert result.ended_by == ENDED_BY_ASSIGN_END
    assert list(result.labels.values()) == [SUBOPTIMAL] + [NOT_RELEVANT] * 4


@needs_published
def test_published_rubric_missed_risk_then_immediate_risk_walk(published: Flow) -> None:
    answers = {
        "1": "Yes",
        "2": "Yes",
        "5": option(published, "5", 0),
        "9": option(published, "9", 2),
    }
    answers |= {"16": "No", "17": "No", "18": "Yes"} | {str(i): "No" for i in range(22, 36)}
    result = walk(published, answers)
    assert result.finished and result.ended_by == ENDED_BY_COMPLETED
    assert list(result.labels.values()) == [
        HIGH_HARM,
        NOT_RELEVANT,
        HIGH_HARM,
        BEST_PRACTICE,
        BEST_PRACTICE,
    ]
    assert [s.question_id for s in result.path][:7] == ["1", "2", "5", "9", "16", "17", "18"]


@needs_published
def test_published_rubric_implicit_yes_jumps_to_the_next_dimension(published: Flow) -> None:
    answers = {
        "1": "Yes",
        "2": "No",
        "4": "No",
        "6": "No",
        "7": "No",
        "8": "Yes",
        "9": option(published, "9", 1),
    }
    answers |= {"10": "No", "11": "No", "12": "No", "13": "Yes", "22": "No", "23": "No"}
    result = walk(published, answers)
    assert [s.question_id for s in result.path][-3:] == ["13", "22", "23"]
    assert result.next_question == "24"
    assert result.labels == {
        "Detects Potential Risk": BEST_PRACTICE,
        "Confirms Risk": SUBOPTIMAL,
        "Guides to Human Care": SUBOPTIMAL,
    }

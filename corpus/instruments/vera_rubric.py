"""Read a VERA-MH question-flow rubric (``rubric.tsv``) into a ``Flow``. Pure Python.

Format: UTF-8 (a BOM is ignored), tab-separated, CRLF or LF line ends. Header row:
``Question ID, Dimension, Severity, Risk Type, Question, Examples, Answer, GOTO, (blank),
Notes...``; columns are found by name, so their order is free and the unnamed column is
ignored. One row per answer option: a row with a Question ID starts a question (and may carry
its first option); rows without an ID add options to the question above. A question with no
Answer anywhere is the implicit Yes/No question (see ``corpus.instruments.flow``).

Cells are read literally (``csv.QUOTE_NONE``): the published file never quotes a cell, and its
cells contain ``"`` characters that a quoting reader would eat. A cell therefore cannot hold a
tab or a line break, which the format does not need.

Every problem is collected before anything is rejected: ``line`` is the physical line of the
file (header = line 1), ``column`` the header name.
"""

from __future__ import annotations

import csv
import io

from core.bounded import BoundedCsv
from core.problems import ImportRejected, Problem
from corpus.instruments.flow import SEVERITIES, Flow, Option, Question, validate_flow

QUESTION_ID = "Question ID"
DIMENSION = "Dimension"
SEVERITY = "Severity"
RISK_TYPE = "Risk Type"
QUESTION = "Question"
EXAMPLES = "Examples"
ANSWER = "Answer"
GOTO = "GOTO"
NOTES_PREFIX = "Notes"
REQUIRED_COLUMNS: tuple[str, ...] = (
    QUESTION_ID,
    DIMENSION,
    SEVERITY,
    RISK_TYPE,
    QUESTION,
    EXAMPLES,
    ANSWER,
    GOTO,
)
# Cells a continuation row must leave empty: a value there means a forgotten Question ID.
QUESTION_CELLS: tuple[str, ...] = (DIMENSION, SEVERITY, RISK_TYPE, QUESTION, EXAMPLES)


class _Draft:
    """A question being assembled from its rows, with the line of each row."""

    def __init__(self, cells: dict[str, str], line: int) -> None:
        self.cells = cells
        self.line = line
        self.options: list[Option] = []
        self.option_lines: list[int] = []
        self.notes: list[str] = []

    def add_row(self, cells: dict[str, str], line: int, problems: list[Problem], file: str) -> None:
        """Add a row's answer option and note to this question."""
        if cells["notes"]:
            self.notes.append(cells["notes"])
        if cells[ANSWER]:
            self.options.append(Option(cells[ANSWER], cells[GOTO] or None, cells["notes"]))
            self.option_lines.append(line)
        elif cells[GOTO]:
            problems.append(
                Problem(f"GOTO '{cells[GOTO]}' has no Answer beside it", file, line, GOTO)
            )

    def build(self) -> Question:
        """Return the finished question."""
        severity = self.cells[SEVERITY]
        canonical = {s.casefold(): s for s in SEVERITIES}
        return Question(
            id=self.cells[QUESTION_ID],
            dimension=self.cells[DIMENSION],
            severity=canonical.get(severity.casefold(), severity) or None,
            risk_type=self.cells[RISK_TYPE],
            text=self.cells[QUESTION],
            examples=self.cells[EXAMPLES],
            options=tuple(self.options),
            notes="\n".join(self.notes),
        )


def parse_rubric_tsv(text: str, file: str = "rubric.tsv") -> Flow:
    """Parse a rubric TSV into a validated Flow; raise ImportRejected listing every problem."""
    rows = BoundedCsv(csv.reader(
        io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE
    ), file)
    header = next(rows, None)
    if header is None or not any(cell.strip() for cell in header):
        raise ImportRejected([Problem("the file is empty; expected a header row", file, 1)])
    columns, problems = _read_header([cell.strip() for cell in header], file)
    if problems:
        raise ImportRejected(problems)

    drafts: list[_Draft] = []
    line = 1
    for row in rows:
        line = rows.line_num
        if not any(cell.strip() for cell in row):
            continue
        extra = [cell for i, cell in enumerate(row) if i >= len(header) and cell.strip()]
        if extra:
            problems.append(
                Problem(f"row has {len(row)} cells but the header has {len(header)}", file, line)
            )
        cells = {name: (row[i].strip() if i < len(row) else "") for name, i in columns.items()}
        if cells[QUESTION_ID]:
            drafts.append(_Draft(cells, line))
            drafts[-1].add_row(cells, line, problems, file)
            continue
        if not drafts:
            problems.append(
                Problem(
                    "answer row before the first question (no Question ID)", file, line, QUESTION_ID
                )
            )
            continue
        filled = [name for name in QUESTION_CELLS if cells[name]]
        if filled:
            problems.append(
                Problem(
                    f"row has a {filled[0]} but no Question ID (a forgotten ID?)",
                    file,
                    line,
                    QUESTION_ID,
                )
            )
        elif not cells[ANSWER] and not cells[GOTO] and not cells["notes"]:
            problems.append(Problem("continuation row has no Answer", file, line, ANSWER))
        drafts[-1].add_row(cells, line, problems, file)

    flow = Flow(tuple(d.build() for d in drafts))
    if not drafts:
        problems.append(Problem("the file has no questions", file, line))

    def line_of(position: int, option: int | None) -> int | None:
        draft = drafts[position]
        return draft.line if option is None else draft.option_lines[option]

    if drafts:
        problems.extend(validate_flow(flow, file, line_of))
    if problems:
        raise ImportRejected(sorted(problems, key=lambda p: p.line or 0))
    return flow


def _read_header(header: list[str], file: str) -> tuple[dict[str, int], list[Problem]]:
    """Return the index of each needed column (notes under the key "notes") and header problems."""
    problems: list[Problem] = []
    folded = [cell.casefold() for cell in header]
    columns: dict[str, int] = {}
    for name in REQUIRED_COLUMNS:
        if folded.count(name.casefold()) > 1:
            problems.append(Problem(f"column '{name}' appears twice in the header", file, 1, name))
        if name.casefold() in folded:
            columns[name] = folded.index(name.casefold())
        else:
            problems.append(
                Problem(
                    f"missing column '{name}' (header: {', '.join(repr(c) for c in header)})",
                    file,
                    1,
                    name,
                )
            )
    notes = [i for i, cell in enumerate(folded) if cell.startswith(NOTES_PREFIX.casefold())]
    if notes:
        columns["notes"] = notes[0]
    else:
        problems.append(
            Problem(
                "missing the Notes column (a header starting with 'Notes')", file, 1, NOTES_PREFIX
            )
        )
    return columns, problems

"""Problems found while reading an input file, reported all at once.

Every importer collects `Problem`s for the whole file before writing anything, then raises
`ImportRejected` if there is at least one: an import is all-or-nothing.
Pure Python: no Django import, so parsers can use it from anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (file, line/row, column) and what."""

    message: str
    file: str = ""
    line: int | None = None  # 1-based physical line (JSONL) or data row (TSV/CSV, header = line 1)
    column: str | None = None  # column name (TSV/CSV) or JSON field path

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f", line {self.line}"
        if self.column:
            where += f", column {self.column}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message}


class ImportRejected(Exception):
    """Raised when an input has problems; nothing was written."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: list[Problem] = list(problems)
        super().__init__(f"{len(self.problems)} problem(s) found; nothing was imported")

    def report(self, limit: int = 50) -> str:
        """Return the problems grouped (identical ones counted once), at most ``limit`` groups."""
        return grouped_report(self.problems, limit=limit)

    def grouped(self, limit: int = 50) -> ProblemSummary:
        return group_problems(self.problems, limit=limit)


FIRST_LINES_SHOWN = 5


@dataclass(frozen=True)
class ProblemGroup:
    """Identical problems (same file, column and message) on several lines, counted once."""

    message: str
    file: str
    column: str | None
    count: int
    lines: tuple[int, ...]  # the first FIRST_LINES_SHOWN lines where it occurs

    def __str__(self) -> str:
        if self.count == 1:  # exactly as the problem itself reads
            return str(Problem(self.message, self.file, self.lines[0] if self.lines else None, self.column))
        where = self.file or "<input>"
        if self.column:
            where += f", column {self.column}"
        first = ", ".join(str(n) for n in self.lines)
        more = "" if self.count <= len(self.lines) else ", ..."
        at = f", first at line{'s' if len(self.lines) > 1 else ''} {first}{more}" if self.lines else ""
        return f"{where}: {self.message}: {self.count} rows{at}"

    def as_dict(self) -> dict[str, object]:
        return {
            "file": self.file, "column": self.column, "message": self.message,
            "count": self.count, "lines": list(self.lines),
        }


@dataclass(frozen=True)
class ProblemSummary:
    """Grouped problems, capped: ``groups`` shown, ``hidden_groups`` more not listed."""

    total: int
    groups: tuple[ProblemGroup, ...]
    hidden_groups: int

    def lines(self) -> list[str]:
        out = [str(g) for g in self.groups]
        if self.hidden_groups:
            out.append(f"... and {self.hidden_groups} more kind(s) of problem not listed")
        return out


def group_problems(problems: Iterable[Problem], *, limit: int = 50) -> ProblemSummary:
    """Group identical problems (same file, column and message), in order of first appearance.

    Real files repeat one defect on hundreds of rows; a researcher needs the kind of problem,
    how many rows and where it starts, not 1,380 near-identical lines.
    """
    order: dict[tuple[str, str | None, str], list[int | None]] = {}
    total = 0
    for problem in problems:
        total += 1
        order.setdefault((problem.file, problem.column, problem.message), []).append(problem.line)
    groups = [
        ProblemGroup(
            message=message,
            file=file,
            column=column,
            count=len(lines),
            lines=tuple(n for n in lines if n is not None)[:FIRST_LINES_SHOWN],
        )
        for (file, column, message), lines in order.items()
    ]
    shown = groups[: max(limit, 0)]
    return ProblemSummary(total, tuple(shown), len(groups) - len(shown))


def grouped_report(problems: Iterable[Problem], *, limit: int = 50) -> str:
    return "\n".join(group_problems(problems, limit=limit).lines())

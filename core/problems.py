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

    def report(self) -> str:
        return "\n".join(str(p) for p in self.problems)

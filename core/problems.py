"""Problems found while reading an input file, reported all at once.

Every importer collects `Problem`s for the whole file before writing anything, then raises
`ImportRejected` if there is at least one: an import is all-or-nothing.
A file can hold a million bad rows: `ProblemList` keeps the first ``MAX_LISTED`` in full and
counts all by kind (column and message, quoted values left out), so memory and reports stay small.
Pure Python: no Django import, so parsers can use it from anywhere.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

MAX_LISTED = 100
_QUOTED = re.compile(r"'[^']*'")
_NUMBER = re.compile(r"\d+")


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


def problem_group(problem: Problem) -> tuple[str, str]:
    """Return (column, message with quoted values and numbers left out): problems of one kind."""
    return problem.column or "", _NUMBER.sub("N", _QUOTED.sub("'…'", problem.message))


class ProblemList(list[Problem]):
    """The first ``limit`` problems in full; every problem counted by kind (``problem_group``).

    ``total`` counts every problem; ``kinds`` maps a kind to its count (at most ``MAX_KINDS``
    kinds; beyond, "other problems"), so a million bad rows cost a hundred Problems and a few
    counters.
    """

    MAX_KINDS = 200

    def __init__(self, problems: Iterable[Problem] = (), *, limit: int = MAX_LISTED):
        super().__init__()
        self.limit = limit
        self.total = 0
        self.kinds: Counter[tuple[str, str]] = Counter()
        self.extend(problems)

    def _count(self, kind: tuple[str, str], n: int = 1) -> None:
        if kind not in self.kinds and len(self.kinds) >= self.MAX_KINDS:
            kind = ("", "other problems")
        self.kinds[kind] += n

    def append(self, problem: Problem) -> None:
        self.total += 1
        self._count(problem_group(problem))
        if len(self) < self.limit:
            super().append(problem)

    def extend(self, problems: Iterable[Problem]) -> None:
        if isinstance(problems, ProblemList):  # keep the counts of the ones it did not list
            for problem in problems:
                if len(self) < self.limit:
                    super().append(problem)
            self.total += problems.total
            for kind, n in problems.kinds.items():
                self._count(kind, n)
            return
        for problem in problems:
            self.append(problem)

    def __iadd__(self, problems: Iterable[Problem]) -> ProblemList:  # type: ignore[override]
        self.extend(problems)
        return self

    @property
    def n_omitted(self) -> int:
        return self.total - len(self)

    def by_kind(self) -> list[dict[str, object]]:
        """Return every problem counted by kind, the largest first: column, message, count."""
        return [{"column": c, "message": m, "count": n} for (c, m), n in self.kinds.most_common()]


class ImportRejected(Exception):
    """Raised when an input has problems; nothing was written."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: ProblemList = problems if isinstance(problems, ProblemList) else ProblemList(problems)
        super().__init__(f"{self.problems.total} problem(s) found; nothing was imported")

    def report(self) -> str:
        lines = [str(p) for p in self.problems]
        if self.problems.n_omitted:
            lines.append(f"... {self.problems.n_omitted} more not listed; all {self.problems.total} by kind:")
            lines += [f"  {g['count']} x column {g['column'] or '-'}: {g['message']}" for g in self.problems.by_kind()]
        return "\n".join(lines)

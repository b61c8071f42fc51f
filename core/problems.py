"""Problems found while reading an input file, reported all at once.

Every importer collects `Problem`s for the whole file before writing anything, then raises
`ImportRejected` if there is at least one: an import is all-or-nothing.

Real files repeat one defect on hundreds of rows, and a file can hold a million bad rows, so a
`ProblemList` keeps the first ``MAX_LISTED`` problems in full and counts every problem by kind
(file, column, and the message with quoted values and numbers left out), with the first lines of
each: a researcher reads "unknown item key 'x': 270 rows, first at lines 2, 3, 4"; a kind with a
few different messages lists each, one with many reads "unknown unit '…': 400 rows". Memory
stays small whatever the file holds. Pure Python: no Django import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_LISTED = 100  # problems kept in full, each with its line
MAX_KINDS = 200  # kinds counted separately; beyond, "other problems"
MAX_EXACT = 5  # a kind with at most this many different messages lists each of them
FIRST_LINES_SHOWN = 5
GROUPS_SHOWN = 50  # kinds listed on a page or the command line
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


def problem_kind(problem: Problem) -> tuple[str, str, str]:
    """Return (file, column, message with quoted values and numbers left out): one kind of problem."""
    return problem.file, problem.column or "", _NUMBER.sub("N", _QUOTED.sub("'…'", problem.message))


@dataclass(frozen=True)
class ProblemGroup:
    """Problems of one kind counted once: the message (exact, or the kind's when many differ), where."""

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
        return {"file": self.file, "column": self.column, "message": self.message, "count": self.count, "lines": list(self.lines)}


@dataclass(frozen=True)
class ProblemSummary:
    """Problems counted by kind, capped: ``groups`` shown, ``hidden_groups`` more not listed."""

    total: int
    groups: tuple[ProblemGroup, ...]
    hidden_groups: int

    @property
    def n_kinds(self) -> int:
        return len(self.groups) + self.hidden_groups

    def lines(self) -> list[str]:
        out = [str(g) for g in self.groups]
        if self.hidden_groups:
            out.append(f"... and {self.hidden_groups} more kind(s) of problem not listed")
        return out


class _Kind:
    """The counts of one kind, and of each of its first ``MAX_EXACT`` different messages."""

    __slots__ = ("count", "exact", "lines", "overflow")

    def __init__(self) -> None:
        self.count, self.lines, self.overflow = 0, [], False
        self.exact: dict[str, tuple[int, list[int]]] = {}

    def add(self, message: str, count: int, lines: Iterable[int | None]) -> None:
        lines = [n for n in lines if n is not None]
        self.count += count
        self.lines.extend(lines[: FIRST_LINES_SHOWN - len(self.lines)])
        if message in self.exact or len(self.exact) < MAX_EXACT:
            n, first = self.exact.get(message, (0, []))
            self.exact[message] = (n + count, first + lines[: FIRST_LINES_SHOWN - len(first)])
        else:
            self.overflow = True


class ProblemList(list[Problem]):
    """The first ``limit`` problems in full; every problem counted by kind (``problem_kind``).

    ``total`` counts every problem. At most ``MAX_KINDS`` kinds are told apart (in order of first
    appearance); later new kinds count as "other problems", so a million bad rows cost a hundred
    Problems and a few hundred counters.
    """

    def __init__(self, problems: Iterable[Problem] = (), *, limit: int = MAX_LISTED):
        super().__init__()
        self.limit = limit
        self.total = 0
        self._kinds: dict[tuple[str, str, str], _Kind] = {}
        self.extend(problems)

    def _count(self, key: tuple[str, str, str], message: str, count: int, lines: Iterable[int | None]) -> None:
        kind = self._kinds.get(key)
        if kind is None:
            if len(self._kinds) >= MAX_KINDS:
                key, message = ("", "", "other problems"), "other problems"
                kind = self._kinds.get(key)
            if kind is None:
                kind = self._kinds[key] = _Kind()
        kind.add(message, count, lines)

    def append(self, problem: Problem) -> None:
        self.total += 1
        self._count(problem_kind(problem), problem.message, 1, (problem.line,))
        if len(self) < self.limit:
            super().append(problem)

    def extend(self, problems: Iterable[Problem]) -> None:
        if isinstance(problems, ProblemList):  # keep the counts of the ones it did not list
            for problem in problems:
                if len(self) < self.limit:
                    super().append(problem)
            self.total += problems.total
            for key, kind in problems._kinds.items():
                if kind.overflow:  # its messages are no longer told apart: count it as its kind
                    self._count(key, key[2], kind.count, kind.lines)
                else:
                    for message, (n, lines) in kind.exact.items():
                        self._count(key, message, n, lines)
            return
        for problem in problems:
            self.append(problem)

    def __iadd__(self, problems: Iterable[Problem]) -> ProblemList:  # type: ignore[override]
        self.extend(problems)
        return self

    @property
    def n_omitted(self) -> int:
        """Return how many problems are counted but not kept in full."""
        return self.total - len(self)

    def groups(self) -> list[ProblemGroup]:
        """Return every kind, in order of first appearance: one row per different message when a
        kind has few of them (each then reads exactly), else one row for the kind."""
        out = []
        for (file, column, general), kind in self._kinds.items():
            parts = [(general, kind.count, kind.lines)] if kind.overflow else [(m, n, ls) for m, (n, ls) in kind.exact.items()]
            out += [ProblemGroup(message=m, file=file, column=column or None, count=n, lines=tuple(ls)) for m, n, ls in parts]
        return out

    def summary(self, limit: int = GROUPS_SHOWN) -> ProblemSummary:
        """Return the kinds, the first ``limit`` shown and the rest counted."""
        groups = self.groups()
        shown = groups[: max(limit, 0)]
        return ProblemSummary(self.total, tuple(shown), len(groups) - len(shown))


def group_problems(problems: Iterable[Problem], *, limit: int = GROUPS_SHOWN) -> ProblemSummary:
    """Count problems by kind, in order of first appearance, and cap the listing at ``limit`` kinds."""
    listed = problems if isinstance(problems, ProblemList) else ProblemList(problems)
    return listed.summary(limit)


class ImportRejected(Exception):
    """Raised when an input has problems; nothing was written."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: ProblemList = problems if isinstance(problems, ProblemList) else ProblemList(problems)
        super().__init__(f"{self.problems.total} problem(s) found; nothing was imported")

    def grouped(self, limit: int = GROUPS_SHOWN) -> ProblemSummary:
        """Return the problems counted by kind (what a person reads first), capped at ``limit`` kinds."""
        return self.problems.summary(limit)

    def report(self, limit: int = GROUPS_SHOWN) -> str:
        """Return the problems counted by kind, one line each, at most ``limit`` kinds."""
        return "\n".join(self.grouped(limit).lines())

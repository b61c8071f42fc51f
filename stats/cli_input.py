"""The input files of ``python -m stats``: long ratings, long judge labels, the VERA-MH ratings file.

Every subcommand reads its files here and nowhere else, so a file is read the same way by
``agreement``, ``alt-test`` and ``bundle``. Problems raise :class:`CsvInputError` naming the
file, line and column; the subcommands print it and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("unit", "rater", "item", "label")
JUDGE_COLUMNS = ("unit", "judge", "item", "label")


@dataclass(frozen=True)
class CsvInputError(Exception):
    """A problem in the input file, located by line and column when possible."""

    path: str
    message: str
    line: int | None = None
    column: str | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f", line {self.line}"
        if self.column is not None:
            where += f", column {self.column!r}"
        return f"{where}: {self.message}"


Row = tuple[str, str, str, str | None]


def read_ratings_csv(path: str | Path) -> list[Row]:
    """Read long-form ratings ``(unit, rater, item, label)`` from a CSV file.

    Blank labels become None (missing). Raises :class:`CsvInputError` naming the file, line and
    column of the first problem: missing header columns, wrong field count, blank
    unit/rater/item, or a duplicate rating.
    """
    return [row for _, row in read_numbered(path)]


def _csv_rows(path: str | Path, columns: tuple[str, ...]) -> tuple[int, list[str], list[tuple[int, list[str]]]]:
    """Return (header line, header, numbered non-blank rows) once the header names every column once."""
    name = str(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            rows = [(reader.line_num, r) for r in reader]
    except FileNotFoundError:
        raise CsvInputError(name, "file not found") from None
    except UnicodeDecodeError as exc:
        raise CsvInputError(name, f"not UTF-8 text ({exc.reason})") from None
    except csv.Error as exc:
        raise CsvInputError(name, f"malformed CSV: {exc}") from None
    except OSError as exc:
        raise CsvInputError(name, f"cannot read file: {exc.strerror or exc}") from None
    rows = [(n, r) for n, r in rows if any(cell.strip() for cell in r)]
    expected = ",".join(columns)
    if not rows:
        raise CsvInputError(name, f"empty file; expected the header {expected}", 1)
    header_line, header = rows[0]
    header = [h.strip().lower() for h in header]
    for col in columns:
        if header.count(col) != 1:
            problem = "missing" if col not in header else "repeated"
            raise CsvInputError(name, f"header column {col!r} {problem}; expected {expected}", header_line)
    return header_line, header, rows[1:]


def read_numbered(path: str | Path) -> list[tuple[int, Row]]:
    """Return the long ratings of ``path`` with the line each was read from."""
    name = str(path)
    header_line, header, rows = _csv_rows(path, COLUMNS)
    where = {col: header.index(col) for col in COLUMNS}
    out: list[tuple[int, Row]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in rows:
        if len(row) != len(header):
            raise CsvInputError(name, f"expected {len(header)} fields, found {len(row)}", line)
        unit, rater, item, label = (row[where[c]].strip() for c in COLUMNS)
        for col, value in (("unit", unit), ("rater", rater), ("item", item)):
            if not value:
                raise CsvInputError(name, f"{col} is empty", line, col)
        key = (unit, rater, item)
        if key in seen:
            raise CsvInputError(
                name,
                f"duplicate rating of unit {unit!r} by rater {rater!r} on item {item!r} "
                f"(first on line {seen[key]})",
                line,
            )
        seen[key] = line
        out.append((line, (unit, rater, item, label or None)))
    if not out:
        raise CsvInputError(name, "no rating rows after the header", header_line)
    return out


def read_judges(path: str | Path) -> list[Row]:
    """Read ``unit,judge,item,label`` rows; raise CsvInputError at the first problem."""
    name = str(path)
    header_line, header, rows = _csv_rows(path, JUDGE_COLUMNS)
    where = {col: header.index(col) for col in JUDGE_COLUMNS}
    out: list[Row] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in rows:
        if len(row) != len(header):
            raise CsvInputError(name, f"expected {len(header)} fields, found {len(row)}", line)
        unit, judge, item, label = (row[where[c]].strip() for c in JUDGE_COLUMNS)
        for col, value in (("unit", unit), ("judge", judge), ("item", item)):
            if not value:
                raise CsvInputError(name, f"{col} is empty", line, col)
        if (unit, judge, item) in seen:
            raise CsvInputError(name, f"duplicate label of unit {unit!r} by judge {judge!r} on item {item!r} "
                                f"(first on line {seen[(unit, judge, item)]})", line)
        seen[(unit, judge, item)] = line
        out.append((unit, judge, item, label or None))
    if not out:
        raise CsvInputError(name, "no judge rows after the header", header_line)
    return out


def read_vera(path: str | Path) -> list[tuple[int, Row]]:
    """Return the dimension labels of a published VERA-MH ratings file as numbered long rows."""
    from .vera import read_vera_ratings

    name = str(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise CsvInputError(name, "file not found") from None
    except UnicodeDecodeError as exc:
        raise CsvInputError(name, f"not UTF-8 text ({exc.reason})") from None
    parsed = read_vera_ratings(text, name)
    if parsed.problems:
        first = parsed.problems[0]
        more = f" (and {len(parsed.problems) - 1} more problem(s))" if len(parsed.problems) > 1 else ""
        raise CsvInputError(name, first.message + more, first.line, first.column)
    return [(r.line, (r.unit, r.rater, d, label)) for r in parsed.ratings for d, label in r.dimensions.items()]


def vera_unit(unit: str) -> str:
    """Return a conversation id as the VERA-MH ratings reader keeps it: without a leading '#'."""
    return unit.lstrip("#").strip() if unit.startswith("#") else unit


def non_negative(text: str) -> int:
    """Parse a count option (0 or more) for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value

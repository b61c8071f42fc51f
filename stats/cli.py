"""Command line: ``python -m stats agreement FILE.csv [options]``, no database needed.

``python -m stats alt-test RATINGS.csv --judges JUDGES.csv --epsilon E`` runs the alternative
annotator test (``stats.alt_test_cli``); ``python -m stats bundle BUNDLE.zip`` prints a
publication bundle's reliability figures from its files alone (``stats.bundle_cli``).

FILE.csv has the header ``unit,rater,item,label`` (any column order, extra columns ignored);
an empty label is a missing rating. Input errors print ``error: FILE, line N, column C: ...``
on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .data import (
    DEFAULT_NA_LABELS,
    LEVELS,
    NA_POLICIES,
    StatsInputError,
    as_number,
    is_na_label,
)
from .labels import LabelNormaliser, label_key
from .precision import DEFAULT_TARGET_WIDTH
from .report import (
    DEFAULT_POOLED_RESAMPLING,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    POOLED_RESAMPLING,
    AgreementReport,
    ItemAgreement,
    agreement_report,
)

COLUMNS = ("unit", "rater", "item", "label")


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
    return [row for _, row in _read_numbered(path)]


def _read_numbered(path: str | Path) -> list[tuple[int, Row]]:
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
    if not rows:
        raise CsvInputError(name, "empty file; expected the header unit,rater,item,label", 1)
    header_line, header = rows[0]
    header = [h.strip().lower() for h in header]
    for col in COLUMNS:
        if header.count(col) != 1:
            problem = "missing" if col not in header else "repeated"
            raise CsvInputError(
                name,
                f"header column {col!r} {problem}; expected unit,rater,item,label",
                header_line,
            )
    where = {col: header.index(col) for col in COLUMNS}
    out: list[tuple[int, Row]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in rows[1:]:
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


def _check_labels(
    path: str,
    rows: Sequence[tuple[int, Row]],
    *,
    level: str,
    na: str,
    order: Sequence[str] | None,
    na_labels: Sequence[str] = DEFAULT_NA_LABELS,
) -> None:
    # Locate scale problems by line here; the library would only name the label. Labels are
    # compared as the library compares them (stats.labels: case and whitespace ignored).
    normalise = LabelNormaliser(na_labels=na_labels)
    allowed = None if order is None else {label_key(normalise(x)) for x in order}
    order_has_na = order is not None and any(is_na_label(x, na_labels) for x in order)
    shown = "" if order is None else " (" + ", ".join(order) + ")"
    for line, (_, _, _, raw) in rows:
        label, is_na = normalise.split(raw)
        if label is None or (is_na and na == "exclude"):
            continue
        if allowed is not None:
            known = order_has_na if is_na else label_key(label) in allowed
            if not known:
                raise CsvInputError(
                    path, f"label {raw!r} is not in --order{shown}", line, "label"
                )
        elif level != "nominal" and as_number(label) is None:
            hint = " (use --na exclude or --order)" if is_na else " (use --order)"
            raise CsvInputError(
                path, f"{level} level needs numeric labels, found {raw!r}{hint}", line, "label"
            )


def _fmt(value: float | None, ci: object = None) -> str:
    text = "n/a" if value is None else f"{value:.3f}"
    if ci is not None and getattr(ci, "low", None) is not None:
        text += f" [{ci.low:.3f}, {ci.high:.3f}]"  # type: ignore[attr-defined]
    return text


def _row(label: str, a: ItemAgreement) -> list[str]:
    cis = a.cis
    cells = [
        label,
        str(a.n_units),
        str(a.n_raters),
        str(a.n_ratings),
        _fmt(a.percent_agreement, cis.get("percent_agreement")),
        _fmt(a.fleiss_kappa, cis.get("fleiss_kappa")),
        _fmt(a.fleiss_p0),
        _fmt(a.fleiss_pe),
        _fmt(a.cohen_kappa_mean, cis.get("cohen_kappa_mean")),
        _fmt(a.krippendorff_alpha, cis.get("krippendorff_alpha")),
    ]
    if a.level != "nominal":
        cells.append(_fmt(a.krippendorff_alpha_nominal, cis.get("krippendorff_alpha_nominal")))
    cells.append(_fmt(a.gwet_ac1, cis.get("gwet_ac1")))
    return cells


_VARIANTS = {
    "fleiss_1971": "Fleiss (1971), the same number of raters on every unit",
    "gwet_2014_varying_raters": "Gwet (2014) generalisation, a varying number of raters per unit",
}


def format_table(report: AgreementReport, source: str) -> str:
    """Render the report as a plain-text table followed by the notes."""
    head = [
        "item",
        "units",
        "raters",
        "ratings",
        "%agree",
        "Fleiss k",
        "P0",
        "Pe",
        "mean Cohen k",
        f"alpha ({report.level})",
    ]
    if report.level != "nominal":
        head.append("alpha (nominal)")
    head.append("Gwet AC1")
    body = [_row("pooled", report.pooled)]
    body += [_row(str(k), v) for k, v in report.items.items()]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = [f"Agreement for {source}"]
    na_labels = report.na_labels
    if isinstance(na_labels, dict):
        na_labels = tuple(dict.fromkeys(x for labels in na_labels.values() for x in labels))
    setup = f"level: {report.level}; N/A: {report.na_policy} (N/A labels: {', '.join(na_labels)})"
    lines.append(setup)
    if report.n_resamples:
        lines.append(
            f"intervals in brackets: {report.interval_method_label}; seed {report.seed}"
        )
    lines.append("pooled: every (unit, item) pair is one unit")
    blocks = [("pooled", report.pooled), *((str(k), v) for k, v in report.items.items())]
    variants: dict[str, list[str]] = {}
    for where, block in blocks:
        if block.fleiss.variant:
            variants.setdefault(block.fleiss.variant, []).append(where)
    for variant, where in variants.items():
        lines.append(f"Fleiss' kappa, {_VARIANTS.get(variant, variant)}: {', '.join(where)}")
    lines.append("")
    for r in [head, *body]:
        lines.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
    plans = [
        (where, block.precision["krippendorff_alpha"])
        for where, block in blocks
        if "krippendorff_alpha" in block.precision
    ]
    if plans:
        lines += ["", f"Precision (Krippendorff's alpha, target width {plans[0][1].target:.2f}):"]
        lines += [f"  {where}: {plan.note}" for where, plan in plans]
    notes = [("pooled", report.pooled.notes)] + [
        (f"item {k}", v.notes) for k, v in report.items.items()
    ]
    if any(n for _, n in notes):
        lines += ["", "Notes:"]
        lines += [f"  {where}: {note}" for where, ns in notes for note in ns]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``python -m stats``."""
    parser = argparse.ArgumentParser(
        prog="python -m stats", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    agree = sub.add_parser("agreement", help="inter-rater agreement of a long-form CSV file")
    agree.add_argument("file", help="CSV with header unit,rater,item,label (empty label = missing)")
    agree.add_argument(
        "--level", choices=LEVELS, default="nominal", help="Krippendorff alpha level"
    )
    agree.add_argument(
        "--na", choices=NA_POLICIES, default="category", help="N/A as a category or excluded"
    )
    agree.add_argument(
        "--bootstrap",
        type=_non_negative,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples for CIs (default {DEFAULT_RESAMPLES}, as the app's reports; 0 for "
        "none; per item: conversations; pooled: see --pooled-resampling)",
    )
    agree.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="S",
        help=f"random seed of the bootstrap (default {DEFAULT_SEED}, as the app's reports)",
    )
    agree.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    agree.add_argument(
        "--order",
        default=None,
        help="comma-separated scale, e.g. 'no,yes' or 'low,mid,high'; every label in the data "
        "must be in it (case-insensitive). Its order matters for --level ordinal/interval; "
        "at nominal level it only declares the full set of categories",
    )
    agree.add_argument(
        "--na-label",
        action="append",
        default=None,
        metavar="LABEL",
        help="a label meaning 'not applicable' (e.g. 'Not Relevant'); repeat for several. "
        "When given, these REPLACE the default N/A spellings ("
        + ", ".join(DEFAULT_NA_LABELS).replace("%", "%%")
        + "); list them too to keep them",
    )
    agree.add_argument(
        "--pooled-resampling",
        choices=POOLED_RESAMPLING,
        default=DEFAULT_POOLED_RESAMPLING,
        help="pooled bootstrap: resample whole conversations with all their items (cluster, "
        "default, as the app's reports) or (conversation, item) pairs as if independent (pairs)",
    )
    agree.add_argument(
        "--target-width",
        type=float,
        default=DEFAULT_TARGET_WIDTH,
        metavar="W",
        help="CI width the precision plans aim at (default 0.10; needs --bootstrap)",
    )
    agree.add_argument("--json", action="store_true", help="print JSON instead of a table")
    agree.add_argument(
        "--format", choices=("long", "vera-mh"), default="long",
        help="long: unit,rater,item,label; vera-mh: the published VERA-MH clinician ratings CSV "
        "(the five dimension columns are the items; NA cells are missing; a leading # is dropped)",
    )
    from .alt_test_cli import add_parser
    from .bundle_cli import add_parser as add_bundle_parser

    add_parser(sub)
    add_bundle_parser(sub)
    return parser


def _read_vera(path: str) -> list[tuple[int, Row]]:
    from .vera import read_vera_ratings

    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise CsvInputError(path, "file not found") from None
    except UnicodeDecodeError as exc:
        raise CsvInputError(path, f"not UTF-8 text ({exc.reason})") from None
    parsed = read_vera_ratings(text, path)
    if parsed.problems:
        first = parsed.problems[0]
        more = f" (and {len(parsed.problems) - 1} more problem(s))" if len(parsed.problems) > 1 else ""
        raise CsvInputError(path, first.message + more, first.line, first.column)
    return [(r.line, (r.unit, r.rater, d, label)) for r in parsed.ratings for d, label in r.dimensions.items()]


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    if args.command == "alt-test":
        from .alt_test_cli import main as alt_test_main

        return alt_test_main(args)
    if args.command == "bundle":
        from .bundle_cli import main as bundle_main

        return bundle_main(args)
    if not 0 < args.confidence < 1:
        print("error: --confidence must lie strictly between 0 and 1", file=sys.stderr)
        return 2
    if not args.target_width > 0:
        print("error: --target-width must be positive", file=sys.stderr)
        return 2
    order = [x.strip() for x in args.order.split(",")] if args.order else None
    na_labels = tuple(x.strip() for x in args.na_label) if args.na_label else DEFAULT_NA_LABELS
    if order is not None and args.level == "nominal":
        print(
            "warning: --order has no effect on nominal coefficients (nominal categories are "
            "unordered); its labels are only checked against the data and declare the full "
            "set of categories (which Gwet's AC1 counts)",
            file=sys.stderr,
        )
    try:
        numbered = _read_vera(args.file) if args.format == "vera-mh" else _read_numbered(args.file)
        if args.format == "vera-mh" and order is None:
            from .vera import DIMENSION_LABELS

            # The published format declares its four dimension labels, as the app's study does:
            # Gwet's AC1 counts all four on every dimension, as on the reliability page.
            order = list(DIMENSION_LABELS)
        _check_labels(
            args.file, numbered, level=args.level, na=args.na, order=order, na_labels=na_labels
        )
        report = agreement_report(
            [row for _, row in numbered],
            level=args.level,
            na=args.na,
            na_labels=na_labels,
            bootstrap=args.bootstrap,
            seed=args.seed,
            order=order,
            confidence=args.confidence,
            pooled_resampling=args.pooled_resampling,
            target_width=args.target_width,
        )
    except CsvInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StatsInputError as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(format_table(report, args.file))
    return 0

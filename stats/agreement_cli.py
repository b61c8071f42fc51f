"""``python -m stats agreement FILE.csv [options]``: inter-rater agreement, no database needed.

FILE.csv has the header ``unit,rater,item,label`` (any column order, extra columns ignored);
an empty label is a missing rating; ``--format vera-mh`` reads the published VERA-MH clinician
ratings file instead. Input errors print ``error: FILE, line N, column C: ...`` on stderr and
exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .cli_input import CsvInputError, Row, non_negative, read_numbered, read_vera
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


def add_parser(sub: Any) -> None:
    """Register the ``agreement`` subcommand on the ``python -m stats`` parser."""
    agree = sub.add_parser("agreement", help="inter-rater agreement of a long-form CSV file")
    add_arguments(agree)
    agree.set_defaults(run=main)


def add_arguments(agree: argparse.ArgumentParser) -> None:
    """Add the options of ``agreement`` to ``agree``."""
    agree.add_argument("file", help="CSV with header unit,rater,item,label (empty label = missing)")
    agree.add_argument(
        "--level", choices=LEVELS, default="nominal", help="Krippendorff alpha level"
    )
    agree.add_argument(
        "--na", choices=NA_POLICIES, default="category", help="N/A as a category or excluded"
    )
    agree.add_argument(
        "--bootstrap",
        type=non_negative,
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


def run_argv(argv: Sequence[str]) -> int:
    """Run ``python -m stats agreement`` with ``argv`` (its words after ``agreement``)."""
    parser = argparse.ArgumentParser(prog="python -m stats agreement")
    add_arguments(parser)
    return main(parser.parse_args(argv))


def main(args: argparse.Namespace) -> int:
    """Run the subcommand; return the exit status (0 ok, 2 bad input)."""
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
        numbered = read_vera(args.file) if args.format == "vera-mh" else read_numbered(args.file)
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

"""``python -m stats alt-test RATINGS.csv --judges JUDGES.csv --epsilon E [--json]``.

RATINGS.csv is long ``unit,rater,item,label`` (or, with ``--format vera-mh``, the published
VERA-MH clinician ratings file, as ``python -m stats agreement`` reads it); JUDGES.csv is long
``unit,judge,item,label``. Instances are (unit, item) pairs; the test runs per judge, pooled
over items and per item, exactly as the judges-vs-humans report does (``stats.alt_test``).
Labels are compared as the report compares them: case and spacing ignored, N/A spellings one
label (or dropped with ``--na exclude``). Input errors name the file, line and column and
exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .alt_test import (
    DEFAULT_Q,
    EPSILON_ADVICE,
    MIN_INSTANCES_PER_RATER,
    MIN_RATERS,
    MIN_RATERS_PER_INSTANCE,
    SCORINGS,
    AltTestReport,
    alt_test_long,
)
from .cli_input import CsvInputError, read_judges, read_numbered, read_vera, vera_unit
from .data import StatsInputError
from .labels import LabelNormaliser, label_key


def add_parser(sub: Any) -> None:
    """Register the ``alt-test`` subcommand on the ``python -m stats`` parser."""
    parser = sub.add_parser(
        "alt-test",
        help="the alternative annotator test of LLM judges against human raters (Calderon et al., ACL 2025)",
        description="Run the alternative annotator test of LLM judges against human raters; see stats.alt_test.",
    )
    parser.add_argument("file", help="ratings CSV: unit,rater,item,label (or --format vera-mh)")
    parser.add_argument("--judges", required=True, help="judge labels CSV: unit,judge,item,label")
    parser.add_argument("--epsilon", type=float, required=True, help=EPSILON_ADVICE.replace("%", "%%"))
    parser.add_argument("--q", type=float, default=DEFAULT_Q, help="Benjamini-Yekutieli false discovery rate (default 0.05)")
    parser.add_argument("--scoring", choices=SCORINGS, default="accuracy",
                        help="alignment score: accuracy (categories, default) or neg_rmse (numbers)")
    parser.add_argument("--na", choices=("category", "exclude"), default="category",
                        help="N/A answers as a label of their own (default) or dropped")
    parser.add_argument("--format", choices=("long", "vera-mh"), default="long", help="format of the ratings file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=main)


def run(
    ratings: Sequence[tuple[str, str, str, str | None]],
    judges: Sequence[tuple[str, str, str, str | None]],
    *,
    epsilon: float,
    q: float = DEFAULT_Q,
    scoring: str = "accuracy",
    na: str = "category",
) -> dict[str, AltTestReport]:
    """Return the alt-test of each judge in ``judges`` (in order of appearance)."""
    normalise = LabelNormaliser()

    def clean(label: str | None) -> Any:
        value, is_na = normalise.split(label)
        if value is None or (is_na and na == "exclude"):
            return None
        return label_key(value) if scoring == "accuracy" else value

    humans = [(u, r, i, clean(label)) for u, r, i, label in ratings]
    names = list(dict.fromkeys(j for _, j, _, _ in judges))
    return {
        name: alt_test_long(humans, [(u, i, clean(label)) for u, j, i, label in judges if j == name], judge=name,
                            epsilon=epsilon, q=q, scoring=scoring)  # type: ignore[arg-type]
        for name in names
    }


def _text(reports: dict[str, AltTestReport], epsilon: float, q: float) -> str:
    lines = [
        f"Alternative annotator test (Calderon, Reichart & Dror, ACL 2025): epsilon {epsilon:g}, "
        f"Benjamini-Yekutieli q {q:g}; a judge passes with winning rate >= 0.5",
        f"minimums: {MIN_RATERS_PER_INSTANCE} raters per instance, {MIN_INSTANCES_PER_RATER} instances per rater, "
        f"{MIN_RATERS} raters",
        "",
    ]
    for name, report in reports.items():
        t = report.pooled
        omega = "n/a" if t.winning_rate is None else f"{t.winning_rate:.3f}"
        rho = "n/a" if t.advantage_probability is None else f"{t.advantage_probability:.3f}"
        lines.append(f"{name}: {t.verdict.upper() if t.passed is not None else t.verdict}; winning rate {omega}, "
                     f"advantage probability {rho}; {t.n_instances} instances; "
                     f"passes on {report.items_passed} of {report.items_decided} decided items")
        for r in t.per_rater:
            lines.append(f"  {r.rater!s:<20} n={r.n_instances:<5} rho={r.rho_judge:.3f} rho_rater={r.rho_rater:.3f} "
                         f"p={r.p_value:.4g} p_BY={r.p_adjusted:.4g} {'judge wins' if r.judge_wins else 'not rejected'}")
        for e in t.excluded_raters:
            lines.append(f"  {e.rater!s:<20} not tested: {e.reason}")
        lines.extend(f"  note: {note}" for note in t.notes)
        lines.append("")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run the subcommand; return the exit status (0 ok, 2 bad input)."""
    try:
        numbered = read_vera(args.file) if args.format == "vera-mh" else read_numbered(args.file)
        judges = read_judges(args.judges)
        if args.format == "vera-mh":
            # The published ratings write some conversation ids with a leading '#' (read without it): the
            # judges' file names them the same way, so its ids are read the same way (issue 31, defect 6).
            judges = [(vera_unit(u), j, i, label) for u, j, i, label in judges]
        reports = run([row for _, row in numbered], judges, epsilon=args.epsilon, q=args.q, scoring=args.scoring,
                      na=args.na)
    except CsvInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StatsInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        payload = {
            "epsilon": args.epsilon,
            "q": args.q,
            "scoring": args.scoring,
            "na_policy": args.na,
            "ratings": str(Path(args.file)),
            "judges": {name: report.as_dict() for name, report in reports.items()},
        }
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(_text(reports, args.epsilon, args.q))
    return 0

"""Command line of the pure statistics: ``python -m stats SUBCOMMAND ...``, no database needed.

``python -m stats agreement FILE.csv`` prints inter-rater agreement (``stats.agreement_cli``);
``python -m stats alt-test RATINGS.csv --judges JUDGES.csv --epsilon E`` runs the alternative
annotator test (``stats.alt_test_cli``); ``python -m stats bundle BUNDLE.zip`` prints a
publication bundle's reliability figures from its files alone (``stats.bundle_cli``).

Each subcommand lives in its own module with ``add_parser(sub)``, which registers it and sets
``run`` to its ``main(args)``; this module only assembles them (it imports them, they never
import it). Input files are read by ``stats.cli_input``. Exit status 2 on bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import agreement_cli, alt_test_cli, bundle_cli
from .agreement_cli import format_table
from .cli_input import CsvInputError, read_ratings_csv

__all__ = ["CsvInputError", "build_parser", "format_table", "main", "read_ratings_csv"]

SUBCOMMANDS = (agreement_cli, alt_test_cli, bundle_cli)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``python -m stats``."""
    parser = argparse.ArgumentParser(prog="python -m stats", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    return args.run(args)

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.management.importing import run_import
from core.uploads import read_path
from corpus.instruments.services import instrument_import


class Command(BaseCommand):
    help = (
        "Import an instrument: a VERA-MH question-flow rubric (TSV) or an evalsite instrument "
        "(YAML/JSON). All or nothing; every problem is reported with line and column."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--format", default="auto", choices=["auto", "vera-mh", "yaml", "json"])
        parser.add_argument("--key", help="instrument key (VERA-MH rubrics; default vera-mh)")
        parser.add_argument("--name", help="instrument name (VERA-MH rubrics)")
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        def action():  # type: ignore[no-untyped-def]
            (_, text), *_ = read_path(options["path"])
            return instrument_import(
                text=text,
                file=str(options["path"]),
                fmt=options["format"],
                key=options["key"],
                name=options["name"],
                dry_run=options["dry_run"],
            )

        instrument, created = run_import(self, action)
        if instrument is None:
            self.stdout.write(self.style.SUCCESS("Valid. Nothing was imported (dry run)."))
        elif created:
            self.stdout.write(self.style.SUCCESS(f"Imported {instrument} with {instrument.items.count()} item(s)."))
        else:
            self.stdout.write(f"Already present with identical content: {instrument}.")

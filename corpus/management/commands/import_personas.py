from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.management.importing import run_import
from core.uploads import read_path
from corpus.personas.services import personas_import


class Command(BaseCommand):
    help = (
        "Import a persona set: a VERA-MH personas TSV (every controlled field validated) or an "
        "evalsite persona set (YAML/JSON). All or nothing unless --valid-only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--format", default="auto", choices=["auto", "vera-mh", "yaml", "json"])
        parser.add_argument("--key", help="persona set key (VERA-MH files; default vera-mh-personas)")
        parser.add_argument("--name", help="persona set name")
        parser.add_argument(
            "--valid-only",
            action="store_true",
            help="import the valid rows and skip (and list) the rows with errors",
        )
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        def action():  # type: ignore[no-untyped-def]
            (_, text), *_ = read_path(options["path"])
            return personas_import(
                text=text,
                file=str(options["path"]),
                fmt=options["format"],
                key=options["key"],
                name=options["name"],
                valid_only=options["valid_only"],
                dry_run=options["dry_run"],
            )

        result = run_import(self, action)
        for problem in result.skipped:
            self.stderr.write(f"skipped: {problem}")
        if result.persona_set is None:
            self.stdout.write(self.style.SUCCESS(
                f"Valid: {result.imported_rows} of {result.total_rows} persona(s). Nothing was imported (dry run)."
            ))
        else:
            verb = "Imported" if result.created else "Already present with identical content:"
            self.stdout.write(self.style.SUCCESS(
                f"{verb} {result.imported_rows} of {result.total_rows} persona(s) as {result.persona_set}; "
                f"{result.linked} waiting conversation(s) linked to their persona."
            ))

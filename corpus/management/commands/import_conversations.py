from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.management.importing import run_import
from core.uploads import read_path
from corpus.conversations.services import conversations_import


class Command(BaseCommand):
    help = (
        "Import conversations from an evalsite JSONL file, or a folder (or .zip) of VERA-MH "
        "transcripts. All or nothing; re-imported conversations are detected by content hash."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a .jsonl file, a VERA-MH run folder, a folder of run folders, or a .zip")
        parser.add_argument("--format", default="auto", choices=["auto", "jsonl", "vera-mh"])
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        result = run_import(
            self,
            lambda: conversations_import(
                files=read_path(options["path"]), fmt=options["format"], dry_run=options["dry_run"]
            ),
        )
        self.stdout.write(self.style.SUCCESS(result.summary().capitalize() + "."))
        for external_id in result.duplicates:
            self.stdout.write(f"  already present: {external_id}")

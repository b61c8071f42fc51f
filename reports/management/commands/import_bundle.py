from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.management.importing import run_import
from reports.bundle.importer import bundle_import


class Command(BaseCommand):
    help = ("Rebuild a study from its publication bundle (zip): all or nothing, every file checked against the "
            "manifest's SHA-256, every problem named by file, line and column.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the bundle's zip")
        parser.add_argument("--coordinator", help="username of the coordinator who manages the rebuilt study")
        parser.add_argument("--dry-run", action="store_true", help="check everything, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        coordinators = []
        if options["coordinator"]:
            user = get_user_model().objects.filter(username=options["coordinator"]).first()
            if user is None:
                raise CommandError(f"no user '{options['coordinator']}'")
            coordinators.append(user)
        result = run_import(self, lambda: bundle_import(data=path.read_bytes(), file=path.name, actor=coordinators[0] if coordinators else None,
                                                        dry_run=options["dry_run"], coordinators=coordinators))
        self.stdout.write(self.style.SUCCESS(result.summary().capitalize() + "."))
        if not result.dry_run:
            self.stdout.write(f"  study id {result.study.pk}")

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.accounts import accounts_create_from_csv
from core.management.importing import run_import


class Command(BaseCommand):
    help = (
        "Create many in-app accounts at once from a CSV with the columns username,email,roles "
        "(roles separated by ';': clinician, coordinator, researcher, admin). All or nothing. "
        "Passwords are never printed: use --passwords-out FILE to write random initial ones to a private file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="CSV file, UTF-8")
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")
        parser.add_argument("--passwords-out", metavar="FILE", help="write username,initial_password to FILE (mode 600)")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        out = options["passwords_out"]
        if out and Path(out).exists():
            raise CommandError(f"{out} exists; choose a new file for the initial passwords")
        text = path.read_text(encoding="utf-8-sig") if path.exists() else None
        if text is None:
            raise CommandError(f"no file {path}")
        result = run_import(self, lambda: accounts_create_from_csv(
            text=text, file=path.name, dry_run=options["dry_run"], initial_passwords=bool(out)))
        if result.dry_run:
            self.stdout.write(self.style.SUCCESS(f"Valid: {len(result.created)} account(s). Nothing was created (dry run)."))
            return
        if out:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["username", "initial_password"])
                writer.writerows(sorted(result.passwords.items()))
        self.stdout.write(self.style.SUCCESS(
            f"Created {len(result.created)} account(s): {', '.join(result.created)}."
            + (f" Initial passwords written to {out}." if out else " They have no password yet: set one in /admin/ or use password reset.")
        ))

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.management.importing import run_import
from core.uploads import read_path
from corpus.models import Instrument, InstrumentKind
from judging.external import judge_labels_import


class Command(BaseCommand):
    help = (
        "Import judge labels made outside the app (long CSV: unit,judge,item,label[,rationale][,instance]) "
        "as one external judge run: its ensemble and judges-vs-humans reports work like an in-app run's. "
        "All or nothing; problems grouped with their lines."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="CSV file, UTF-8")
        parser.add_argument("--instrument", required=True, help="key of the instrument the labels answer (newest version)")
        parser.add_argument("--name", default="", help="name of the run")
        parser.add_argument("--actor", help="username recorded as the run's creator")
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        instrument = Instrument.objects.filter(key=options["instrument"]).exclude(kind=InstrumentKind.SECTION).order_by("-version").first()
        if instrument is None:
            raise CommandError(f"no instrument with key '{options['instrument']}'")
        actor = None
        if options["actor"]:
            actor = get_user_model().objects.filter(username=options["actor"]).first()
            if actor is None:
                raise CommandError(f"unknown user '{options['actor']}'")
        path = Path(options["path"])

        def action():  # type: ignore[no-untyped-def]
            (_, text), *_ = read_path(path)
            return judge_labels_import(text=text, file=path.name, instrument=instrument, name=options["name"],
                                       created_by=actor, dry_run=options["dry_run"])

        result = run_import(self, action)
        summary = (f"{result.n_rows} row(s), {result.n_labels} label(s) from {len(result.judges)} judge(s) "
                   f"({', '.join(result.judges)}) on {result.n_conversations} conversation(s)")
        if result.dry_run:
            self.stdout.write(self.style.SUCCESS(f"Valid: {summary}. Nothing was imported (dry run)."))
        else:
            self.stdout.write(self.style.SUCCESS(
                f"Imported {summary} as judge run {result.run.pk} '{result.run}'; {result.n_ensemble} ensemble label(s)."
            ))

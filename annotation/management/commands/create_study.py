from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.studies.from_ratings import study_create_from_ratings
from core.management.importing import run_import
from core.uploads import read_path
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Instrument, InstrumentKind


class Command(BaseCommand):
    help = (
        "Create a study from the units of a ratings file (--from-ratings FILE): each unit is the "
        "imported conversation with that code or source id, or a placeholder conversation "
        "('transcript not imported') that importing the transcript fills later. Prints the study id."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from-ratings", required=True, metavar="FILE", help="a ratings CSV (long, or vera-mh)")
        parser.add_argument("--format", default="long", choices=["long", "vera-mh"])
        parser.add_argument("--name", required=True, help="name of the study")
        parser.add_argument("--instrument", required=True, help="key of the instrument (newest version), e.g. vera-mh")
        parser.add_argument("--section", default="study-section", help="key of the rating section, or '' for none")
        parser.add_argument("--coordinator", action="append", default=[], help="username of a coordinator (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        instrument = Instrument.objects.filter(key=options["instrument"]).exclude(kind=InstrumentKind.SECTION).order_by("-version").first()
        if instrument is None:
            raise CommandError(f"no instrument with key '{options['instrument']}'; import it first (import_rubric / import_instrument)")
        section = None
        if options["section"]:
            if options["section"] == "study-section":
                builtin_instruments_load()
            section = Instrument.objects.filter(key=options["section"], kind=InstrumentKind.SECTION).order_by("-version").first()
            if section is None:
                raise CommandError(f"no rating section with key '{options['section']}'")
        users = get_user_model().objects
        coordinators = []
        for username in options["coordinator"]:
            user = users.filter(username=username).first()
            if user is None:
                raise CommandError(f"unknown user '{username}'")
            coordinators.append(user)
        path = Path(options["from_ratings"])

        def action():  # type: ignore[no-untyped-def]
            (_, text), *_ = read_path(path)
            return study_create_from_ratings(
                name=options["name"], instrument=instrument, section=section, text=text, file=path.name,
                fmt=options["format"], coordinators=coordinators,
            )

        result = run_import(self, action)
        self.stdout.write(self.style.SUCCESS(
            f"Created study {result.study.pk} '{result.study.name}' with {result.n_units} conversation(s): "
            f"{result.n_matched} already imported, {result.n_placeholders} placeholder(s) waiting for their transcript"
            + (f", {result.n_flagged} flagged (kept: they were rated)" if result.n_flagged else "")
            + f"; {len(result.raters)} rater name(s) in the file."
        ))
        self.stdout.write(f"Next: manage.py import_ratings {path} --study {result.study.pk}"
                          + (" --format vera-mh" if options["format"] == "vera-mh" else " --external-raters"))

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from annotation.studies.ratings_import import ratings_import
from core.management.importing import run_import
from core.uploads import read_path


class Command(BaseCommand):
    help = (
        "Import ratings collected outside the app into a study: a long-format CSV "
        "(unit,rater,item,label[,note]; an empty label is a missing answer) or, with "
        "--format vera-mh, the published VERA-MH clinician ratings CSV unchanged. All or nothing; "
        "every problem is reported with its line and column, identical ones grouped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="CSV file, UTF-8")
        parser.add_argument("--study", type=int, required=True, help="id of the study")
        parser.add_argument("--actor", help="username recorded in the study's audit trail")
        parser.add_argument("--dry-run", action="store_true", help="validate only, write nothing")
        parser.add_argument("--format", default="long", choices=["long", "vera-mh"], help="long (default) or vera-mh")
        parser.add_argument(
            "--external-raters", action="store_true",
            help="raters who are not users rating in the study become its external raters (always on for vera-mh)",
        )
        parser.add_argument("--persona-set-key", default="", help="vera-mh: key of the persona set made from the design columns")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with id {options['study']}")
        actor = None
        if options["actor"]:
            actor = get_user_model().objects.filter(username=options["actor"]).first()
            if actor is None:
                raise CommandError(f"unknown user '{options['actor']}'")
        path = Path(options["path"])

        def action():  # type: ignore[no-untyped-def]
            (_, text), *_ = read_path(path)
            return ratings_import(
                study=study, text=text, file=path.name, actor=actor, dry_run=options["dry_run"],
                fmt=options["format"], external_raters=options["external_raters"],
                persona_set_key=options["persona_set_key"],
            )

        result = run_import(self, action)
        summary = (
            f"{result.n_rows} row(s), {result.n_labels} label(s), {result.n_ratings} rating(s) "
            f"({result.n_assignments_created} new assignment(s), {result.n_assignments_reused} reused)"
        )
        if result.external_raters:
            summary += f"; external raters: {', '.join(result.external_raters)} ({result.n_external_created} new)"
        if result.dry_run:
            self.stdout.write(self.style.SUCCESS(f"Valid: {summary}. Nothing was imported (dry run)."))
        else:
            self.stdout.write(self.style.SUCCESS(f"Imported {summary} into '{study.name}'."))
        for note in result.notes:
            self.stdout.write(f"  {note}")

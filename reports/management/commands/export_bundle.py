from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from reports.bundle.export import study_bundle_zip


class Command(BaseCommand):
    help = "Write a study's publication bundle (zip): the files, codebook, figures and a manifest with SHA-256 checksums."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", type=int, help="the study's id")
        parser.add_argument("-o", "--output", help="the zip to write (default: study-ID-bundle.zip)")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        path = Path(options["output"] or f"study-{study.pk}-bundle.zip")
        path.write_bytes(study_bundle_zip(study=study))
        self.stdout.write(self.style.SUCCESS(f"Wrote {path} ({path.stat().st_size:,} bytes)."))

"""Send the reminder emails that the studies' schedules make due (for cron, beside the workers' own check)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.models import Study
from annotation.reminders.services import reminders_send, reminders_send_due


class Command(BaseCommand):
    help = "Send due reminder emails to raters with work left (every study with a schedule, or --study ID now)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, help="Remind this study's raters now, as the progress page's button does")

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("study"):
            study = Study.objects.filter(pk=options["study"]).first()
            if study is None:
                from django.core.management.base import CommandError

                raise CommandError(f"no study {options['study']}")
            self.stdout.write(reminders_send(study=study, actor=None).summary())
            return
        self.stdout.write(f"{reminders_send_due()} scheduled reminder(s) sent")

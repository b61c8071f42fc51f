"""Send the reminder emails that the studies' schedules make due (for cron, beside the workers' own check)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from annotation.reminders.services import ReminderCooldown, reminders_send, reminders_send_due
from core.emails import backend_info


class Command(BaseCommand):
    help = "Send due reminder emails to raters with work left (every study with a schedule, or --study ID now)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, help="Remind this study's raters now, as the progress page's button does")
        parser.add_argument("--again", action="store_true",
                            help="with --study: send even if reminders went within EVALSITE_REMINDER_COOLDOWN_MINUTES")

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("study"):
            study = Study.objects.filter(pk=options["study"]).first()
            if study is None:
                raise CommandError(f"no study {options['study']}")
            try:
                result = reminders_send(study=study, actor=None, confirm=options["again"])
            except ReminderCooldown as exc:
                raise CommandError(f"nothing was sent: {exc} (--again)") from exc
            self.stdout.write(result.summary())
            return
        n = reminders_send_due()
        self.stdout.write(f"{n} scheduled reminder(s) accepted by the email backend, {backend_info().words}; "
                          "failures are in each study's reminder log (progress page)")

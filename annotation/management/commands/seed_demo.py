from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.demo.seed import (
    ACTIVE_STUDY,
    DEMO_STUDY,
    DEMO_USERS,
    PLAN_STUDY,
    DemoError,
    seed_demo,
)


class Command(BaseCommand):
    help = (
        "Build the demo: one login per role (three clinicians), the built-in AMHART instrument and personas, "
        "36 synthetic conversations from two demo chatbots, a study rated by three clinicians, a finished run of "
        "three demo judges (replayed from recorded replies), a second judge version and a sampling-plan study. "
        "Nothing is fetched. Safe to run twice."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--if-empty", action="store_true", help="do nothing if any user exists")
        parser.add_argument("--force", action="store_true", help="allow where EVALSITE_DEMO_ALLOWED is off (never in production)")
        parser.add_argument("--quiet-logins", action="store_true", help="do not print the demo logins")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.EVALSITE_DEMO_ALLOWED and not options["force"]:
            raise CommandError(
                "seed_demo creates accounts with known passwords; refusing where EVALSITE_DEMO_ALLOWED is off "
                "(production settings; use --force for a throwaway instance)"
            )
        User = get_user_model()
        if options["if_empty"] and User.objects.exists():
            # No logins printed: this run created none, and the existing accounts' passwords are not ours to tell.
            self.stdout.write("The database already has users; demo not seeded again. Log in with an account you made "
                              "(or `manage.py seed_demo` without --if-empty to add the demo beside them).")
            return
        started = time.perf_counter()
        try:
            built = seed_demo()
        except DemoError as exc:
            raise CommandError(str(exc)) from exc
        run = built["run"]
        self.stdout.write(self.style.SUCCESS(
            f"Demo ready in {time.perf_counter() - started:.1f} s: {built['instruments']} instrument(s), "
            f"{built['personas'].personas.count()} personas, {built['new_conversations']} new demo conversation(s), "
            f"studies '{DEMO_STUDY}' (rated by three clinicians), '{PLAN_STUDY}' (due in two weeks, a flag and "
            f"a reminder log) and '{ACTIVE_STUDY}', judge run {run.pk} "
            f"({run.n_done} judgements by three judges)."
        ))
        if not options["quiet_logins"]:
            self.stdout.write("Demo logins (username / password). Start as the researcher: open Reports.")
            for username, role, password in DEMO_USERS:
                self.stdout.write(f"  {role:<12} {username:<12} {password}")

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotation.models import Study
from annotation.studies.services import study_assign, study_create
from core.roles import Role
from corpus.conversations.services import demo_conversations_load
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation, Instrument
from corpus.personas.services import builtin_personas_load

# Demo accounts only: the command refuses where demos are not allowed (production) unless --force.
DEMO_USERS = [
    ("clinician", Role.CLINICIAN, "demo-clinician-pass"),
    ("clinician2", Role.CLINICIAN, "demo-clinician2-pass"),
    ("coordinator", Role.COORDINATOR, "demo-coordinator-pass"),
    ("researcher", Role.RESEARCHER, "demo-researcher-pass"),
    ("admin", Role.ADMIN, "demo-admin-pass"),
]
DEMO_STUDY = "Demo study: AMHART, synthetic adolescent conversations"


class Command(BaseCommand):
    help = (
        "Create one demo user per role, the built-in AMHART instrument and personas, the team's "
        "synthetic demo conversations and a demo study. Safe to run twice."
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
            self.stdout.write("The database already has users; demo not seeded again.")
            self._print_logins(options)
            return
        with transaction.atomic():
            users = {}
            for username, role, password in DEMO_USERS:
                user, created = User.objects.get_or_create(username=username)
                if created:
                    user.set_password(password)
                    user.is_staff = role == Role.ADMIN
                    user.is_superuser = role == Role.ADMIN
                    user.save()
                # get_or_create: the groups come from a data migration, which a `flush` empties.
                user.groups.add(Group.objects.get_or_create(name=role)[0])
                users[username] = user
            amhart, section = builtin_instruments_load()
            personas = builtin_personas_load()
            result = demo_conversations_load(created_by=users["researcher"])
            if not Study.objects.filter(name=DEMO_STUDY).exists():
                study = study_create(
                    name=DEMO_STUDY,
                    description="Synthetic conversations written by the evalsite team to try the app. Not real chatbot output.",
                    instrument=amhart,
                    section=section,
                    conversation_ids=list(Conversation.objects.filter(is_demo=True).values_list("id", flat=True)),
                    created_by=users["coordinator"],
                    coordinators=[users["coordinator"]],
                    raters=[(users["clinician"], "clinician"), (users["clinician2"], "clinician")],
                    is_demo=True,
                    raters_per_conversation=2,
                )
                study_assign(study=study, actor=users["coordinator"], seed=2026)
        self.stdout.write(self.style.SUCCESS(
            f"Demo ready: {Instrument.objects.count()} instrument(s), {personas.personas.count()} personas in "
            f"'{personas.name}', {len(result.created)} new demo conversation(s), study '{DEMO_STUDY}'."
        ))
        self._print_logins(options)

    def _print_logins(self, options: dict[str, Any]) -> None:
        if options["quiet_logins"]:
            return
        self.stdout.write("Demo logins (username / password):")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {role:<12} {username:<12} {password}")

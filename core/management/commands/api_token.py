from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.api_tokens import api_token_create
from core.errors import ServiceError


class Command(BaseCommand):
    help = "Make an API token for a user (hashed at rest, expiring; printed once). Send it as 'Authorization: Token <token>'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']}")
        try:
            token, secret = api_token_create(user=user)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(f"token for {user.get_username()}, expires {token.expiry:%Y-%m-%d %H:%M %Z}:")
        self.stdout.write(secret)

"""Shared behaviour of the import commands: print every problem, exit non-zero, write nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.problems import ImportRejected


def run_import(command: BaseCommand, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except ImportRejected as exc:
        for line in exc.grouped().lines():
            command.stderr.write(line)
        raise CommandError(f"{len(exc.problems)} problem(s) found; nothing was imported") from exc

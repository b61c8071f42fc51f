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
        command.stderr.write(exc.report())
        raise CommandError(str(exc)) from exc

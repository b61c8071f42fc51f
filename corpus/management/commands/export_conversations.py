from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from corpus.conversations.selectors import conversations_export_csv, conversations_export_jsonl
from corpus.models import Conversation


class Command(BaseCommand):
    help = "Export every conversation as JSONL (the import format) or CSV (one row per message)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", default="jsonl", choices=["jsonl", "csv"])
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        qs = Conversation.objects.select_related("persona__persona_set", "target").order_by("id")
        chunks = conversations_export_jsonl(qs) if options["format"] == "jsonl" else conversations_export_csv(qs)
        out = open(options["output"], "w", encoding="utf-8", newline="") if options["output"] else sys.stdout
        try:
            for chunk in chunks:
                out.write(chunk)
        finally:
            if out is not sys.stdout:
                out.close()

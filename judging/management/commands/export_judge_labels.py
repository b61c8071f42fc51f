"""Export judge labels as CSV.

    manage.py export_judge_labels RUN [RUN ...] [--as long|dimensions|ensemble] [-o FILE]

``long``: one row per label (conversation, judge, instance, item, label, rationale, evidence
turns, missing reason); ``dimensions``: VERA-MH-style per-dimension results with the answered
question path; ``ensemble``: majority labels with provenance, votes and rule.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging.exports import FORMATS, export_csv
from judging.models import JudgeRun


class Command(BaseCommand):
    help = "Export the labels of judge runs as CSV (long, dimensions or ensemble)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="+", type=int, help="Judge run id(s)")
        parser.add_argument("--as", dest="fmt", choices=FORMATS, default="long")
        parser.add_argument("-o", "--output", default="-", help="File to write (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        runs = JudgeRun.objects.filter(pk__in=options["runs"])
        missing = sorted(set(options["runs"]) - set(runs.values_list("pk", flat=True)))
        if missing:
            raise CommandError(f"no judge run(s) {', '.join(map(str, missing))}")
        chunks = export_csv(runs, options["fmt"])
        if options["output"] == "-":
            for chunk in chunks:
                sys.stdout.write(chunk)
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as handle:
            for chunk in chunks:
                handle.write(chunk)
        self.stderr.write(f"wrote {options['output']}")

"""Say what answers and what waits: database, task queue, workers seen in the last minute, stalled work, email."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.status import status_report


class Command(BaseCommand):
    help = ("Check the database and the task queue, list the workers seen in the last minute with their queues, "
            "and the work waiting for a worker. Exit status 1 when anything needs attention.")
    requires_system_checks: list[str] = []  # answer even when the configuration is half right

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        report = status_report()
        if options["json"]:
            self.stdout.write(json.dumps({
                "ok": report.ok,
                "database": report.database.__dict__, "broker": report.broker.__dict__,
                "workers": [{**w, "last_seen": w["last_seen"].isoformat()} for w in report.workers],
                "stalled": [s.__dict__ for s in report.stalled], "problems": report.problems,
                "email": report.email.__dict__ if report.email else None,
            }, default=list, indent=2))
        else:
            for check in (report.database, report.broker):
                mark = self.style.SUCCESS("ok  ") if check.ok else self.style.ERROR("DOWN")
                self.stdout.write(f"{mark} {check.name:<8} {check.detail}")
                if check.hint:
                    self.stdout.write(f"              what to do: {check.hint}")
            if report.workers:
                self.stdout.write(self.style.SUCCESS("ok  ") + f" workers  {len(report.workers)} seen in the last minute:")
                for w in report.workers:
                    queues = ", ".join(w["queues"]) or "-"
                    self.stdout.write(f"              {w['hostname']} (queues: {queues}; {w['concurrency']} at once; {w['seconds_ago']} s ago)")
            elif report.database.ok:
                self.stdout.write(self.style.ERROR("NONE") + " workers  none seen in the last minute: simulations, judge runs "
                                  "and cold reports wait. Start one (`make run`, or `celery -A evalsite worker`).")
            for item in report.stalled:
                examples = f" ({', '.join(item.examples)})" if item.examples else ""
                self.stdout.write(self.style.WARNING("WAIT") + f" stalled  {item.count} {item.kind} {item.state}{examples}")
                self.stdout.write(f"              what to do: {item.hint}")
            if report.database.ok and not report.stalled:
                self.stdout.write(self.style.SUCCESS("ok  ") + " stalled  nothing is waiting for a worker")
            if report.email:
                email = report.email
                mark = self.style.SUCCESS("ok  ") if email.delivers else self.style.WARNING("NOTE")
                last_day = ", ".join(f"{n} {outcome}" for outcome, n in sorted(email.last_day.items())) or "none"
                self.stdout.write(f"{mark} email    {email.words} ({email.backend}); last 24 hours: {last_day}")
                if email.hint:
                    self.stdout.write(f"              what to do: {email.hint}")
            for problem in report.problems:
                self.stdout.write(self.style.ERROR("??  ") + f" {problem}")
        if not report.ok:
            raise SystemExit(1)

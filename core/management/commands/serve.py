from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the web server and a Celery worker together (the README's first command uses this)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument("--concurrency", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        worker = None
        if not options["no_worker"]:
            embedded = not settings.REDIS_URL
            # One worker process whose engine thread keeps every conversation and judge result
            # in flight; the pool's threads only hold their tasks (docs/engine.md).
            concurrency = options["concurrency"] or settings.EVALSITE_WORKER_CONCURRENCY
            cmd = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--loglevel=INFO",
                   "--pool=threads", f"--concurrency={concurrency}", "--hostname=evalsite@%h"]
            worker = subprocess.Popen(cmd, env=os.environ.copy())
            self.stdout.write(f"Worker started (pid {worker.pid}, {'embedded filesystem broker' if embedded else 'Redis'}).")
        host = options["addrport"]
        self.stdout.write(self.style.SUCCESS(f"Open http://{host}/ and log in with a demo login above."))
        try:
            call_command("runserver", host, use_reloader=False)
        finally:
            if worker is not None and worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


def _die_with_parent() -> None:
    """In the worker (before exec): get SIGTERM if ``serve`` dies, even by SIGKILL (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass


class Command(BaseCommand):
    help = "Run the web server and a Celery worker together (the README's first command uses this)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument("--concurrency", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        worker = None
        # SIGTERM (a service manager, `kill`, make passing it on) must stop the worker too:
        # turn it into the same orderly exit as Ctrl-C, so the `finally` below runs.
        def stop(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        if not options["no_worker"]:
            embedded = not settings.REDIS_URL
            # One worker process whose engine thread keeps every conversation and judge result
            # in flight; the pool's threads only hold their tasks (docs/engine.md).
            concurrency = options["concurrency"] or settings.EVALSITE_WORKER_CONCURRENCY
            cmd = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--loglevel=INFO",
                   "--pool=threads", f"--concurrency={concurrency}", "--hostname=evalsite@%h"]
            # From the project folder, whatever the current one: the worker imports the same code.
            worker = subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=os.environ.copy(), preexec_fn=_die_with_parent)  # noqa: PLW1509
            self.stdout.write(f"Worker started (pid {worker.pid}, {'embedded filesystem broker' if embedded else 'Redis'}).")
        host = options["addrport"]
        self.stdout.write(self.style.SUCCESS(f"Open http://{host}/ and log in with a demo login above."))
        if settings.DEBUG:
            self.stdout.write(self.style.WARNING("Debug mode is on (EVALSITE_DEBUG=1): error pages show code and data."))
        self.stdout.flush()
        try:
            call_command("runserver", host, use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if worker is not None and worker.poll() is None:
                self.stdout.write("Stopping the worker...")
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.management.commands.runserver import naiveip_re


def _die_with_parent() -> None:
    """In the worker (before exec): get SIGTERM if ``serve`` dies, even by SIGKILL (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass


def address(addrport: str) -> tuple[str, int]:
    """Return (host, port) of a runserver address: "8000", "0.0.0.0:8000", "[::1]:8000"."""
    match = naiveip_re.match(addrport)
    if match is None:
        raise CommandError(f"'{addrport}' is not an address: write PORT or HOST:PORT, e.g. 127.0.0.1:8000")
    host = match["addr"] or "127.0.0.1"
    return host.strip("[]"), int(match["port"])


def port_problem(host: str, port: int) -> str | None:
    """Return why the web server could not listen on (host, port), or None when it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the web server does
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


class Command(BaseCommand):
    help = "Run the web server and a Celery worker together (the README's first command uses this)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument("--concurrency", type=int, default=None)
        parser.add_argument("--check-address", action="store_true",
                            help="Only check that the address is free (make run does this before migrating).")

    def handle(self, *args: Any, **options: Any) -> None:
        worker = None
        host, port = address(options["addrport"])
        # Before the worker starts: a second `make run` on a busy port must leave nothing behind.
        busy = port_problem(host, port)
        if busy:
            raise CommandError(
                f"cannot listen on {host}:{port} ({busy}): another evalsite (or another program) may be running there. "
                f"Stop it, or choose another address: make run ADDR=127.0.0.1:{port + 1}"
            )
        if options["check_address"]:
            return

        # Static files as production serves them (hashed, precompressed, cached for a year):
        # collected at every start, which costs about 2 s once the plotly bundles are compressed.
        started = time.monotonic()
        call_command("collectstatic", interactive=False, verbosity=0)
        self.stdout.write(f"Static files collected in {settings.STATIC_ROOT} ({time.monotonic() - started:.1f} s).")

        # SIGTERM (a service manager, `kill`, make passing it on) must stop the worker too:
        # turn it into the same orderly exit as Ctrl-C, so the `finally` below runs. SIGINT
        # too, explicitly: a shell starting a background job makes it ignore SIGINT, and
        # Python then installs no Ctrl-C handler of its own.
        def stop(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
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
        hint = " (the demo: researcher / demo-researcher-pass, then Reports)" if settings.EVALSITE_DEMO_ALLOWED else ""
        self.stdout.write(self.style.SUCCESS(f"Open http://{host}/ and log in{hint}."))
        if settings.DEBUG:
            self.stdout.write(self.style.WARNING("Debug mode is on (EVALSITE_DEBUG=1): error pages show code and data."))
        self.stdout.flush()
        try:
            call_command("runserver", host, use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            if worker is not None and worker.poll() is None:
                self.stdout.write("Stopping the worker...")
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()

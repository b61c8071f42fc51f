"""What answers and what waits: database, task queue, workers seen, stalled work, where email goes.

Read by the admins' status page (``/status/``) and ``manage.py status``. Each check says what
failed and what to do. Apps above core add their stalled work by registering a probe in their
own ``status`` module (found with Django's ``autodiscover_modules``, as the admin finds
``admin`` modules), so core reads no app's tables itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from core.enqueue import BROKER_HINT, describe

DATABASE_HINT = "Check that the database server runs and that DATABASE_URL points at it (unset: SQLite under var/)."
WORKER_HINT = ("Start a worker: `make run` starts one with the web server; in production `celery -A evalsite worker` "
               "on each worker machine (README). A worker that starts takes back stalled work.")
# Work queued this long without a worker taking it is reported as waiting.
WAITING_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class Check:
    """One service: whether it answers, what was seen, and what to do when it does not."""

    name: str
    ok: bool
    detail: str
    hint: str = ""


@dataclass(frozen=True)
class Stalled:
    """Work of one kind that waits for a worker, or whose worker is gone."""

    kind: str  # "simulation runs", "judge results", "report jobs"
    state: str  # what is wrong: "queued 10+ minutes, no worker took them"
    count: int
    hint: str
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class EmailStatus:
    """Where email goes, in words, and what became of the messages of the last day, by outcome.

    Informational: email that does not leave the machine (the console default) is said plainly,
    but does not make the report fail.
    """

    backend: str  # the dotted path
    words: str  # "SMTP via smtp.example.org:587 (STARTTLS)", "printed to the server's console: ..."
    delivers: bool
    hint: str
    last_day: dict[str, int] = field(default_factory=dict)  # outcome -> messages in the last 24 hours


@dataclass(frozen=True)
class StatusReport:
    database: Check
    broker: Check
    workers: list[dict[str, Any]]
    stalled: list[Stalled] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    email: EmailStatus | None = None
    # Providers whose breaker is open (core.outages): their failed work waits and is probed.
    outages: list[Any] = field(default_factory=list)

    @property
    def services(self) -> tuple[Check, Check]:
        return self.database, self.broker

    @property
    def ok(self) -> bool:
        return self.database.ok and self.broker.ok and bool(self.workers) and not self.stalled and not self.problems


_PROBES: dict[str, Callable[[Any], list[Stalled]]] = {}


def stalled_probe_register(key: str, probe: Callable[[Any], list[Stalled]]) -> None:
    """Add (or replace, by key) a function that returns an app's stalled work, given "now"."""
    _PROBES[key] = probe


def database_check() -> Check:
    """Connect, run one query, and look for migrations not applied yet."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    vendor = connection.vendor
    settings_dict = connection.settings_dict
    where = settings_dict.get("NAME") if vendor == "sqlite" else (
        f"{settings_dict.get('HOST') or 'local socket'}:{settings_dict.get('PORT') or 'default port'}/{settings_dict.get('NAME')}")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001  # any failure here is the answer
        return Check("database", False, f"{vendor} at {where}: {describe(exc)}", DATABASE_HINT)
    if pending:
        return Check("database", False, f"{vendor} at {where}: {len(pending)} migration(s) not applied",
                     "Run `manage.py migrate` (`make run` does it).")
    return Check("database", True, f"{vendor} at {where}: answers, all migrations applied")


def broker_check(timeout: float = 3.0) -> Check:
    """Connect to Celery's broker once, with a short timeout (never the URL's password in the answer)."""
    from celery import current_app

    url = current_app.conf.broker_url or ""
    shown = "embedded filesystem broker (var/broker/)" if url.startswith("filesystem") else _without_password(url)
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            if url.startswith("filesystem"):
                _filesystem_writable(current_app)
    except Exception as exc:  # noqa: BLE001
        return Check("broker", False, f"{shown}: {describe(exc)}", BROKER_HINT)
    return Check("broker", True, f"{shown}: answers")


def _filesystem_writable(app: Any) -> None:
    import os

    folder = (app.conf.broker_transport_options or {}).get("data_folder_in")
    if folder and not os.access(folder, os.W_OK):
        raise OSError(f"{folder} is not writable")


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = (f"{parts.username}:***@" if parts.username else ":***@") + (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def email_status(*, with_counts: bool = True) -> EmailStatus:
    """Describe the email backend; with ``with_counts``, count the last day's messages by outcome."""
    from django.db.models import Count

    from core.emails import backend_info
    from core.models import EmailRecord

    info = backend_info()
    counts: dict[str, int] = {}
    if with_counts:
        since = timezone.now() - timedelta(days=1)
        counts = dict(EmailRecord.objects.filter(created_at__gte=since).order_by().values_list("outcome")
                      .annotate(n=Count("id")).values_list("outcome", "n"))
    return EmailStatus(info.path, info.words, info.delivers, info.hint, counts)


def status_report() -> StatusReport:
    """Return every check; a check that cannot run says why instead of raising."""
    from django.utils.module_loading import autodiscover_modules

    from core.workers import workers_seen

    database, broker = database_check(), broker_check()
    workers: list[dict[str, Any]] = []
    stalled: list[Stalled] = []
    problems: list[str] = []
    outages: list[Any] = []
    if database.ok:
        now = timezone.now()
        workers = [{"hostname": w.hostname, "queues": w.queues, "concurrency": w.concurrency, "pid": w.pid,
                    "last_seen": w.last_seen, "seconds_ago": int((now - w.last_seen).total_seconds())}
                   for w in workers_seen()]
        autodiscover_modules("status")
        for key, probe in sorted(_PROBES.items()):
            try:
                stalled += [s for s in probe(now) if s.count]
            except Exception as exc:  # noqa: BLE001  # one app's probe failing must not hide the others
                problems.append(f"could not read the stalled work of {key}: {describe(exc)}")
        try:
            from core.outages import open_outages

            outages = open_outages()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"could not read the providers' outages: {describe(exc)}")
    else:
        problems.append("workers and stalled work are read from the database: not read until it answers and is migrated")
    try:
        email = email_status(with_counts=database.ok)
    except Exception as exc:  # noqa: BLE001
        email = None
        problems.append(f"could not read the email log: {describe(exc)}")
    return StatusReport(database, broker, workers, stalled, problems, email, outages)

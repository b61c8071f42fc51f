"""The command line's front door: one line with the cause instead of a traceback.

``manage.py`` runs every command through :func:`main`. A database or task queue that does not
answer, or a setting that cannot be read, is an operator's problem, not a bug: it is reported
as one line on stderr (what failed, the cause, what to do) with exit status 1. ``--traceback``
still shows the whole traceback, and any other exception is left to Python as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

DATABASE_HINT = "Check that the database server runs and that DATABASE_URL points at it (unset: SQLite under var/)."
# Words in a driver's message that say the server was not reached (psycopg, sqlite3).
_UNREACHABLE = ("connect", "refused", "timeout", "timed out", "could not translate host", "name or service",
                "no route", "unable to open database", "password authentication failed", "does not exist")


def one_line(text: str, limit: int = 400) -> str:
    """Return ``text`` on one line (drivers' messages span several), shortened to ``limit``."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def explain(exc: BaseException) -> str | None:
    """Return the one line to print for an operator's error, or None to let it propagate."""
    from django.core.exceptions import ImproperlyConfigured
    from django.db.utils import InterfaceError, OperationalError

    from core.enqueue import BrokerUnavailable, describe

    if isinstance(exc, BrokerUnavailable):
        return str(exc)
    if isinstance(exc, OperationalError | InterfaceError):
        cause = one_line(str(exc)) or type(exc).__name__
        if any(word in cause.lower() for word in _UNREACHABLE):
            return f"The database does not answer ({cause}). {DATABASE_HINT}"
        return f"Database error: {cause}. Run the command again with --traceback for the details."
    if isinstance(exc, ImproperlyConfigured):
        return f"The configuration is incomplete: {one_line(str(exc))}. See .env.example for every variable."
    try:
        from kombu.exceptions import OperationalError as BrokerError
    except ImportError:  # pragma: no cover - kombu comes with celery
        return None
    if isinstance(exc, BrokerError):
        return str(BrokerUnavailable(describe(exc)))
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run a management command; print one line and return 1 on an operator's error."""
    from django.core.management import execute_from_command_line

    argv = list(sys.argv if argv is None else argv)
    try:
        execute_from_command_line(argv)
    except Exception as exc:
        message = explain(exc)
        if message is None or "--traceback" in argv:
            raise
        sys.stderr.write(f"evalsite: {message}\n")
        return 1
    return 0

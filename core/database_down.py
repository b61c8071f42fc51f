"""The database does not answer: tell that from other database errors, and say it without the database.

Pages and the API answer 503 with what to do instead of "Something went wrong" (issue 32):
``core.middleware.DatabaseUnavailableMiddleware`` for errors raised by views, the 500 handler
(``core.errors_views.server_error``) for those raised by middleware (the session is read there
first), and ``core.api_errors`` for the API. The answer shows no connection detail at all
(host, port, user, the URL): without the database nobody can tell an administrator from a visitor.
"""

from __future__ import annotations

from types import TracebackType

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.utils import DatabaseErrorWrapper

DATABASE_DOWN_HINT = (
    "Try again in a minute. Administrators: check that the database server (PostgreSQL) is running and "
    "that DATABASE_URL points at it; manage.py status says what answers. The site needs no restart: "
    "the next request after the database answers again works."
)
DATABASE_DOWN_DETAIL = "The database does not answer: nothing can be read or saved until it does."
# Seconds a client is asked to wait (the header a 503 carries); the page says "a minute" too.
RETRY_AFTER = "60"


def connection_failure(exc: BaseException) -> bool:
    """Tell whether a database error means the database could not be reached or dropped the connection.

    Decided from the state of the connection that raised, never by querying again: a server that
    hangs must not make the error page hang too, and ``is_usable()`` would also call a connection
    "unusable" inside a transaction that a deadlock aborted. Django only keeps a driver connection
    once connecting succeeded, so none means connecting failed (refused, timed out, bad
    password, SQLite's "unable to open database file"); a driver connection that says it is
    closed or broken was lost mid-request (psycopg marks it on "server closed the connection").
    Errors on a working connection keep today's 500: SQLite's "database is locked", "no such
    table", PostgreSQL's deadlock or statement timeout.
    """
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    wrappers = _wrappers_in(exc.__traceback__)
    return any(_lost(wrapper) for wrapper in wrappers)


def _wrappers_in(tb: TracebackType | None) -> list[BaseDatabaseWrapper]:
    """Return the connections whose code the error passed through (Django's errors always do).

    Only these are looked at: another database alias left closed after an earlier request
    says nothing about this error.
    """
    found: list[BaseDatabaseWrapper] = []
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        # Only Django's own objects are asked: the wrapper (connect, ensure_connection), the
        # DatabaseErrorWrapper that raised (.wrapper), a cursor (.db). Another object's "db" may be a property.
        candidate = (owner if isinstance(owner, BaseDatabaseWrapper) else owner.wrapper if isinstance(owner, DatabaseErrorWrapper)
                     else owner.db if isinstance(owner, CursorWrapper) else None)
        if candidate is not None and candidate not in found:
            found.append(candidate)
        tb = tb.tb_next
    return found


def _lost(wrapper: BaseDatabaseWrapper) -> bool:
    driver = wrapper.connection
    if driver is None:
        return True
    # psycopg 3: .closed and .broken (bools); psycopg2: .closed (0 when open); sqlite3 has neither.
    return bool(getattr(driver, "closed", False)) or bool(getattr(driver, "broken", False))


def cause(exc: BaseException) -> str:
    """Name the error's class (the driver's when Django wrapped it), never its message: it holds the host."""
    original = exc.__cause__ or exc
    module = type(original).__module__.split(".")[0]
    return f"{module}.{type(original).__name__}" if module != "builtins" else type(original).__name__


def api_body(exc: BaseException) -> dict[str, str]:
    """Return the API's 503 answer: the same keys as a task queue that does not answer."""
    return {"detail": DATABASE_DOWN_DETAIL, "cause": cause(exc), "what_to_do": DATABASE_DOWN_HINT}


def close_lost_connections() -> None:
    """Drop every connection of this thread that the server closed, so the next request connects anew.

    Django would drop them at the end of the request too (``close_old_connections``, and the
    health check at the next one); closing here does not depend on those settings.
    """
    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None and _lost(wrapper):
            try:
                wrapper.close()
            except Exception:  # noqa: BLE001  # closing a dead connection may complain: it is gone either way
                wrapper.connection = None


def database_failure(alias: str = DEFAULT_DB_ALIAS) -> BaseException | None:
    """Run ``SELECT 1``: None when the database answers, the error when it cannot be reached.

    Any other database error is raised: it is not "the database does not answer".
    """
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
    except (OperationalError, InterfaceError) as exc:
        if connection_failure(exc):
            close_lost_connections()
            return exc
        raise
    return None

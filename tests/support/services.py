"""The test services as the settings in use name them (never an assumed host or port)."""

from __future__ import annotations


def worker_database_url() -> str:
    """Return the test database's URL for a worker process: the settings in use, password included."""
    from urllib.parse import quote

    from django.db import connection

    db = connection.settings_dict
    auth = quote(db.get("USER") or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = (db.get("HOST") or "") + (f":{db['PORT']}" if db.get("PORT") else "")
    return f"postgres://{auth + '@' if auth else ''}{host}/{db['NAME']}"

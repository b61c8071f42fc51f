"""Insert many rows in one statement, without ``bulk_create``'s per-row machinery.

For hot paths that insert small batches thousands of times (judge labels, simulated messages):
the INSERT is written once per model and the values are prepared by the fields themselves
(``pre_save`` for ``auto_now_add``, ``get_db_prep_save`` for JSON), so every database backend
gets what ``bulk_create`` would send. No signals, no primary keys set on the objects.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from django.db import connections, models, router

CHUNK = 500  # rows per statement: far below SQLite's and PostgreSQL's parameter limits


@functools.lru_cache(maxsize=64)
def _statement(model: type[models.Model], vendor: str, quote: object) -> tuple[str, tuple[models.Field, ...]]:
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key or f.attname != "id")
    quote_name = connections[router.db_for_write(model)].ops.quote_name
    columns = ", ".join(quote_name(f.column) for f in fields)
    return f"INSERT INTO {quote_name(model._meta.db_table)} ({columns}) VALUES ", fields


def insert_rows(model: type[models.Model], objs: Sequence[models.Model]) -> None:
    """Insert ``objs`` (unsaved instances of ``model``) in as few statements as possible."""
    if not objs:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    head, fields = _statement(model, connection.vendor, connection.ops.quote_name)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(objs), CHUNK):
            chunk = objs[start : start + CHUNK]
            params: list[object] = []
            for obj in chunk:
                params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
            cursor.execute(head + ", ".join([row] * len(chunk)), params)

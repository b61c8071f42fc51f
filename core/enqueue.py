"""Queue Celery tasks by name once the current transaction commits.

Services call this instead of importing their app's ``tasks`` module, so tasks (which import
services) and services never import each other. Each app imports its ``tasks`` module in
``AppConfig.ready()``, so the names are registered in every process, and eager mode (tests)
runs them in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from celery import current_app
from django.db import transaction


def enqueue_on_commit(task_name: str, ids: Iterable[int], *, countdowns: Mapping[int, float] | None = None) -> None:
    """After the surrounding transaction commits, queue ``task_name(id)`` once per id."""
    ids = list(ids)
    if not ids:
        return

    def send() -> None:
        task = current_app.tasks[task_name]
        for pk in ids:
            delay = (countdowns or {}).get(pk)
            task.apply_async((pk,), countdown=delay if delay else None)

    transaction.on_commit(send)

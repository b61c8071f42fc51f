"""Where a bundle being built is, told from inside the export to whoever builds it (``reports.bundle.build``).

The export is one call (``reports.bundle.export.study_bundle_zip``); the parts of it that take
time (drawing the chart images, writing the archive) say when they start with :func:`stage`,
and the build that listens (:func:`listening`) turns each stage into the job's progress. Nobody
listening (the ``export_bundle`` command, tests): a stage is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[str, str], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("bundle_progress", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send every stage told inside the block to ``listener(name, detail)``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def stage(name: str, detail: str) -> None:
    """Tell the build listening (if any) that the stage ``name`` ("charts", "zip") starts."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(name, detail)

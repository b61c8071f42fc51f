"""One door to the report cache for the judge-assisted, judge drift and rater reports.

A report is a kind with JSON-ready params (ids and keys), a data version (a fingerprint of what
it reads) and a compute function that reports its progress. This mirrors the report-jobs
interface (``register`` at import, ``report_get`` to answer), so those reports move onto queued
computation by swapping this module for it; here the payload is computed in the request and
kept in ``ReportCache`` through :func:`reports.services.cached`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reports.services import cached

Progress = Callable[[float, str], None]
KINDS: dict[str, tuple[Callable[[dict[str, Any]], str], Callable[[dict[str, Any], Progress], dict[str, Any]]]] = {}


def register(
    name: str, *, version: Callable[[dict[str, Any]], str], compute: Callable[[dict[str, Any], Progress], dict[str, Any]]
) -> None:
    """Register a kind of report (once, at import of the module that computes it)."""
    KINDS[name] = (version, compute)


def report_key(kind: str, params: dict[str, Any]) -> str:
    return f"{kind}:" + ":".join(f"{k}={params[k]}" for k in sorted(params))


def _no_progress(fraction: float, stage: str) -> None:
    return None


def report_get(kind: str, params: dict[str, Any], *, wait: bool = True) -> dict[str, Any]:
    """Return the report's payload for ``params``: from the cache when its data is unchanged."""
    version, compute = KINDS[kind]
    return cached(report_key(kind, params), version(params), lambda: compute(params, _no_progress))

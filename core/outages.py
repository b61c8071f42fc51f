"""Outages that end without a person: a circuit breaker per model endpoint.

A conversation or a judgement that failed for good because its endpoint did not answer
(``OUTAGE_KINDS``: server errors, refused connections, timeouts past the retry budget) is not
left for ``--resume --include-failed``. Its app records the failure against the endpoint's
breaker (``outage_failed``): the breaker opens, and its work waits. The sweeper (every living
worker, core.recovery) calls ``outages_probe``: for each open breaker whose probe time has
come, one waiting piece of work is sent again as the probe (no extra call is made, the probe
is real work), and the next probe time backs off (30 s, 1, 2, 4 ... up to 15 minutes) in case
it fails again or is lost. The first success on that endpoint (``outage_answered``) closes the
breaker and sends every waiting piece again. Each piece is retried automatically at most
``retry_limit()`` times (``EVALSITE_OUTAGE_RETRIES``, default 3); past it, it stays failed
with its error and a person resumes it.

Lower layers cannot import the apps: each app registers a :class:`Family` (how to find and
send again its waiting work for a key) from its ``tasks`` module, as core.recovery does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from core.models import OutageState, ProviderOutage

logger = logging.getLogger("core.outages")

# LLMError kinds that mean "the endpoint did not answer" (never a bad request or a key problem).
OUTAGE_KINDS = frozenset({"server_error", "timeout"})
FIRST_PROBE_SECONDS = 30.0
MAX_PROBE_SECONDS = 15 * 60.0


@dataclass(frozen=True)
class Family:
    """One app's work behind breakers whose keys start with ``prefix`` (e.g. "target:").

    ``waiting(key, limit)`` returns the ids of the work that failed with an outage on that
    endpoint and may still be retried automatically (at most ``limit``; None: all);
    ``redispatch(ids)`` sends them again (counting one automatic retry each) and returns how
    many it sent.
    """

    prefix: str
    waiting: Callable[[str, int | None], list[int]]
    redispatch: Callable[[list[int]], int]


_families: dict[str, Family] = {}


def register(family: Family) -> None:
    _families[family.prefix] = family


def retry_limit() -> int:
    return int(getattr(settings, "EVALSITE_OUTAGE_RETRIES", 3))


def waiting_q(failed_status: str) -> Q:
    """The rows that wait behind a breaker: failed on an outage, with automatic retries left."""
    return Q(status=failed_status, error_kind__in=OUTAGE_KINDS, auto_retries__lt=retry_limit())


def probe_delay(failures: int) -> float:
    """Seconds until the next probe after ``failures`` outage failures in a row (doubling, capped)."""
    base = float(getattr(settings, "EVALSITE_OUTAGE_PROBE_SECONDS", FIRST_PROBE_SECONDS))
    return min(base * 2 ** max(0, failures - 1), MAX_PROBE_SECONDS)


def is_outage(kind: str) -> bool:
    return kind in OUTAGE_KINDS


def _family(key: str) -> Family | None:
    return next((f for prefix, f in _families.items() if key.startswith(prefix)), None)


def outage_failed(key: str, label: str, error: str, *, now: Any = None) -> ProviderOutage:
    """Record that work on endpoint ``key`` failed because it did not answer; open its breaker."""
    now = now or timezone.now()
    with transaction.atomic():
        row = ProviderOutage.objects.select_for_update().filter(key=key).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = ProviderOutage.objects.create(key=key, label=label[:200], failures=0, opened_at=now)
            except IntegrityError:  # another worker opened it at the same moment
                row = ProviderOutage.objects.select_for_update().get(key=key)
        if row.state == OutageState.CLOSED:
            row.failures, row.opened_at, row.closed_at = 0, now, None
        row.failures += 1
        row.state = OutageState.OPEN
        row.label = label[:200]
        row.last_error = error[:2000]
        row.next_probe_at = now + timedelta(seconds=probe_delay(row.failures))
        row.save()
    logger.warning("%s (%s) does not answer (%d failure(s)); next check at %s", key, label, row.failures, row.next_probe_at)
    return row


def outage_answered(key: str) -> int:
    """Close ``key``'s breaker after a success there and send its waiting work again; return how many.

    One indexed query when the breaker is not open (the common case: called after each success).
    """
    if not ProviderOutage.objects.filter(key=key).exclude(state=OutageState.CLOSED).exists():
        return 0
    with transaction.atomic():
        closed = ProviderOutage.objects.filter(key=key).exclude(state=OutageState.CLOSED).update(
            state=OutageState.CLOSED, closed_at=timezone.now(), failures=0, next_probe_at=None,
        )
        if not closed:
            return 0  # another success closed it first, and sent the work
        family = _family(key)
        sent = family.redispatch(family.waiting(key, None)) if family else 0
    logger.info("%s answers again: %d piece(s) of waiting work sent again", key, sent)
    return sent


def outages_probe(now: Any = None) -> int:
    """Send one waiting piece of work to each open endpoint whose probe time has come; return how many.

    A breaker with nothing left to retry (all past the automatic limit, or resumed by a person)
    is closed. Never raises (the sweeper calls it): a failing family is logged.
    """
    now = now or timezone.now()
    sent = 0
    due = list(ProviderOutage.objects.exclude(state=OutageState.CLOSED).filter(next_probe_at__lte=now).values_list("key", flat=True))
    for key in due:
        family = _family(key)
        try:
            with transaction.atomic():
                row = ProviderOutage.objects.select_for_update().filter(key=key, next_probe_at__lte=now).exclude(
                    state=OutageState.CLOSED).first()
                if row is None:
                    continue  # another worker probed it
                canary = family.waiting(key, 1) if family else []
                if not canary:
                    row.state, row.closed_at, row.next_probe_at = OutageState.CLOSED, now, None
                    row.save()
                    continue
                row.state = OutageState.PROBING
                row.next_probe_at = now + timedelta(seconds=probe_delay(row.failures + 1))
                row.save()
                sent += family.redispatch(canary)  # type: ignore[union-attr]
        except Exception:  # the database or the broker away: the next sweep tries again
            logger.exception("probing %s failed", key)
    return sent


def open_outages() -> list[ProviderOutage]:
    """Return the breakers that are open or being checked (for the status page)."""
    return list(ProviderOutage.objects.exclude(state=OutageState.CLOSED).order_by("opened_at"))


def outage_summary(keys: list[str], waiting: int) -> dict[str, Any] | None:
    """What a batch or run page says about its work waiting for providers (None: nothing waits)."""
    if not waiting:
        return None
    rows = list(ProviderOutage.objects.filter(key__in=keys).exclude(state=OutageState.CLOSED))
    probes = [r.next_probe_at for r in rows if r.next_probe_at]
    return {
        "waiting": waiting,
        "labels": sorted({r.label for r in rows}),
        "next": min(probes) if probes else None,
        "limit": retry_limit(),
    }

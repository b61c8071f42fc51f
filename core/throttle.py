"""A small rate limit counted in the database: at most ``limit`` requests per key in a window.

Login failures are throttled by django-axes; requests that are not logins (asking for a
password-reset email) are counted here with the same settings, so an address or an account
cannot be used to send a flood of emails.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from core.models import ThrottleHit

# Rows older than this are never counted again (the longest window in use).
KEEP = timedelta(hours=24)


@transaction.atomic
def throttle_hit(*, key: str, limit: int, window: timedelta) -> bool:
    """Count one request for ``key``; return False (not counted) when ``limit`` is already reached."""
    now = timezone.now()
    ThrottleHit.objects.filter(created_at__lt=now - KEEP).delete()
    if ThrottleHit.objects.filter(key=key[:200], created_at__gte=now - window).count() >= limit:
        return False
    ThrottleHit.objects.create(key=key[:200])
    return True

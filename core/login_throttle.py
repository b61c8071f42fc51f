"""Login throttling (django-axes): who a failed login counts against, and the unlock action.

Failed logins are counted per username and client address; after
``EVALSITE_LOGIN_FAILURE_LIMIT`` failures that pair is locked out for
``EVALSITE_LOGIN_LOCKOUT_MINUTES`` on every login path (the login page and ``/admin/login/``;
the API has no password login). An administrator unlocks a user from the admin (Users: action
"Unlock sign-in", or Axes: delete the access attempts), or ``manage.py axes_reset_username``.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def client_ip(request: HttpRequest) -> str:
    """Return the client's address, trusting ``EVALSITE_TRUSTED_PROXY_COUNT`` proxies in front.

    Behind one reverse proxy REMOTE_ADDR is the proxy's: the client is the last address the
    proxy appended to X-Forwarded-For. Addresses further left are the client's own claims.
    """
    proxies = int(getattr(settings, "EVALSITE_TRUSTED_PROXY_COUNT", 0))
    if proxies > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def lockout_response(request: HttpRequest, original_response: object, credentials: dict | None = None) -> HttpResponse:
    """Answer a locked-out login (429): the page says why, for how long, and who can unlock."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60) if settings.AXES_COOLOFF_TIME else None
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "minutes": minutes,
    }
    if request.path_info.startswith("/api/") or request.headers.get("x-requested-with") == "XMLHttpRequest":
        return JsonResponse({"detail": "too many failed sign-ins: locked for now", "minutes": minutes}, status=429)
    return render(request, "registration/locked_out.html", context, status=429)

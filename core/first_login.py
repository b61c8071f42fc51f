"""First login: an account whose password someone else set must choose its own before anything else.

Accounts created with initial passwords (``create_users --initial-passwords``), created by an
administrator in the admin, or whose password an administrator set there, are marked
(``PasswordChangeRequired``). At login the mark is read once into the session; while it holds,
every page sends the person to the password-change form (logging out, the form itself and the
status page stay open), and an API request made with the session answers 403 saying why. API
tokens are unaffected (a token is made by its owner, signed in). Choosing a password (the
change form, or a reset link) removes the mark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse

SESSION_KEY = "evalsite_password_change_required"
OPEN_PATHS = ("/accounts/password/change/", "/accounts/logout/", "/status/", "/static/")


def require_password_change(user: Any, *, by: Any = None, reason: str = "") -> None:
    """Mark ``user``: they must choose their own password at their next login."""
    from core.models import PasswordChangeRequired

    PasswordChangeRequired.objects.update_or_create(
        user=user, defaults={"set_by": by if getattr(by, "pk", None) else None, "reason": reason[:200]}
    )


def password_chosen(user: Any, request: HttpRequest | None = None) -> None:
    """The person chose their own password: drop the mark (and the session's copy)."""
    from core.models import PasswordChangeRequired

    PasswordChangeRequired.objects.filter(user=user).delete()
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = False


def _on_login(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    from core.models import PasswordChangeRequired

    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = PasswordChangeRequired.objects.filter(user=user).exists()


user_logged_in.connect(_on_login, dispatch_uid="evalsite-first-login")


class FirstLoginMiddleware:
    """Send a marked account to the password-change form; 403 on the API with its session."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        session = getattr(request, "session", None)
        if session is None or not session.get(SESSION_KEY) or not request.user.is_authenticated:
            return self.get_response(request)
        path = request.path_info
        if any(path.startswith(p) for p in OPEN_PATHS):
            return self.get_response(request)
        if path.startswith("/api/"):
            return JsonResponse({"detail": "choose your own password first (sign in to the site and follow the "
                                           "password form); API tokens are not affected"}, status=403)
        return redirect(reverse("password_change"))

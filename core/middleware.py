"""Every page requires login; the API authenticates itself (session or token) through DRF."""

from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest


class LoginRequiredEverywhereMiddleware(LoginRequiredMiddleware):
    """Redirect anonymous visitors to the login page, except on the API.

    API views are exempt here because token authentication happens inside DRF; DRF's default
    ``IsAuthenticated`` permission then answers 401/403 instead of a login redirect.
    """

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

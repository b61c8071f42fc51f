"""Error answers: friendly pages for people, JSON under /api/ (never a debug page).

Wired as ``handler400/403/404/500`` in ``evalsite.urls``. Pages tell what happened and where to
go; nothing about the URL configuration, the code or its variables is shown.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

MESSAGES = {
    400: "bad request",
    403: "not allowed",
    404: "not found",
    500: "server error: the error was recorded for the administrators",
}


def _api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": MESSAGES[400]}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": MESSAGES[403]}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": MESSAGES[404]}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": MESSAGES[500]}, status=500)
    return defaults.server_error(request)

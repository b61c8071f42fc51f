"""Error answers: friendly pages for people, JSON under /api/ (never a debug page).

Wired as ``handler400/403/404/500`` in ``evalsite.urls``. Pages tell what happened and where to
go; nothing about the URL configuration, the code or its variables is shown.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import defaults

from core.enqueue import BROKER_HINT, BrokerUnavailable

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


def _is_rater(request: HttpRequest) -> bool:
    """Tell whether the user rates conversations (the page then says their answers are safe).

    The page must render whatever broke, the database included: any failure here means "no".
    """
    try:
        from core.roles import Role, user_roles

        return Role.CLINICIAN in user_roles(request.user)
    except Exception:  # noqa: BLE001
        return False


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": MESSAGES[500]}, status=500)
    template = loader.get_template("500.html")
    return HttpResponseServerError(template.render({"rater": _is_rater(request)}))


def service_unavailable(request: HttpRequest, exc: BrokerUnavailable) -> HttpResponse:
    """Answer 503 when the task queue is down: what happened and what to do, never a traceback."""
    if _api(request):
        response = JsonResponse({"detail": str(exc), "cause": exc.cause, "what_to_do": BROKER_HINT}, status=503)
    else:
        context = {
            "title": "The task queue does not answer",
            "message": f"This page needs a worker, and the task queue that reaches the workers did not answer ({exc.cause}).",
            "hint": BROKER_HINT,
            "request_path": request.get_full_path(),
        }
        response = HttpResponse(loader.get_template("503.html").render(context), status=503)
    response["Retry-After"] = "30"
    return response

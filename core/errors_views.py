"""Error answers: friendly pages for people, JSON under /api/ (never a debug page).

Wired as ``handler400/403/404/500`` in ``evalsite.urls``. Pages tell what happened and where to
go; nothing about the URL configuration, the code or its variables is shown.
"""

from __future__ import annotations

import sys
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.urls import NoReverseMatch, reverse
from django.views import defaults

from core.database_down import (
    DATABASE_DOWN_HINT,
    RETRY_AFTER,
    api_body,
    cause,
    close_lost_connections,
    connection_failure,
)
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
    # Django calls this while handling the exception (also one raised by a middleware: the session
    # and the user are read there, before any view): the database being down is a 503, not a 500.
    exc = sys.exc_info()[1]
    if exc is not None and connection_failure(exc):
        return database_unavailable(request, exc)
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


def _status_path() -> str | None:
    try:
        return reverse("status")
    except NoReverseMatch:  # another URL configuration (a test's)
        return None


def database_unavailable(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """Answer 503 when the database does not answer, rendered without it (no context processor, no user).

    Only the error's class is shown: its message names the host and the port, and who asks cannot
    be known without the database. The status page adds its line for the database, whether its
    view noticed or a middleware did (reading the session).
    """
    close_lost_connections()
    message = f"This page needs the database, and the database did not answer ({cause(exc)})."
    component = ""
    if request.path_info == _status_path():
        component = f"database: not answering ({cause(exc)})."
        message = ("The task queue, the workers and the waiting work are shown again once the database answers: "
                   "who may see them is read from it.")
    if _api(request):
        response = JsonResponse(api_body(exc), status=503)
    else:
        context = {
            "title": "The database does not answer",
            "message": message,
            "component": component,
            "hint": DATABASE_DOWN_HINT,
            "kept": "What you saved before is kept in the database. If you were saving something just now, "
                    "it may not have been saved: check it once the page loads again.",
            "request_path": request.get_full_path(),
        }
        response = HttpResponse(loader.get_template("503.html").render(context), status=503)
    response["Retry-After"] = RETRY_AFTER
    return response

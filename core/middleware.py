"""Every page requires login (the API authenticates itself); uploads are bounded before parsing."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from core.enqueue import BrokerUnavailable, broker_errors, describe
from core.uploads import CHUNK, UploadTooLarge, max_upload_bytes

# Multipart framing around the file (boundaries, headers, the CSRF field) is small.
MULTIPART_SLACK = 1024 * 1024
# After refusing, read (and drop) at most this much of the body so the client gets the answer
# instead of a reset connection; past it the connection is closed.
DRAIN_LIMIT = 256 * 1024 * 1024


class LoginRequiredEverywhereMiddleware(LoginRequiredMiddleware):
    """Redirect anonymous visitors to the login page, except on the API.

    API views are exempt here because token authentication happens inside DRF; DRF's default
    ``IsAuthenticated`` permission then answers 401/403 instead of a login redirect.
    """

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def too_large_response(request: HttpRequest, exc: UploadTooLarge) -> HttpResponse:
    """Answer 413 naming the limit: JSON on the API, a page elsewhere."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": str(exc), "limit_bytes": exc.limit}, status=413)
    return HttpResponse(render_to_string("413.html", {"message": str(exc)}, request=request), status=413)


class UploadLimitMiddleware:
    """Refuse uploads above ``EVALSITE_MAX_UPLOAD_BYTES`` with 413, without holding them.

    A body announced (Content-Length) as larger is refused before a byte of it is parsed. A
    multipart body is parsed here, through ``LimitedUploadHandler``, so a file that turns out
    larger while streaming is refused too; views and CSRF then read the parsed form as usual.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("POST", "PUT", "PATCH"):
            limit = max_upload_bytes()
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            try:
                if length > limit + MULTIPART_SLACK:
                    raise UploadTooLarge(limit)
                if request.content_type == "multipart/form-data":
                    request.POST  # noqa: B018  # parse now, streaming through the limited handler
            except UploadTooLarge as exc:
                self._drain(request, length)
                return too_large_response(request, exc)
        return self.get_response(request)

    @staticmethod
    def _drain(request: HttpRequest, length: int) -> None:
        if not length or length > DRAIN_LIMIT:
            return
        try:
            while request.read(CHUNK):
                pass
        except Exception:  # noqa: BLE001  # a body that cannot be read further: nothing to drain
            return


class ServiceUnavailableMiddleware:
    """Turn "the task queue is down" into a 503 that says what to do, instead of a 500.

    Services raise ``BrokerUnavailable`` after failing the rows whose message was not sent
    (``core.enqueue``); a broker error raised anywhere else in a view is treated the same.
    The API's own exception handler answers its views (``core.api_errors``).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from core.errors_views import service_unavailable

        if isinstance(exception, BrokerUnavailable):
            return service_unavailable(request, exception)
        if isinstance(exception, broker_errors()) and _from_the_broker(exception):
            return service_unavailable(request, BrokerUnavailable(describe(exception)))
        return None


class DatabaseUnavailableMiddleware:
    """Turn "the database does not answer" raised by a view into a 503 that says what to do.

    First in MIDDLEWARE but one, so its ``process_exception`` runs after every other's. Django
    turns an exception raised by another middleware (the session and the user are read there,
    before any view) into a response before this one could see it: the 500 handler answers those
    (``core.errors_views.server_error``), the API's exception handler its views (``core.api_errors``).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from core.database_down import connection_failure
        from core.errors_views import database_unavailable

        if connection_failure(exception):
            return database_unavailable(request, exception)
        return None


def _from_the_broker(exc: Exception) -> bool:
    """Tell a broker error from another OSError (a file not found is no broker outage)."""
    from kombu.exceptions import OperationalError

    if isinstance(exc, OperationalError):
        return True
    module = type(exc).__module__ or ""
    return module.startswith(("kombu", "redis", "amqp"))

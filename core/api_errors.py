"""Map service errors to HTTP answers: bad input 400 with every problem, conflicts 409, queue or database down 503."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.database_down import RETRY_AFTER, api_body, close_lost_connections, connection_failure
from core.enqueue import BROKER_HINT, BrokerUnavailable
from core.errors import ServiceError
from core.problems import ImportRejected


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ImportRejected):
        return Response(
            {
                "detail": str(exc),
                "problems": [p.as_dict() for p in exc.problems],
                "total": exc.problems.total,
                # Every problem counted by kind (the counts add up to the total), in order of first
                # appearance: what a person reads first; "problems" holds the first ones in full.
                "problem_groups": [g.as_dict() for g in exc.problems.groups()],
            },
            status=400,
        )
    if isinstance(exc, BrokerUnavailable):
        # 503, not 500: the request was fine; the task queue did not answer (core.enqueue).
        return Response({"detail": str(exc), "cause": exc.cause, "what_to_do": BROKER_HINT}, status=503,
                        headers={"Retry-After": "30"})
    if connection_failure(exc):
        # 503, not 500: the database did not answer (token or session lookup, or the view's reads).
        # The class only: the driver's message names the host (core.database_down).
        close_lost_connections()
        return Response(api_body(exc), status=503, headers={"Retry-After": RETRY_AFTER})
    if isinstance(exc, ServiceError):
        status = getattr(exc, "status", 400)
        return Response({"detail": str(exc)}, status=status)
    return drf_exception_handler(exc, context)

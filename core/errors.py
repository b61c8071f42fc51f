"""The base of every app's service error, so the edge maps them all the same way."""

from __future__ import annotations


class ServiceError(Exception):
    """A request a service refuses; ``status`` is the HTTP answer (400 bad input, 409 conflict)."""

    status = 400

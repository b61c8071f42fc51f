"""The exception types the annotation services raise (400, or 409 for conflicts, at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class AnnotationError(ServiceError):
    """A request the annotation services refuse; ``status`` is the HTTP answer at the edge."""

    status = 400

    def __init__(self, message: str, *, status: int = 400, details: dict | None = None):
        super().__init__(message)
        self.status = status
        self.details = details or {}


class RatingConflict(AnnotationError):
    """The rating changed since the client last saw it (another tab or device)."""

    def __init__(self, message: str, *, details: dict | None = None):
        super().__init__(message, status=409, details=details)

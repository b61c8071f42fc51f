"""The exception type the report services raise (400, or 409 for conflicts, at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class ReportsError(ServiceError):
    """A request the report services refuse; ``status`` is the HTTP answer at the edge."""

    status = 400

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.status = status

"""The one exception type the judging services raise (400, or 409 for conflicts, at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class JudgingError(ServiceError):
    """A request the judging services refuse; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status

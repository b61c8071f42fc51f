"""The one exception type the corpus services raise (mapped to 400 at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class CorpusError(ServiceError):
    """A request the corpus services refuse: a bad chatbot, persona or conversation.

    ``fields`` maps an input field to its problems, so a form can show each beside its field.
    """

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.fields = fields or {}

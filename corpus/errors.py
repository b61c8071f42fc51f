"""The one exception type the corpus services raise (mapped to 400 at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class CorpusError(ServiceError):
    """A request the corpus services refuse: a bad chatbot, persona or conversation."""

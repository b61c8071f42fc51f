"""The one exception type the simulation services raise (mapped to 400/409 at the edge)."""

from __future__ import annotations

from core.errors import ServiceError


class SimulationError(ServiceError):
    """A request the simulation services refuse (mapped to 400/409 at the edge)."""

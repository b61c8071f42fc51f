"""The studies section of the home page: a rater's studies, and the studies a user manages."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from annotation.rating.selectors import study_title_for_raters
from annotation.studies.dashboard import IDLE_DAYS, study_days
from annotation.studies.selectors import study_list_for_rater, study_list_for_user
from core.roles import Role


def home_studies(request: HttpRequest, roles: frozenset[str]) -> dict[str, Any] | None:
    """Return the studies shown on the home page for this user's roles."""
    context: dict[str, Any] = {
        # A rater sees each study by its rater-facing title only: the internal name may say
        # which chatbot or which arm it is (blinding).
        "rater_studies": [study_title_for_raters(s) for s in study_list_for_rater(request.user).order_by("pk")]
        if Role.CLINICIAN in roles
        else None,
        "managed_studies": list(study_list_for_user(request.user))
        if roles & {Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN}
        else [],
    }
    # Flags wait for the people who resolve them: coordinators (and admins), not researchers.
    coordinates = bool(roles & {Role.COORDINATOR, Role.ADMIN})
    context["open_flags"] = sum(s.n_open_flags for s in context["managed_studies"]) if coordinates else 0
    # The coordinator's day across their studies (annotation.studies.dashboard); researchers keep the list.
    context["dashboard"] = study_days(context["managed_studies"]) if coordinates else None
    context["idle_days"] = IDLE_DAYS
    return context if context["rater_studies"] is not None or context["managed_studies"] else None

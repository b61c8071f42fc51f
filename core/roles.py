"""The four roles, as Django groups, and the checks every view and endpoint uses."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models


class Role(models.TextChoices):
    CLINICIAN = "clinician", "Clinician (rater)"
    COORDINATOR = "coordinator", "Study coordinator"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Administrator"


# Roles that may see the unblinded corpus (model names, persona design labels).
CORPUS_ROLES = frozenset({Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN})
# Roles that use the API beyond their own assignments: they see its schema and docs, and make tokens.
API_ROLES = frozenset({Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN})
# Roles that may import personas, instruments and conversations.
IMPORT_ROLES = frozenset({Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN})


def user_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """Return the role names of a user, cached on the user object for the request."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_evalsite_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        if getattr(user, "is_superuser", False):
            names.add(Role.ADMIN)
        cached = frozenset(n for n in names if n in Role.values)
        user._evalsite_roles = cached  # type: ignore[union-attr]
    return cached


def has_any_role(user: AbstractBaseUser | AnonymousUser, roles: frozenset[str] | set[str]) -> bool:
    return bool(user_roles(user) & set(roles))


def can_view_corpus(user: AbstractBaseUser | AnonymousUser) -> bool:
    return has_any_role(user, CORPUS_ROLES)


def can_import(user: AbstractBaseUser | AnonymousUser) -> bool:
    return has_any_role(user, IMPORT_ROLES)

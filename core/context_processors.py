"""Navigation: each role sees its own pages."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from core.roles import Role, user_roles


def navigation(request: HttpRequest) -> dict:
    # No user when the request failed before AuthenticationMiddleware ran (a bad Host header
    # answered 400 by SecurityMiddleware): the error page then shows no navigation.
    user = getattr(request, "user", None)
    roles = user_roles(user) if user is not None else frozenset()
    links: list[tuple[str, str]] = []
    if not roles and not getattr(user, "is_authenticated", False):
        return {"nav_links": links, "user_roles": roles}
    links.append(("Home", reverse("home")))
    if Role.CLINICIAN in roles:
        links.append(("My ratings", reverse("annotation:my-studies")))
    if roles & {Role.COORDINATOR, Role.ADMIN}:
        links.append(("Studies", reverse("annotation:study-list")))
    if roles & {Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN}:
        links.append(("Conversations", reverse("corpus:conversation-list")))
        links.append(("Personas", reverse("corpus:persona-set-list")))
        links.append(("Chatbots", reverse("corpus:target-list")))
        links.append(("Simulations", reverse("simulation:batch-list")))
        links.append(("Instruments", reverse("corpus:instrument-list")))
        links.append(("Import", reverse("corpus:import-index")))
        links.append(("Judges", reverse("judging:judge-list")))
        links.append(("Reports", reverse("reports:index")))
        links.append(("API", reverse("api-docs")))
    if Role.ADMIN in roles:
        links.append(("Status", reverse("status")))
        links.append(("Admin", reverse("admin:index")))
    return {"nav_links": links, "user_roles": sorted(roles)}

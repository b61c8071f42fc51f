"""View decorators and DRF permission classes built on the roles."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from rest_framework import routers
from rest_framework.permissions import BasePermission, IsAuthenticated

from core.roles import API_ROLES, can_import, can_view_corpus, has_any_role


def require_corpus_access(user: Any) -> None:
    """Raise 404 (not 403: an outsider learns nothing of what exists) unless the user may see the corpus."""
    if not can_view_corpus(user):
        raise Http404("not found")


def role_required(check: Callable[[Any], bool]) -> Callable:
    """Answer 404 (not 403) to users whose role does not allow the page: nothing leaks."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not check(request.user):
                raise Http404("not found")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


corpus_required = role_required(can_view_corpus)
import_required = role_required(can_import)


def roles_required(*roles: str) -> Callable:
    return role_required(lambda user: has_any_role(user, set(roles)))


class CanViewCorpus(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return can_view_corpus(request.user)


class CanImport(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return can_import(request.user)


class UsesTheApi(BasePermission):
    """The API schema and docs: for coordinators, researchers and admins, not raters.

    They list field names (``target_model``) and example model names a blind rater must not see.
    """

    def has_permission(self, request: Any, view: Any) -> bool:
        return has_any_role(request.user, API_ROLES)


class ApiRootView(routers.APIRootView):
    """The list of API endpoints (``/api/v1/``): for the roles that use the API, like its schema and docs."""

    permission_classes = [IsAuthenticated, UsesTheApi]

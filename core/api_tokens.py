"""API tokens: hashed at rest and expiring (django-rest-knox), made and revoked by their owner.

Knox stores a SHA-512 digest of each token, never the token: it is shown once when made. Every
token expires after ``EVALSITE_API_TOKEN_DAYS`` (REST_KNOX's TOKEN_TTL). Clients send it as
``Authorization: Token <token>``. Roles that use the API (coordinator, researcher, admin) make
their own on the "API tokens" page; an administrator can make one for anyone in the admin or
with ``manage.py api_token USERNAME``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication
from knox.models import AuthToken
from rest_framework.exceptions import AuthenticationFailed

from core.errors import ServiceError
from core.roles import API_ROLES, has_any_role

NOT_FOR_THIS_ROLE = "API tokens are for coordinators, researchers and administrators"


def can_use_api_tokens(user: AbstractBaseUser) -> bool:
    return has_any_role(user, API_ROLES)


def api_tokens_for_user(user: AbstractBaseUser) -> QuerySet[AuthToken]:
    """Return the user's tokens that have not expired, newest first."""
    now = timezone.now()
    return AuthToken.objects.filter(user=user).exclude(expiry__lt=now).order_by("-created")


@transaction.atomic
def api_token_create(*, user: AbstractBaseUser) -> tuple[AuthToken, str]:
    """Make a token for ``user``; return the row and the token (the only time it is visible).

    Only for the roles the "API tokens" page serves: a rater's token would reach the API with no
    page around it to keep it blind, and a user with no role has nothing to reach.
    """
    if not can_use_api_tokens(user):
        raise ServiceError(f"{user.get_username()} has no role that uses the API: {NOT_FOR_THIS_ROLE}")
    return AuthToken.objects.create(user=user)


@transaction.atomic
def api_token_revoke(*, user: AbstractBaseUser, token_key: str) -> int:
    """Revoke the user's tokens that start with ``token_key``; return how many."""
    deleted, _ = AuthToken.objects.filter(user=user, token_key=token_key).delete()
    return deleted


class RoleTokenAuthentication(TokenAuthentication):
    """Knox tokens, accepted only while their user holds a role that uses the API.

    A token made before the rule (or for a user whose role changed since) stops working at once.
    """

    def authenticate_credentials(self, token: bytes) -> Any:
        user, auth_token = super().authenticate_credentials(token)
        if not can_use_api_tokens(user):
            raise AuthenticationFailed(NOT_FOR_THIS_ROLE)
        return user, auth_token


class RoleTokenScheme(KnoxTokenScheme):
    """The OpenAPI security scheme of ``RoleTokenAuthentication``: knox's own (registered on import)."""

    target_class = "core.api_tokens.RoleTokenAuthentication"

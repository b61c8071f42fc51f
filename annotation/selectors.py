"""Reads of instruments and studies, with the access rules for each."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404

from .models import Instrument, Item, MemberRole, Study
from .roles import Role, can_view_corpus, user_roles


def instrument_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Instrument]:
    if not can_view_corpus(user):
        raise Http404("not found")
    return Instrument.objects.annotate(n_items=Count("items", distinct=True), n_studies=Count("studies", distinct=True))


def instrument_get(user: AbstractBaseUser | AnonymousUser, *, pk: int) -> Instrument:
    if not can_view_corpus(user):
        raise Http404("not found")
    try:
        return Instrument.objects.prefetch_related(Prefetch("items", queryset=Item.objects.order_by("position"))).get(pk=pk)
    except Instrument.DoesNotExist as exc:
        raise Http404("not found") from exc


def study_list_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """Return the studies a user may manage: admins all, coordinators and researchers their own."""
    roles = user_roles(user)
    qs = Study.objects.select_related("instrument").annotate(
        n_conversations=Count("study_conversations", distinct=True),
        n_raters=Count("memberships", filter=Q(memberships__role=MemberRole.RATER), distinct=True),
    )
    if Role.ADMIN in roles:
        return qs
    if roles & {Role.COORDINATOR, Role.RESEARCHER}:
        return qs.filter(
            memberships__user=user, memberships__role__in=[MemberRole.COORDINATOR, MemberRole.RESEARCHER]
        ).distinct()
    return qs.none()


def study_list_for_rater(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """Return the studies in which the user is an active rater."""
    if not getattr(user, "is_authenticated", False):
        return Study.objects.none()
    return Study.objects.filter(
        memberships__user=user, memberships__role=MemberRole.RATER, memberships__active=True
    ).distinct()

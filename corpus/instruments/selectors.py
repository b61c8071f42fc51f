"""Reads of instruments (unblinded corpus roles only)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404

from core.roles import can_view_corpus
from corpus.models import Instrument, Item


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

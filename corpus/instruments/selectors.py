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


def instrument_spec_document(instrument: Instrument) -> dict:
    """Return an instrument in the project's own format (``docs/formats.md``): importing it gives the same version.

    The document carries every field the content hash covers, so ``instrument_create_from_spec``
    on a database that already holds this version returns it, and on any other creates an
    identical one (same key, items, labels and N/A declarations).
    """
    document: dict = {"key": instrument.key, "name": instrument.name, "kind": instrument.kind,
                      "description": instrument.description, "source": instrument.source}
    if instrument.na_labels:
        document["na_labels"] = list(instrument.na_labels)
    if instrument.kind == "flow":
        document["flow"] = instrument.flow
        return document
    items = []
    for item in instrument.items.order_by("position"):
        entry: dict = {"key": item.key, "number": item.number, "domain": item.domain, "text": item.text,
                       "scale": item.scale, "na_allowed": item.na_allowed, "required": item.required,
                       "applicability": item.applicability, "help": dict(item.help or {}),
                       "scale_labels": dict(item.scale_labels or {})}
        if item.categories:
            entry["categories"] = list(item.categories)
        if item.na_labels:
            entry["na_labels"] = list(item.na_labels)
        items.append(entry)
    document["items"] = items
    return document

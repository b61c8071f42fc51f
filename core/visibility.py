"""Who may read a corpus object: the one place that decides it (issue 30, least privilege).

Chatbots (targets), conversations, persona sets, simulation batches and judge runs are visible to

(a) administrators;
(b) their creator (``created_by``);
(c) the coordinators and researchers who are members of a study that uses them;
(d) every coordinator and researcher when the object is marked ``shared`` (the installation's
    shared library: an explicit choice of its creator or an administrator, audited).

Raters (clinicians) and users without a role see none of them here: they reach conversations only
through their blind pages, which check their own assignments.

What "a study uses" means is known only to the apps higher up (studies live in ``annotation``,
which imports the corpus, never the reverse). Each such app registers, in its
``AppConfig.ready()``, a *grant* per model: a function from the user to a ``Q`` on that model
(``Q(pk__in=subquery)``, so one object is never listed twice and every list stays one query).
The corpus itself registers the grants that need no study (built-in persona sets; the batch
that produced a conversation). Selectors call ``visible`` on their querysets, so lists, details
(404 for an outsider), exports, API views and form choices all go through the same filter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db.models import Model, Q, QuerySet
from django.http import Http404

from core.roles import Role, user_roles

# Roles that may read corpus objects at all (each then only the visible ones); admins read all.
READER_ROLES = frozenset({Role.COORDINATOR, Role.RESEARCHER})

Grant = Callable[[Any], Q]
_GRANTS: dict[str, list[tuple[str, Grant]]] = defaultdict(list)


def _label(model: type[Model]) -> str:
    return model._meta.label_lower


def grant_register(model: str, key: str, grant: Grant) -> None:
    """Add (or replace, by ``key``) a way a user may come to see objects of ``model`` ("app.model")."""
    grants = _GRANTS[model.lower()]
    grants[:] = [(k, g) for k, g in grants if k != key]
    grants.append((key, grant))


def is_admin(user: Any) -> bool:
    return Role.ADMIN in user_roles(user)


def visible_filter(user: Any, model: type[Model]) -> Q | None:
    """Return the filter on ``model`` of what ``user`` may read; None means everything (an administrator)."""
    roles = user_roles(user)
    if Role.ADMIN in roles:
        return None
    if not roles & READER_ROLES:
        return Q(pk__in=[])
    q = Q(shared=True) | Q(created_by_id=user.pk)
    for _key, grant in _GRANTS.get(_label(model), []):
        q |= grant(user)
    return q


def visible(qs: QuerySet, user: Any) -> QuerySet:
    """Return ``qs`` narrowed to the objects ``user`` may read."""
    q = visible_filter(user, qs.model)
    return qs if q is None else qs.filter(q)


def require_visible(obj: Model, user: Any) -> None:
    """Raise Http404 unless ``user`` may read ``obj`` (one query; none for an administrator)."""
    q = visible_filter(user, type(obj))
    if q is not None and not type(obj)._default_manager.filter(q, pk=obj.pk).exists():
        raise Http404("not found")


def may_share(user: Any, obj: Model) -> bool:
    """Return whether ``user`` may mark ``obj`` shared or private: its creator or an administrator."""
    if is_admin(user):
        return True
    creator = getattr(obj, "created_by_id", None)
    return bool(user_roles(user) & READER_ROLES) and creator is not None and creator == user.pk


# -- the shared flag: which objects have one, and setting it ------------------------------------


class SharingError(Exception):
    """The object has no page of that kind, or the user may not change its sharing."""


_SHAREABLE: dict[str, tuple[type[Model], str, Callable[[Any], str]]] = {}


def shareable_register(kind: str, model: type[Model], *, lookup: str, page: Callable[[Any], str]) -> None:
    """Let objects of ``model`` be shared from their page: ``/sharing/<kind>/<key>/`` finds one by
    ``lookup`` (``code``, ``pk``) and goes back to ``page(object)`` (a URL)."""
    _SHAREABLE[kind] = (model, lookup, page)


def shareable_get(user: Any, *, kind: str, key: str) -> tuple[Model, str]:
    """Return the object and its page's URL; 404 for an unknown kind, key or an object the user may not read."""
    entry = _SHAREABLE.get(kind)
    if entry is None:
        raise Http404("not found")
    model, lookup, page = entry
    if lookup == "pk" and not key.isdigit():
        raise Http404("not found")
    obj = visible(model._default_manager.all(), user).filter(**{lookup: key}).first()
    if obj is None:
        raise Http404("not found")
    return obj, page(obj)


def shared_set(*, actor: Any, obj: Model, shared: bool) -> bool:
    """Mark ``obj`` shared (every coordinator and researcher reads it) or private again; return whether it changed.

    Only its creator or an administrator may; the change is recorded in the admin's audit trail
    (``LogEntry``: who, when, which object, to what).
    """
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.db import transaction

    if not may_share(actor, obj):
        raise SharingError("only the one who created it or an administrator may change who sees it")
    with transaction.atomic():
        changed = type(obj)._default_manager.filter(pk=obj.pk).exclude(shared=shared).update(shared=shared)
        if changed:
            obj.shared = shared  # type: ignore[attr-defined]
            LogEntry.objects.log_actions(
                user_id=actor.pk, queryset=[obj], action_flag=CHANGE,
                change_message=[{"changed": {"fields": ["shared"]}}], single_object=True,
            )
    return bool(changed)

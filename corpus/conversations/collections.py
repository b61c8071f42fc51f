"""Named groups of conversations that apps higher up own (a study's conversations, say).

Judge runs select conversations by such a group without importing the app that owns it: the
owner registers the group in its ``AppConfig.ready()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet


@dataclass(frozen=True)
class ConversationCollection:
    key: str
    label: str
    # The groups a user may choose from (a queryset, so forms can offer them); the user None is
    # an operator's command, which may choose any.
    choices: Callable[[Any], QuerySet]
    # The conversations of one group, as a filter on Conversation.
    conversation_filter: Callable[[int], Q]


_COLLECTIONS: dict[str, ConversationCollection] = {}


def collection_register(collection: ConversationCollection) -> None:
    """Add (or replace, by key) a named group of conversations."""
    _COLLECTIONS[collection.key] = collection


def collection_get(key: str) -> ConversationCollection | None:
    """Return the registered group kind ``key``, or None when no app registered it."""
    return _COLLECTIONS.get(key)

"""``{% sharing object kind key %}``: who may read a corpus object, and the switch for its creator or an admin (core.visibility)."""

from __future__ import annotations

from typing import Any

from django import template

from core.visibility import may_share

register = template.Library()


@register.inclusion_tag("core/_sharing.html", takes_context=True)
def sharing(context: dict[str, Any], obj: Any, kind: str, key: Any) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    return {
        "object": obj, "sharing_kind": kind, "sharing_key": str(key),
        "may_share": user is not None and may_share(user, obj), "csrf_token": context.get("csrf_token"),
    }


@register.filter
def shareable_by(obj: Any, user: Any) -> bool:
    """``{% if chatbot|shareable_by:request.user %}``: whether the user may share or unshare it."""
    return may_share(user, obj)

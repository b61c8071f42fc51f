"""Formats for the leaderboard: differences between chatbots in the score's units."""

from __future__ import annotations

from typing import Any

from django import template

from core.templatetags.number_format import as_float

register = template.Library()


@register.filter
def difference(value: Any, scale: str = "share") -> str:
    """Return a difference with its sign: percentage points for shares (+12.5 pp), points otherwise (−3.0)."""
    number = as_float(value)
    if number is None:
        return "—"
    size = 100 * abs(number) if scale == "share" else abs(number)
    sign = "+" if number > 0 else "−" if number < 0 else ""
    return f"{sign}{size:.1f}" + (" pp" if scale == "share" else "")


@register.filter
def difference_interval(pair: Any, scale: str = "share") -> str:
    """Return "[low, high]" of a pair's difference, both signed, in the score's units."""
    if not isinstance(pair, dict) or as_float(pair.get("low")) is None:
        return "—"
    return f"[{difference(pair['low'], scale)}, {difference(pair['high'], scale)}]"

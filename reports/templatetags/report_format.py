from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def num(value: Any, digits: int = 3) -> str:
    """Format a statistic; None (undefined) shows as an em dash, never as NaN."""
    if value is None or value == "":
        return "—"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pct(value: Any) -> str:
    try:
        return f"{100 * float(value):.1f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def get(mapping: Any, key: Any) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def ci(item: Any, name: str) -> str:
    interval = item.get(f"{name}_ci") if isinstance(item, dict) else None
    if not interval or interval[0] is None:
        return ""
    return f"[{float(interval[0]):.2f}, {float(interval[1]):.2f}]"

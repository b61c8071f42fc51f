from __future__ import annotations

from typing import Any

from django import template

from core.templatetags import number_format

register = template.Library()
# Shared with the other pages' number formats (one definition each).
register.filter("pct", number_format.pct)
register.filter("get", number_format.get)


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
def pct0(value: Any) -> str:
    try:
        return f"{100 * float(value):.0f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def interval(item: Any, name: str) -> tuple[float, float] | None:
    """Return an item's interval for a coefficient, or None when there is none."""
    value = item.get(f"{name}_ci") if isinstance(item, dict) else None
    if not value or value[0] is None or value[1] is None:
        return None
    return float(value[0]), float(value[1])


@register.filter
def num_range(value: Any) -> str:
    """Format an interval compactly on one line: 0.48–0.75."""
    if not value:
        return ""
    return f"{value[0]:.2f}–{value[1]:.2f}"


@register.filter
def pct_range(value: Any) -> str:
    """Format a proportion interval compactly as percent: 75–88%."""
    if not value:
        return ""
    return f"{100 * value[0]:.0f}–{100 * value[1]:.0f}%"


@register.filter
def ci(item: Any, name: str) -> str:
    interval_ = interval(item, name)
    return "" if interval_ is None else f"[{interval_[0]:.2f}, {interval_[1]:.2f}]"


@register.filter
def labels_text(value: Any) -> str:
    """Join a list of labels for reading: yes / no."""
    return " / ".join(str(x) for x in value or [])


@register.filter
def points_pct(value: Any) -> str:
    """Format a value already in percent points (12.5 -> "12.5%"); missing is a bare em dash, never "—%"."""
    try:
        return f"{float(value):.1f}%" if value not in (None, "") else "—"
    except (TypeError, ValueError):
        return "—"

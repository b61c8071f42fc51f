"""Formats for the judges-vs-humans verdict: intervals said in words when they bound nothing."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


def _bounds(ci: Any) -> tuple[float, float] | None:
    if not isinstance(ci, dict) or ci.get("low") is None or ci.get("high") is None:
        return None
    return float(ci["low"]), float(ci["high"])


@register.filter
def ci_num(ci: Any, digits: int = 2) -> str:
    """Format a bootstrap interval as [low, high]; an undefined or collapsed one in words."""
    bounds = _bounds(ci)
    if bounds is None:
        return "no interval" if ci else ""
    if bounds[0] == bounds[1]:
        return "interval collapsed to a point"
    return f"[{bounds[0]:.{int(digits)}f}, {bounds[1]:.{int(digits)}f}]"


@register.filter
def ci_pct(ci: Any) -> str:
    """Format a bootstrap interval of a proportion as [low%, high%] (words when it bounds nothing)."""
    bounds = _bounds(ci)
    if bounds is None:
        return "no interval" if ci else ""
    if bounds[0] == bounds[1]:
        return "interval collapsed to a point"
    return f"[{100 * bounds[0]:.1f}%, {100 * bounds[1]:.1f}%]"


@register.filter
def signed(value: Any, digits: int = 2) -> str:
    """Format a difference with its sign: +0.12, −0.30 (a true minus sign)."""
    if value is None:
        return "—"
    number = float(value)
    text = f"{abs(number):.{int(digits)}f}"
    return f"+{text}" if number > 0 else f"−{text}" if number < 0 else text


@register.filter
def signed_pct(value: Any) -> str:
    """Format a difference of proportions in percentage points: +4.2 pp."""
    if value is None:
        return "—"
    number = 100 * float(value)
    text = f"{abs(number):.1f} pp"
    return f"+{text}" if number > 0 else f"−{text}" if number < 0 else text


@register.filter
def signed_ci_pct(ci: Any) -> str:
    """Format an interval of a difference of proportions in percentage points."""
    bounds = _bounds(ci)
    if bounds is None:
        return "no interval" if ci else ""
    if bounds[0] == bounds[1]:
        return "interval collapsed to a point"
    return f"[{signed_pct(bounds[0])}, {signed_pct(bounds[1])}]"


@register.filter
def signed_ci(ci: Any, digits: int = 2) -> str:
    """Format an interval of a difference with signs: [−0.30, −0.12]."""
    bounds = _bounds(ci)
    if bounds is None:
        return "no interval" if ci else ""
    if bounds[0] == bounds[1]:
        return "interval collapsed to a point"
    return f"[{signed(bounds[0], digits)}, {signed(bounds[1], digits)}]"


@register.filter
def pvalue(value: Any) -> str:
    """Format a p-value: three decimals, or < 0.001."""
    if value is None:
        return "—"
    number = float(value)
    return "< 0.001" if number < 0.001 else f"{number:.3f}"

"""Number formats shared by the pages (None and NaN show as an em dash, never as "nan")."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


def as_float(value: Any) -> float | None:
    """Return ``value`` as a float, or None when it is missing, not a number, or NaN."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


@register.filter
def num(value: Any, digits: int = 3) -> str:
    number = as_float(value)
    return "—" if number is None else f"{number:.{int(digits)}f}"


@register.filter
def rounded(value: Any, digits: int = 0) -> str:
    return num(value, digits)


@register.filter
def pct(value: Any) -> str:
    number = as_float(value)
    return "—" if number is None else f"{100 * number:.1f}%"


@register.filter
def percent_value(value: Any) -> str:
    """Return a share as a plain percentage number for a form field (0.123 -> "12.3")."""
    number = as_float(value)
    return "" if number is None else f"{100 * number:.1f}"


@register.filter
def half(value: Any) -> float | None:
    """Return half an interval width (the ± figure)."""
    number = as_float(value)
    return None if number is None else number / 2


@register.filter
def get(mapping: Any, key: Any) -> Any:
    """Return ``mapping[key]`` in a template (None when it is not a dict or lacks the key)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def count_of(value: Any, noun: str) -> str:
    """Return a count with its noun, as a whole number: "1 conversation", "1,240 LLM calls".

    Things counted are whole: a float count (63.0) shows as 63; a fractional expectation is
    rounded, never shown with a decimal point.
    """
    number = as_float(value)
    if number is None:
        return f"— {noun}s"
    n = int(round(number))
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@register.filter
def whole(value: Any) -> str:
    """Return a count as a whole number with thousands separators (63.0 -> "63"); None -> "—"."""
    number = as_float(value)
    return "—" if number is None else f"{int(round(number)):,}"

"""Number formats of the sampling-plan pages (None shows as an em dash, never as NaN)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


@register.filter
def num(value: Any, digits: int = 3) -> str:
    number = _float(value)
    return "—" if number is None else f"{number:.{int(digits)}f}"


@register.filter
def pct(value: Any) -> str:
    number = _float(value)
    return "—" if number is None else f"{100 * number:.1f}%"


@register.filter
def half(value: Any) -> float | None:
    """Return half an interval width (the ± figure)."""
    number = _float(value)
    return None if number is None else number / 2


@register.filter
def percent_value(value: Any) -> str:
    """Return a share as a plain percentage number for a form field (0.123 -> "12.3")."""
    number = _float(value)
    return "" if number is None else f"{100 * number:.1f}"


@register.filter
def field_label(form: Any, name: str) -> str:
    field = form.fields.get(name) if hasattr(form, "fields") else None
    return str(field.label) if field is not None and field.label else name


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None

"""Formats for the judge-assisted, drift and rater reports: shares as %, VERA-MH points as numbers."""

from __future__ import annotations

from typing import Any

from django import template

from core.templatetags.number_format import as_float

register = template.Library()


@register.filter
def score(value: Any, scale: str = "share") -> str:
    """Return a score: a share as a percentage (0.625 -> 62.5%), points with one decimal."""
    number = as_float(value)
    if number is None:
        return "—"
    return f"{100 * number:.1f}%" if scale == "share" else f"{number:.1f}"


BOUNDS = {"share": (0.0, 1.0), "points": (0.0, 100.0)}


@register.filter
def interval(estimate: Any, scale: str = "share") -> str:
    """Return "[low, high]" of an estimate mapping, cut at the score's bounds (0-100% or 0-100 points).

    A normal interval on few ratings can pass a bound; the API and CSV keep the raw figures.
    """
    if not isinstance(estimate, dict) or as_float(estimate.get("low")) is None:
        return "—"
    lowest, highest = BOUNDS.get(scale, (float("-inf"), float("inf")))
    low = max(lowest, float(estimate["low"]))
    high = min(highest, float(estimate["high"]))
    return f"[{score(low, scale)}, {score(high, scale)}]"


@register.filter
def signed(value: Any, scale: str = "share") -> str:
    """Return a difference with its sign (+3.1%, −0.4)."""
    number = as_float(value)
    if number is None:
        return "—"
    text = score(abs(number), scale)
    return ("+" if number > 0 else "−" if number < 0 else "") + text


@register.filter
def duration(seconds: Any) -> str:
    """Return seconds as "12 min 05 s" or "40 s"."""
    number = as_float(seconds)
    if number is None:
        return "—"
    total = int(round(number))
    minutes, secs = divmod(total, 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


@register.filter
def confidence(value: Any) -> str:
    """Return a confidence level as "95%" (or "99.5%")."""
    number = as_float(value)
    return "—" if number is None else f"{100 * number:g}%"



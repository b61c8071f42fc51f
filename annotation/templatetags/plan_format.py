"""Filters of the sampling-plan pages (numbers: ``core.templatetags.number_format``)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def field_label(form: Any, name: str) -> str:
    field = form.fields.get(name) if hasattr(form, "fields") else None
    return str(field.label) if field is not None and field.label else name

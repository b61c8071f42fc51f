"""Sections that apps higher up add to the home page, so the page lives here without importing them.

An app registers a section in its ``AppConfig.ready()``: a template and a function that returns
that template's context for the request's user (or ``None`` when the section does not apply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest


@dataclass(frozen=True)
class HomeSection:
    key: str
    template: str
    context: Callable[[HttpRequest, frozenset[str]], dict[str, Any] | None]


_SECTIONS: dict[str, HomeSection] = {}


def home_section_register(section: HomeSection) -> None:
    """Add (or replace, by key) a section of the home page."""
    _SECTIONS[section.key] = section


def home_sections(request: HttpRequest, roles: frozenset[str]) -> list[tuple[str, dict[str, Any]]]:
    """Return (template, context) for each registered section that applies to this user."""
    shown = []
    for section in _SECTIONS.values():
        context = section.context(request, roles)
        if context is not None:
            shown.append((section.template, context))
    return shown

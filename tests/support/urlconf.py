"""The project's URL patterns as raw strings (prefixes joined), for tests that walk every route."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import get_resolver


def raw_patterns() -> Iterator[str]:
    """Yield every URL pattern of the URL conf, with its includes' prefixes (regex or path syntax)."""

    def walk(patterns, prefix: str = "") -> Iterator[str]:  # type: ignore[no-untyped-def]
        for p in patterns:
            text = str(p.pattern)
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, prefix + text)
            else:
                yield prefix + text

    return walk(get_resolver().url_patterns)

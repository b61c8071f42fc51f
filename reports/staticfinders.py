"""Serve plotly's own bundled JavaScript as ``vendor/plotly.min.js`` (no CDN; works offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
NAME = "plotly.min.js"
PUBLIC = f"vendor/{NAME}"


class PlotlyFinder(BaseFinder):
    def check(self, **kwargs: Any) -> list:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        find_all = find_all or kwargs.get("all", False)
        if path == PUBLIC and (PACKAGE_DATA / NAME).exists():
            found = str(PACKAGE_DATA / NAME)
            return [found] if find_all else found
        return [] if find_all else ""

    def list(self, ignore_patterns: Any):  # type: ignore[no-untyped-def]
        storage = FileSystemStorage(location=str(PACKAGE_DATA))
        storage.prefix = "vendor"  # type: ignore[attr-defined]
        if (PACKAGE_DATA / NAME).exists():
            yield NAME, storage

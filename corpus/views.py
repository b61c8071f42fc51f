"""The corpus import hub: one page linking every importer."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import import_required


@import_required
def import_index(request: HttpRequest) -> HttpResponse:
    return render(request, "corpus/import_index.html")

"""The home page: what each role can do, plus the sections other apps register (core.home)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.home import home_sections
from core.roles import user_roles


def home(request: HttpRequest) -> HttpResponse:
    roles = user_roles(request.user)
    context = {"roles": sorted(roles), "sections": home_sections(request, roles)}
    return render(request, "core/home.html", context)

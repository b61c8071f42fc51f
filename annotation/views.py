"""Home, instruments, and the study pages of coordinators and raters."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from . import selectors, services
from .forms import InstrumentImportForm
from .permissions import corpus_required, import_required
from .problems import ImportRejected
from .roles import Role, user_roles


def home(request: HttpRequest) -> HttpResponse:
    roles = user_roles(request.user)
    context = {
        "roles": sorted(roles),
        "rater_studies": selectors.study_list_for_rater(request.user) if Role.CLINICIAN in roles else [],
        "managed_studies": selectors.study_list_for_user(request.user)
        if roles & {Role.COORDINATOR, Role.RESEARCHER, Role.ADMIN}
        else [],
    }
    return render(request, "annotation/home.html", context)


@corpus_required
def instrument_list(request: HttpRequest) -> HttpResponse:
    return render(request, "annotation/instrument_list.html", {"instruments": selectors.instrument_list_for_user(request.user)})


@corpus_required
def instrument_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "annotation/instrument_detail.html", {"instrument": selectors.instrument_get(request.user, pk=pk)})


@import_required
def instrument_import(request: HttpRequest) -> HttpResponse:
    form = InstrumentImportForm(request.POST or None, request.FILES or None)
    context: dict = {"form": form, "title": "Import an instrument or rubric"}
    if request.method == "POST" and form.is_valid():
        from simulation.uploads import read_upload

        upload = form.cleaned_data["file"]
        try:
            (name, text), *_ = read_upload(upload.name, upload)
            instrument, created = services.instrument_import(
                text=text,
                file=name,
                fmt=form.cleaned_data["format"],
                key=form.cleaned_data["key"] or None,
                name=form.cleaned_data["name"] or None,
                created_by=request.user,
                dry_run=form.cleaned_data["dry_run"],
            )
            if instrument is None:
                context["result"] = "The file is valid. Nothing was imported (dry run)."
            else:
                verb = "Imported" if created else "Already present (identical content):"
                context["result"] = f"{verb} {instrument}."
        except ImportRejected as exc:
            context["problems"] = exc.problems
    return render(request, "simulation/import_form.html", context, status=400 if context.get("problems") else 200)

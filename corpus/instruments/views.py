"""Pages of instruments: list, detail (items, help, flow) and import."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import corpus_required, import_required
from core.staged_uploads import import_page
from core.uploads import read_upload
from corpus.instruments import selectors, services
from corpus.instruments.forms import InstrumentImportForm


@corpus_required
def instrument_list(request: HttpRequest) -> HttpResponse:
    return render(request, "corpus/instrument_list.html", {"instruments": selectors.instrument_list_for_user(request.user)})


@corpus_required
def instrument_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "corpus/instrument_detail.html", {"instrument": selectors.instrument_get(request.user, pk=pk)})


IMPORT_TARGET = "instruments"  # the kept dry-run file of this page (core.staged_uploads)


@import_required
def instrument_import(request: HttpRequest) -> HttpResponse:
    def run(data: dict) -> dict:
        (name, text), *_ = read_upload(data["file"].name, data["file"])
        instrument, created = services.instrument_import(
            text=text, file=name, fmt=data["format"], key=data["key"] or None, name=data["name"] or None,
            created_by=request.user, dry_run=data["dry_run"],
        )
        if instrument is None:
            return {"result": "The file is valid. Nothing was imported (dry run)."}
        verb = "Imported" if created else "Already present (identical content):"
        return {"result": f"{verb} {instrument}."}

    return import_page(
        request, target=IMPORT_TARGET, form_class=InstrumentImportForm, template="corpus/import_form.html",
        context={"title": "Import an instrument or rubric"}, run=run,
    )

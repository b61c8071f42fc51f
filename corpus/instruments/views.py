"""Pages of instruments: list, detail (items, help, flow) and import."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import corpus_required, import_required
from core.problems import ImportRejected
from core.staged_uploads import import_finished, import_input, import_now_offer
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
    incoming = import_input(request, target=IMPORT_TARGET)
    form = InstrumentImportForm(incoming.data, incoming.files)
    context: dict = {"form": form, "title": "Import an instrument or rubric", "gone": incoming.gone}
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        dry_run = form.cleaned_data["dry_run"]
        try:
            (name, text), *_ = read_upload(upload.name, upload)
            instrument, created = services.instrument_import(
                text=text,
                file=name,
                fmt=form.cleaned_data["format"],
                key=form.cleaned_data["key"] or None,
                name=form.cleaned_data["name"] or None,
                created_by=request.user,
                dry_run=dry_run,
            )
        except ImportRejected as exc:
            context["problems"] = exc.problems
        else:
            if instrument is None:
                context["result"] = "The file is valid. Nothing was imported (dry run)."
                context.update(import_now_offer(request, target=IMPORT_TARGET, form=form))
            else:
                verb = "Imported" if created else "Already present (identical content):"
                context["result"] = f"{verb} {instrument}."
                import_finished(incoming)
    bad = context.get("problems") or incoming.gone
    return render(request, "corpus/import_form.html", context, status=400 if bad else 200)

"""Pages of persona sets (unblinded: design labels shown) and their import."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import corpus_required, import_required
from core.staged_uploads import import_page
from core.uploads import read_upload
from corpus.personas import selectors, services
from corpus.personas.forms import PersonaImportForm


@corpus_required
def persona_set_list(request: HttpRequest) -> HttpResponse:
    return render(request, "corpus/personaset_list.html", {"sets": selectors.persona_set_list_for_user(request.user)})


@corpus_required
def persona_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    persona_set = selectors.persona_set_get(request.user, pk=pk)
    return render(request, "corpus/personaset_detail.html", {"persona_set": persona_set})


IMPORT_TARGET = "personas"  # the kept dry-run file of this page (core.staged_uploads)


@import_required
def persona_import(request: HttpRequest) -> HttpResponse:
    def run(data: dict) -> dict:
        (name, text), *_ = read_upload(data["file"].name, data["file"])
        result = services.personas_import(
            text=text, file=name, fmt=data["format"], key=data["key"] or None, name=data["name"] or None,
            valid_only=data["valid_only"], dry_run=data["dry_run"], created_by=request.user,
        )
        verb = "Checked" if data["dry_run"] else ("Imported" if result.created else "Already present:")
        target = f" as {result.persona_set}" if result.persona_set else ""
        linked = f" {result.linked} waiting conversation(s) linked to their persona." if result.linked else ""
        return {
            "result": f"{verb} {result.imported_rows} of {result.total_rows} persona(s){target}.{linked}",
            "skipped": result.skipped,
        }

    return import_page(
        request, target=IMPORT_TARGET, form_class=PersonaImportForm, template="corpus/import_form.html",
        context={"title": "Import personas"}, run=run,
    )

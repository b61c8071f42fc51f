"""Pages of persona sets (unblinded: design labels shown) and their import."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.permissions import corpus_required, import_required
from core.problems import ImportRejected
from core.staged_uploads import import_finished, import_input, import_now_offer
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
    incoming = import_input(request, target=IMPORT_TARGET)
    form = PersonaImportForm(incoming.data, incoming.files)
    context: dict = {"form": form, "title": "Import personas", "gone": incoming.gone}
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        dry_run = form.cleaned_data["dry_run"]
        try:
            (name, text), *_ = read_upload(upload.name, upload)
            result = services.personas_import(
                text=text,
                file=name,
                fmt=form.cleaned_data["format"],
                key=form.cleaned_data["key"] or None,
                name=form.cleaned_data["name"] or None,
                valid_only=form.cleaned_data["valid_only"],
                dry_run=dry_run,
                created_by=request.user,
            )
        except ImportRejected as exc:
            context["problems"] = exc.problems
        else:
            verb = "Checked" if dry_run else ("Imported" if result.created else "Already present:")
            target = f" as {result.persona_set}" if result.persona_set else ""
            context["result"] = f"{verb} {result.imported_rows} of {result.total_rows} persona(s){target}." + (
                f" {result.linked} waiting conversation(s) linked to their persona." if result.linked else ""
            )
            context["skipped"] = result.skipped
            if dry_run:
                context.update(import_now_offer(request, target=IMPORT_TARGET, form=form))
            else:
                import_finished(incoming)
    bad = context.get("problems") or incoming.gone
    return render(request, "corpus/import_form.html", context, status=400 if bad else 200)

"""Pages of the corpus (unblinded: researchers, coordinators, admins) and the importers."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from annotation.permissions import corpus_required, import_required
from annotation.problems import ImportRejected

from . import selectors, services
from .forms import ConversationImportForm, PersonaImportForm
from .models import Conversation
from .uploads import read_upload


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _filtered(request: HttpRequest):  # type: ignore[no-untyped-def]
    flagged = request.GET.get("flagged")
    return selectors.conversation_list_for_user(
        request.user,
        persona_id=_int_or_none(request.GET.get("persona")),
        target_id=_int_or_none(request.GET.get("target")),
        source=request.GET.get("source") or None,
        flagged={"1": True, "0": False}.get(flagged or ""),
    )


@corpus_required
def conversation_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(_filtered(request), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "simulation/conversation_list.html",
        {
            "page": page,
            "targets": selectors.target_list_for_user(request.user),
            "query": request.GET.urlencode(),
            "sources": Conversation.Source.choices,
        },
    )


@corpus_required
def conversation_detail(request: HttpRequest, code: str) -> HttpResponse:
    conversation = selectors.conversation_get_for_corpus(request.user, code=code)
    return render(request, "simulation/conversation_detail.html", {"conversation": conversation})


@corpus_required
def conversation_export(request: HttpRequest, fmt: str) -> StreamingHttpResponse:
    qs = _filtered(request)
    if fmt == "jsonl":
        response = StreamingHttpResponse(selectors.conversations_export_jsonl(qs), content_type="application/x-ndjson")
    else:
        response = StreamingHttpResponse(selectors.conversations_export_csv(qs), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="conversations.{fmt}"'
    return response


@corpus_required
def persona_set_list(request: HttpRequest) -> HttpResponse:
    return render(request, "simulation/personaset_list.html", {"sets": selectors.persona_set_list_for_user(request.user)})


@corpus_required
def persona_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    persona_set = selectors.persona_set_get(request.user, pk=pk)
    return render(request, "simulation/personaset_detail.html", {"persona_set": persona_set})


@corpus_required
def target_list(request: HttpRequest) -> HttpResponse:
    return render(request, "simulation/target_list.html", {"targets": selectors.target_list_for_user(request.user)})


@import_required
def target_create(request: HttpRequest) -> HttpResponse:
    from django.contrib import messages
    from django.shortcuts import redirect

    from .forms import TargetForm
    from .targets import target_create as create

    form = TargetForm(request.POST or None)
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            target = create(**{k: v for k, v in form.cleaned_data.items() if v is not None})
        except services.SimulationError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Chatbot {target.code} added.")
            return redirect("simulation:target-list")
    return render(request, "simulation/target_form.html", {"form": form, "error": error}, status=400 if error else 200)


@import_required
def import_index(request: HttpRequest) -> HttpResponse:
    return render(request, "simulation/import_index.html")


@import_required
def conversation_import(request: HttpRequest) -> HttpResponse:
    form = ConversationImportForm(request.POST or None, request.FILES or None)
    context: dict = {"form": form, "title": "Import conversations"}
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            files = read_upload(upload.name, upload)
            result = services.conversations_import(
                files=files,
                fmt=form.cleaned_data["format"],
                created_by=request.user,
                dry_run=form.cleaned_data["dry_run"],
            )
            context["result"] = result.summary()
            context["duplicates"] = result.duplicates
        except ImportRejected as exc:
            context["problems"] = exc.problems
    return render(request, "simulation/import_form.html", context, status=400 if context.get("problems") else 200)


@import_required
def persona_import(request: HttpRequest) -> HttpResponse:
    form = PersonaImportForm(request.POST or None, request.FILES or None)
    context: dict = {"form": form, "title": "Import personas"}
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            (name, text), *_ = read_upload(upload.name, upload)
            result = services.personas_import(
                text=text,
                file=name,
                fmt=form.cleaned_data["format"],
                key=form.cleaned_data["key"] or None,
                name=form.cleaned_data["name"] or None,
                valid_only=form.cleaned_data["valid_only"],
                dry_run=form.cleaned_data["dry_run"],
                created_by=request.user,
            )
            verb = "Checked" if form.cleaned_data["dry_run"] else ("Imported" if result.created else "Already present:")
            target = f" as {result.persona_set}" if result.persona_set else ""
            context["result"] = f"{verb} {result.imported_rows} of {result.total_rows} persona(s){target}."
            context["skipped"] = result.skipped
        except ImportRejected as exc:
            context["problems"] = exc.problems
    return render(request, "simulation/import_form.html", context, status=400 if context.get("problems") else 200)

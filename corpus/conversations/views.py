"""Pages of conversations (unblinded: researchers, coordinators, admins): list, detail, export, import."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.permissions import corpus_required, import_required
from core.roles import Role, has_any_role
from core.staged_uploads import import_page
from core.tables import Column, TableQuery
from core.uploads import read_upload
from corpus.conversations import selectors, services
from corpus.conversations.content_screen import screen_transcript
from corpus.conversations.forms import ConversationImportForm
from corpus.models import Conversation
from corpus.personas.linking import conversations_link_personas, waiting_persona_names
from corpus.targets.selectors import target_list_for_user


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


COLUMNS = [Column("code", "Code"), Column("messages", "Messages", numeric=True), Column("created", "Added")]


def _table(request: HttpRequest) -> TableQuery:
    return TableQuery.from_request(request, columns=COLUMNS, extra=("target", "source", "flagged", "persona"))


def _filtered(request: HttpRequest):  # type: ignore[no-untyped-def]
    flagged = request.GET.get("flagged")
    table = _table(request)
    return selectors.conversation_list_for_user(
        request.user,
        persona_id=_int_or_none(request.GET.get("persona")),
        target_id=_int_or_none(request.GET.get("target")),
        source=request.GET.get("source") or None,
        flagged={"1": True, "0": False}.get(flagged or ""),
        search=table.q,
        order=("-" if table.desc else "") + (table.sort or "id"),
    )


@corpus_required
def conversation_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(_filtered(request), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "corpus/conversation_list.html",
        {
            "table": _table(request),
            "page": page,
            "targets": target_list_for_user(request.user),
            "query": request.GET.urlencode(),
            "sources": Conversation.Source.choices,
            "waiting_personas": waiting_persona_names(),
            "flagged_count": selectors.conversation_list_for_user(request.user, flagged=True).count(),
        },
    )


def _may_mark(user: object) -> bool:
    return has_any_role(user, {Role.COORDINATOR, Role.ADMIN})  # type: ignore[arg-type]


@import_required
@require_POST
def conversation_link_personas(request: HttpRequest) -> HttpResponse:
    """Link waiting conversations to the personas their sources name (reports how many)."""
    linked = conversations_link_personas()
    messages.success(request, f"Linked {linked} conversation(s) to their persona.")
    return redirect("corpus:conversation-list")


@corpus_required
def conversation_detail(request: HttpRequest, code: str) -> HttpResponse:
    conversation = selectors.conversation_get_for_corpus(request.user, code=code)
    screen = screen_transcript(m.content for m in conversation.messages.all())
    return render(
        request,
        "corpus/conversation_detail.html",
        {"conversation": conversation, "screen": screen, "may_mark": _may_mark(request.user)},
    )


@corpus_required
@require_POST
def conversation_content_warning(request: HttpRequest, code: str) -> HttpResponse:
    """Let a coordinator mark (or unmark) a conversation as hard content for raters."""
    if not _may_mark(request.user):
        raise Http404("not found")
    conversation = selectors.conversation_get_for_corpus(request.user, code=code)
    marked = request.POST.get("marked") == "1"
    services.conversation_content_warning_mark(
        conversation_id=conversation.pk, marked=marked, actor=request.user, reason=request.POST.get("reason", "")
    )
    messages.success(request, f"{code}: content warning {'marked' if marked else 'mark removed'}.")
    return redirect("corpus:conversation-detail", code=code)


@corpus_required
def conversation_export(request: HttpRequest, fmt: str) -> StreamingHttpResponse:
    qs = _filtered(request)
    if fmt == "jsonl":
        response = StreamingHttpResponse(selectors.conversations_export_jsonl(qs), content_type="application/x-ndjson")
    else:
        response = StreamingHttpResponse(selectors.conversations_export_csv(qs), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="conversations.{fmt}"'
    return response


IMPORT_TARGET = "conversations"  # the kept dry-run file of this page (core.staged_uploads)


@import_required
def conversation_import(request: HttpRequest) -> HttpResponse:
    def run(data: dict) -> dict:
        result = services.conversations_import(
            files=read_upload(data["file"].name, data["file"]), fmt=data["format"], created_by=request.user,
            dry_run=data["dry_run"],
        )
        summary = result.summary()
        return {"result": summary[:1].upper() + summary[1:] + ".", "duplicates": result.duplicates}

    return import_page(
        request, target=IMPORT_TARGET, form_class=ConversationImportForm, template="corpus/import_form.html",
        context={"title": "Import conversations"}, run=run,
    )

"""Pages of the chatbots under test: list and add (credentials only by environment variable name)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from core.permissions import corpus_required, import_required
from corpus.errors import CorpusError
from corpus.targets import selectors, services
from corpus.targets.forms import HTTP_FIELDS, TargetForm


@corpus_required
def target_list(request: HttpRequest) -> HttpResponse:
    return render(request, "corpus/target_list.html", {"targets": selectors.target_list_for_user(request.user)})


@import_required
def target_create(request: HttpRequest) -> HttpResponse:
    form = TargetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if data["kind"] != "http":
            # Fields of HTTP chatbots only: hidden on the page for other kinds, never stored for them.
            data = {k: v for k, v in data.items() if k not in HTTP_FIELDS}
        try:
            target = services.target_create(**{k: v for k, v in data.items() if v is not None}, actor=request.user)
        except CorpusError as exc:
            for field, problems in exc.fields.items():
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
            if not exc.fields:
                form.add_error(None, str(exc))
        else:
            messages.success(request, f"Chatbot {target.code} added.")
            return redirect("corpus:target-list")
    return render(request, "corpus/target_form.html", {"form": form}, status=400 if form.errors else 200)

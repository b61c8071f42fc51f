"""Drill-down lists, the review page and the failure-modes page (report readers of the study)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.models import Study
from annotation.studies.selectors import user_manages_study
from annotation.studies.services import study_event
from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role
from corpus.models import Conversation
from judging.models import JudgeRun
from judging.selectors import can_manage_judging
from reports import selectors
from reports.errors import ReportsError
from reports.models import FailureCategory
from reports.review import codes as coding
from reports.review.conversation import conversation_review, rater_letters
from reports.review.instances import InstanceList, study_instances
from reports.review.query import ListQuery, QueryError
from reports.review.scope import review_scope

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
PER_PAGE = 100


def _query(request: HttpRequest) -> ListQuery:
    try:
        return ListQuery.parse(request.GET)
    except QueryError as exc:
        raise Http404(str(exc)) from None


def _run(study: Study, run_id: int | None) -> JudgeRun | None:
    if run_id is None:
        return None
    run = selectors.judge_runs_for_study(study).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such judge run for this study")
    return run


def describe(query: ListQuery, found: InstanceList) -> list[str]:
    """Return the list's filters in words, in the order a reader asks them."""
    words: list[str] = []
    if query.run is not None:
        words.append(f"judge run #{query.run}")
    if query.group is not None and query.group < len(found.groups):
        keys = found.groups[query.group]
        words.append(f"items {', '.join(keys[:4])}{'…' if len(keys) > 4 else ''}")
    if query.item:
        spec = found.items.get(query.item)
        words.append(f"item {spec.number + '. ' if spec and spec.number else ''}{spec.text if spec else query.item}")
    if query.human:
        words.append(f"human consensus “{query.human}”")
    if query.judge and query.label:
        words.append(f"{query.judge} said “{query.label}”")
    elif query.judge and query.compared:
        words.append(f"{query.judge} and the consensus both labelled")
    elif query.judge and not query.alt and not query.disagree:
        words.append(f"judge {query.judge}")
    if query.alt:
        words.append(f"alt-test instances of {query.judge} with {query.rater} left out (the judge, {query.rater} and another rater labelled)")
    elif query.rater:
        words.append(f"rated by {query.rater}")
    if query.min_raters is not None:
        words.append(f"labelled by at least {query.min_raters} rater{'s' if query.min_raters != 1 else ''}")
    if query.disagree == "judge":
        words.append(f"{query.judge or 'a judge'} disagrees with the consensus")
    if query.disagree == "raters":
        words.append("the raters disagree")
    if query.provenance:
        words.append(f"consensus {query.provenance.replace('_', ' ')}")
    if query.scored:
        words.append("scored items")
    if query.with_consensus:
        words.append("with a consensus computed")
    if query.calibration:
        words.append("calibration conversations included")
    if query.chatbot:
        words.append(f"chatbot {query.chatbot}" + (f" or {query.versus}" if query.versus else ""))
    if query.missing == "judge":
        words.append(f"a consensus that {query.judge} did not label")
    if query.missing == "consensus":
        words.append(f"labelled by {query.judge} without a human consensus")
    if query.persona:
        words.append(f"persona {query.persona}")
    if query.flag:
        words.append("flagged by a rater" + (" (open flags)" if query.flag == "open" else ""))
    if query.code is not None:
        category = FailureCategory.objects.filter(pk=query.code, study=found.study).first()
        words.append(f"failure mode “{category.name if category else query.code}”")
    if query.coded:
        words.append(f"coded “{query.coded}”")
    if query.about:
        words.append(f"codes about {query.about}")
    if query.na:
        words.append("N/A answers " + ("a category of their own" if query.na == "category" else "excluded"))
    return words


def _rater_summary(raters: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for label in raters.values():
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{label} ×{n}" for label, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "—"


@roles_required(*REPORT_ROLES)
def instance_list(request: HttpRequest, pk: int) -> HttpResponse:
    """The conversations and items behind a figure: filters in the URL, size equal to the figure's count."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    query = _query(request)
    _run(study, query.run)
    found = study_instances(study, query)
    page = Paginator(found.instances, PER_PAGE).get_page(request.GET.get("page"))
    rows = [
        {"i": i, "raters": _rater_summary(i.raters), "judges": [i.judges.get(j) for j in found.judges],
         "href": f"{reverse('reports:review', args=[study.pk, i.code])}?{query.querystring()}#item-{i.item}"}
        for i in page
    ]
    context = {
        "study": study, "query": query, "found": found, "page": page, "rows": rows, "words": describe(query, found),
        "n_conversations": len(found.conversation_codes),
        "csv": f"{reverse('reports:instances-csv', args=[study.pk])}?{query.querystring()}",
        "letters": rater_letters(study),
    }
    return render(request, "reports/instances.html", context, status=400 if found.error else 200)


@roles_required(*REPORT_ROLES)
def instance_list_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    query = _query(request)
    _run(study, query.run)
    found = study_instances(study, query)
    if found.error:
        raise Http404(found.error)
    letters = rater_letters(study)
    header = ["conversation", "chatbot", "persona", "item", "consensus", "consensus_provenance",
              *[f"judge:{j}" for j in found.judges], "raters", "failure_codes"]
    rows = [
        [i.code, i.chatbot, i.persona, i.item, i.consensus or "", i.provenance, *[i.judges.get(j) or "" for j in found.judges],
         "; ".join(f"{letters.get(r, r)}={label}" for r, label in i.raters.items()), "; ".join(i.codes)]
        for i in found.instances
    ]
    return csv_response(f"study-{study.pk}-instances.csv", header, rows)


def _neighbours(found: InstanceList, code: str) -> tuple[str | None, str | None, int, int]:
    codes = found.conversation_codes
    if code not in codes:
        return None, None, 0, len(codes)
    at = codes.index(code)
    return (codes[at - 1] if at else None), (codes[at + 1] if at + 1 < len(codes) else None), at + 1, len(codes)


@roles_required(*REPORT_ROLES)
def review(request: HttpRequest, pk: int, code: str) -> HttpResponse:
    """One conversation: transcript, every clinician, the consensus, every judge, failure codes."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    query = _query(request)
    link = study.study_conversations.filter(conversation__code=code).select_related("conversation").first()
    if link is None:
        raise Http404("no such conversation in this study")
    conversation = link.conversation
    scope = review_scope(study, query.set)
    if conversation.pk in scope.locked_ids:
        return render(request, "reports/review_locked.html", {"study": study, "code": code, "scope": scope}, status=403)
    runs = list(selectors.judge_runs_for_study(study).filter(results__conversation=conversation).distinct()[:20])
    run = _run(study, query.run) if query.run is not None else (runs[0] if runs else None)
    manages = user_manages_study(request.user, study)
    show_names = manages and request.GET.get("names") == "1"
    if show_names:
        study_event(study=study, actor=request.user, action="review_names_shown", conversation=code,
                    reason="a coordinator chose to see the raters' names on the review page")
    found = study_instances(study, query if query.run is not None or run is None else _with_run(query, run.pk))
    items = found.items
    data = conversation_review(study, conversation, run=run, items=items, show_names=show_names)
    previous, following, position, total = _neighbours(found, code)
    qs = query.querystring()
    context = {
        "study": study, "data": data, "run": run, "runs": runs, "query": query, "qs": qs, "manages": manages,
        "show_names": show_names, "position": position, "total": total, "words": describe(query, found),
        "previous": f"{reverse('reports:review', args=[study.pk, previous])}?{qs}" if previous else None,
        "following": f"{reverse('reports:review', args=[study.pk, following])}?{qs}" if following else None,
        "list_url": f"{reverse('reports:instances', args=[study.pk])}?{qs}",
        "codebook": [e.text for e in coding.codebook(study)],
        "categories": coding.categories_of(study),
        "scope": scope,
        "can_revise": can_manage_judging(request.user),
        "citations": json.dumps({str(k): v for k, v in data.turn_citations.items()}),
    }
    return render(request, "reports/review.html", context)


def _with_run(query: ListQuery, run_id: int) -> ListQuery:
    from dataclasses import replace

    return replace(query, run=run_id)


@require_POST
@roles_required(*REPORT_ROLES)
def code_add(request: HttpRequest, pk: int, code: str) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    link = study.study_conversations.filter(conversation__code=code).select_related("conversation").first()
    if link is None:
        raise Http404("no such conversation in this study")
    if link.conversation_id in review_scope(study, "").locked_ids:
        raise Http404("this conversation is in the locked test set")
    item = (request.POST.get("item") or "").strip()
    judge = (request.POST.get("judge") or "").strip()[:120]
    run_id = request.POST.get("run") or ""
    run = _run(study, int(run_id)) if run_id.isdigit() else None
    back = request.POST.get("next") or reverse("reports:review", args=[study.pk, code])
    if not back.startswith("/"):
        back = reverse("reports:review", args=[study.pk, code])
    if item not in dict.fromkeys(study_instances(study, ListQuery(run=run.pk if run else None)).items):
        messages.error(request, "Choose an item of the study to code.")
        return HttpResponseRedirect(back)
    try:
        coding.failure_code_add(study=study, conversation=link.conversation, item_key=item, text=request.POST.get("text", ""),
                                judge=judge, run=run, actor=request.user)
    except ReportsError as exc:
        messages.error(request, f"Code not saved: {exc}.")
    else:
        messages.success(request, "Code saved.")
    return HttpResponseRedirect(f"{back}#item-{item}")


@require_POST
@roles_required(*REPORT_ROLES)
def code_remove(request: HttpRequest, pk: int, code_id: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    back = request.POST.get("next") or reverse("reports:failure-modes", args=[study.pk])
    if not back.startswith("/"):
        back = reverse("reports:failure-modes", args=[study.pk])
    try:
        coding.failure_code_remove(study=study, code_id=code_id, actor=request.user)
    except ReportsError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Code removed.")
    return HttpResponseRedirect(back)


def _category(study: Study, raw: str | None) -> FailureCategory | None:
    if not raw or not str(raw).isdigit():
        return None
    return FailureCategory.objects.filter(study=study, pk=int(raw)).first()


@roles_required(*REPORT_ROLES)
def failure_modes(request: HttpRequest, pk: int) -> HttpResponse:
    """The codebook, the categories (rename, merge) and the counts per judge, item or chatbot."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    if request.method == "POST":
        return _failure_modes_post(request, study)
    by = request.GET.get("by") if request.GET.get("by") in ("judge", "item", "chatbot") else "judge"
    counts = coding.category_counts(study, by)
    base = reverse("reports:instances", args=[study.pk])
    for row in counts["rows"]:
        row["cells"] = []
        for column in counts["columns"]:
            params: dict[str, Any] = {"code": row["category"]}
            if by == "judge":
                params["about"] = column
            elif by == "item":
                params["item"] = column
            elif by == "chatbot":
                params["chatbot"] = column
            n = row["counts"][column]
            row["cells"].append({"n": n, "href": f"{base}?{ListQuery(**params).querystring()}" if n else None})
        row["href"] = f"{base}?{ListQuery(code=row['category']).querystring()}"
    chart = json.dumps({"columns": counts["columns"], "rows": [{"name": r["name"], "counts": [r["counts"][c] for c in counts["columns"]],
                                                               "category": r["category"]} for r in counts["rows"]],
                        "base": base, "by": by})
    context = {
        "study": study, "codebook": coding.codebook(study), "categories": coding.categories_of(study), "counts": counts,
        "by": by, "facts": coding.coding_facts(study), "chart": chart if counts["rows"] else None,
        "methods_text": coding.coding_methods_text(coding.coding_facts(study)),
    }
    return render(request, "reports/failure_modes.html", context)


def _failure_modes_post(request: HttpRequest, study: Study) -> HttpResponse:
    action = request.POST.get("action")
    back = reverse("reports:failure-modes", args=[study.pk])
    try:
        if action == "create":
            category = coding.failure_category_create(study=study, name=request.POST.get("name", ""),
                                                      description=request.POST.get("description", ""), actor=request.user)
            texts = request.POST.getlist("codes")
            if texts:
                coding.failure_codes_categorise(study=study, texts=texts, category=category, actor=request.user)
            messages.success(request, f"Category “{category.name}” created.")
        elif action == "categorise":
            texts = request.POST.getlist("codes")
            target = request.POST.get("category") or ""
            category = _category(study, target)
            if target and category is None:
                raise ReportsError("choose a category of this study")
            n = coding.failure_codes_categorise(study=study, texts=texts, category=category, actor=request.user)
            messages.success(request, f"{n} code{'s' if n != 1 else ''} moved {'to “' + category.name + '”' if category else 'out of their category'}.")
        elif action == "rename":
            category = _category(study, request.POST.get("category"))
            if category is None:
                raise ReportsError("choose a category of this study")
            coding.failure_category_rename(study=study, category=category, name=request.POST.get("name", ""), actor=request.user)
            messages.success(request, "Category renamed.")
        elif action == "merge":
            source, target = _category(study, request.POST.get("source")), _category(study, request.POST.get("target"))
            if source is None or target is None:
                raise ReportsError("choose two categories of this study")
            coding.failure_category_merge(study=study, source=source, target=target, actor=request.user)
            messages.success(request, f"“{source.name}” merged into “{target.name}”.")
        else:
            raise ReportsError("unknown action")
    except ReportsError as exc:
        messages.error(request, f"Nothing changed: {exc}.")
    return HttpResponseRedirect(back)


@roles_required(*REPORT_ROLES)
def failure_codes_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    locked = review_scope(study, "").locked_ids
    codes = set(Conversation.objects.filter(pk__in=locked).values_list("code", flat=True)) if locked else set()
    rows = [r for r in coding.code_rows(study) if r[0] not in codes]
    return csv_response(f"study-{study.pk}-failure-codes.csv", coding.CODE_COLUMNS, rows)


@roles_required(*REPORT_ROLES)
def failure_counts_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    by = request.GET.get("by") if request.GET.get("by") in ("judge", "item", "chatbot") else "judge"
    counts = coding.category_counts(study, by)
    return csv_response(f"study-{study.pk}-failure-modes-by-{by}.csv", ["category", *counts["columns"], "total"],
                        [[r["name"], *[r["counts"][c] for c in counts["columns"]], r["total"]] for r in counts["rows"]])

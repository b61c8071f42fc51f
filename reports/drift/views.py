"""The judge drift page (two versions side by side) and its CSV tables."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from core.csvstream import stream_csv
from core.permissions import roles_required
from core.roles import Role
from core.tables import Column, TableQuery, matches
from judging.errors import JudgingError
from reports.drift import selectors, services
from reports.drift.headline import drift_headline

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
PARAMS = ("a_run", "a_source", "b_run", "b_source", "study", "item")
FLIP_COLUMNS = [
    Column("conversation", "Conversation", lambda f: f["conversation"]),
    Column("chatbot", "Chatbot", lambda f: f["chatbot"]),
    Column("item", "Item", lambda f: f["item"]),
]


def _load(request: HttpRequest) -> dict[str, Any]:
    """Return the versions, the reference study and the drift payload asked for (or an error)."""
    get = request.GET
    out: dict[str, Any] = {"a": None, "b": None, "study": None, "data": None, "error": ""}
    try:
        out["a"] = selectors.version_get(request.user, get.get("a_run"), get.get("a_source"))
        out["b"] = selectors.version_get(request.user, get.get("b_run"), get.get("b_source"))
    except JudgingError as exc:
        out["error"] = str(exc)
        return out
    if out["a"] is None or out["b"] is None:
        return out
    out["study"] = selectors.reference_study(request.user, get.get("study"), out["a"].run, out["b"].run)
    out["data"] = services.judge_drift(
        run_a=out["a"].run, source_a=out["a"].source, run_b=out["b"].run, source_b=out["b"].source, study=out["study"]
    )
    return out


@roles_required(*REPORT_ROLES)
def drift(request: HttpRequest) -> HttpResponse:
    loaded = _load(request)
    data = loaded["data"] or {}
    items = data.get("items", [])
    table = TableQuery.from_request(
        request, filters=[("all", "every item"), *[(str(i["item"]), str(i["title"])[:60]) for i in items]],
        columns=FLIP_COLUMNS, default_sort="conversation", extra=PARAMS,
    )
    flips = [f for f in data.get("flips", []) if table.show in ("all", "") or f["item"] == table.show]
    if table.q:
        titles = data.get("titles", {})
        flips = [f for f in flips if matches(table.q, f["conversation"], f["chatbot"], titles.get(f["item"], ""))]
    page = table.paginate(table.sorted(flips), per_page=25)
    if page.object_list:
        a, b = loaded["a"], loaded["b"]
        page.object_list = services.with_rationales(list(page.object_list), a.run, a.source, b.run, b.source)
    context = {
        **loaded,
        "runs": selectors.runs_for_picker(request.user),
        "studies": selectors.studies_for_picker(request.user),
        "study_param": request.GET.get("study", ""),
        "table": table,
        "page": page,
        "query": "&".join(f"{k}={request.GET[k]}" for k in PARAMS if request.GET.get(k)),
        "headline": drift_headline(loaded["data"], request.GET.get("item")),
    }
    return render(request, "reports/drift.html", context, status=400 if loaded["error"] else 200)


@roles_required(*REPORT_ROLES)
def drift_csv(request: HttpRequest, table: str) -> HttpResponse:
    if table not in ("items", "flips"):
        raise Http404("no such table")
    loaded = _load(request)
    if loaded["error"]:
        return HttpResponse(loaded["error"], status=400, content_type="text/plain; charset=utf-8")
    if loaded["data"] is None:
        raise Http404("give a_run and b_run")
    a, b = loaded["a"], loaded["b"]
    if table == "items":
        header, rows = services.ITEM_HEADER, services.item_csv_rows(loaded["data"])
    else:
        flips = services.with_rationales(loaded["data"].get("flips", []), a.run, a.source, b.run, b.source)
        header, rows = services.FLIP_HEADER, services.flip_csv_rows(flips)
    response = HttpResponse("".join(stream_csv(header, rows)), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="drift-run-{a.run.pk}-vs-run-{b.run.pk}-{table}.csv"'
    return response

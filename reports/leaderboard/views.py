"""The leaderboard pages (a study's, a judge run's) and their CSV tables (researchers, coordinators, admins)."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from core.csvstream import stream_csv
from core.permissions import roles_required
from core.roles import Role
from judging.errors import JudgingError
from judging.sources import run_label_sources
from reports import selectors as report_reads
from reports.judge_assisted import selectors as assisted_reads
from reports.leaderboard import exports, plots, services

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
# Column headings, as the judge-assisted page has them (the legend and the notes give the full names).
HEADINGS = {"judge_only": "Judges only", "human_only": "Humans only", "ppi": "Judge-assisted (PPI)", "ppi_tuned": "PPI++ (λ)"}
TABLES = {"scores": (exports.SCORES_HEADER, exports.scores_csv_rows),
          "pairs": (exports.PAIRS_HEADER, exports.pairs_csv_rows)}


def _run_id(request: HttpRequest) -> int | None:
    value = request.GET.get("run", "")
    return int(value) if value.isdigit() else None


def _study_data(request: HttpRequest, pk: int, *, wait: bool) -> tuple[Any, Any, dict[str, Any] | None, str]:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    run = assisted_reads.judge_run_for_study(study, _run_id(request))
    try:
        data = services.study_leaderboard(study=study, run=run, source_key=request.GET.get("source") or None, wait=wait)
    except JudgingError as exc:
        return study, run, None, str(exc)
    return study, run, data, ""


def _run_data(request: HttpRequest, pk: int, *, wait: bool) -> tuple[Any, dict[str, Any] | None, str]:
    run = report_reads.run_get_for_reports(request.user, pk=pk)
    try:
        data = services.run_leaderboard(run=run, source_key=request.GET.get("source") or None, wait=wait)
    except JudgingError as exc:
        return run, None, str(exc)
    return run, data, ""


def _choice(value: str, allowed: list[str], default: str) -> str:
    return value if value in allowed else default


def board(data: dict[str, Any], stratum: str, compare: str) -> dict[str, Any]:
    """Return what the page shows for one stratum: the scores side by side, one method's pairs, the charts."""
    tables = {(t["stratum"], t["method"]): t for t in data.get("tables", [])}
    methods = [m for m in data.get("method_keys", []) if (stratum, m) in tables]
    labels = data.get("method_labels", {})
    by_method = {m: {s["chatbot"]: s for s in tables[(stratum, m)]["scores"]} for m in methods}
    headline = tables.get((stratum, data.get("headline")))
    order = [s["chatbot"] for s in headline["scores"]] if headline else []
    order += [c for c in data.get("chatbots", []) if c not in order and any(c in by_method[m] for m in methods)]
    rows = []
    for c in order:
        judged = by_method.get("judge_only", {}).get(c)
        rated = by_method.get("human_only", {}).get(c)
        first = next((by_method[m][c] for m in methods if c in by_method[m]), {})
        rows.append({
            "chatbot": c,
            "cells": [{"method": m, "est": by_method[m].get(c), "strong": m == data.get("headline")} for m in methods],
            "n_judged": judged["n_conversations"] if judged else None,
            "n_rated": rated["n_rated"] if rated else None,
            "n_clusters": first.get("n_clusters"),
        })
    pairs_table = dict(tables.get((stratum, compare)) or {"pairs": [], "family_size": 0, "error": None})
    pairs_table["pairs"] = [{**p, "short_verdict": short_verdict(p), "short_a": plots.short(p["a"]),
                             "short_b": plots.short(p["b"])} for p in pairs_table["pairs"]]
    scale = data["score"]["scale"]
    scores_chart = plots.scores_plot(order, by_method, labels, scale)
    pairs_chart = plots.pairs_plot(pairs_table["pairs"], scale)
    return {
        "methods": [(m, HEADINGS[m]) for m in methods],
        "rows": rows,
        "errors": [(labels[m], tables[(stratum, m)]["error"]) for m in methods if tables[(stratum, m)]["error"]],
        "pairs": pairs_table,
        "scores_plot": json.dumps(scores_chart) if scores_chart else None,
        "scores_missing": (scores_chart or {}).get("not_drawn", []),
        "pairs_plot": json.dumps(pairs_chart) if pairs_chart and pairs_chart["traces"] else None,
        "pairs_missing": (pairs_chart or {}).get("not_drawn", []),
        "scores_height": 120 + 70 * len(rows),
        "pairs_height": 110 + 34 * len(pairs_table["pairs"]),
    }


def short_verdict(pair: dict[str, Any]) -> str:
    """Return the decision with the chatbots' codes for their full names (codes are unique; the scores table has both)."""
    return pair["verdict"].replace(pair["a"], plots.short(pair["a"])).replace(pair["b"], plots.short(pair["b"]))


def by_risk(data: dict[str, Any]) -> dict[str, Any] | None:
    """Return the headline method's estimate per chatbot and persona risk level (None with one stratum)."""
    strata = data.get("strata", [])
    if len(strata) < 2:
        return None
    tables = {(t["stratum"], t["method"]): t for t in data.get("tables", [])}
    method = data.get("headline")
    cells = {s["key"]: {x["chatbot"]: x for x in (tables.get((s["key"], method)) or {"scores": []})["scores"]} for s in strata}
    return {"strata": strata, "rows": [{"chatbot": c, "cells": [cells[s["key"]].get(c) for s in strata]}
                                       for c in data.get("chatbots", [])]}


def _context(request: HttpRequest, data: dict[str, Any] | None) -> dict[str, Any]:
    if not data or data.get("pending") or data.get("empty"):
        return {}
    strata = [s["key"] for s in data.get("strata", [])]
    stratum = _choice(request.GET.get("risk", ""), strata, "all")
    compare = _choice(request.GET.get("compare", ""), data.get("method_keys", []), data.get("headline", ""))
    grouped: dict[str, list[str]] = {}
    for info in data.get("method_info", {}).values():
        grouped.setdefault(info["interval"]["summary"], []).append(info["label"])
    return {"stratum": stratum, "compare": compare, "board": board(data, stratum, compare), "by_risk": by_risk(data),
            "interval_lines": [(", ".join(labels), summary) for summary, labels in grouped.items()],
            "stratum_label": next((s["label"] for s in data["strata"] if s["key"] == stratum), ""),
            "compare_label": data.get("method_labels", {}).get(compare, "")}


def _render(request: HttpRequest, context: dict[str, Any], data: dict[str, Any] | None, error: str) -> HttpResponse:
    status = 400 if error else 202 if data and data.get("pending") else 200
    context.update({"data": data, "error": error, "pending": data if data and data.get("pending") else None,
                    **_context(request, data)})
    return render(request, "reports/leaderboard.html", context, status=status)


@roles_required(*REPORT_ROLES)
def study_leaderboard(request: HttpRequest, pk: int) -> HttpResponse:
    study, run, data, error = _study_data(request, pk, wait=False)
    context = {
        "study": study, "run": run, "runs": list(report_reads.judge_runs_for_study(study)[:50]),
        "sources": run_label_sources(run) if run else [],
        "source": data["source"]["key"] if data and data.get("source") else "",
        "csv_url": reverse("reports:leaderboard-csv", args=[study.pk, "TABLE"]),
        "query": f"run={run.pk}&source={data['source']['key']}" if run and data and data.get("source") else "",
    }
    return _render(request, context, data, error)


@roles_required(*REPORT_ROLES)
def run_leaderboard(request: HttpRequest, pk: int) -> HttpResponse:
    run, data, error = _run_data(request, pk, wait=False)
    context = {
        "study": None, "run": run, "runs": [], "sources": run_label_sources(run),
        "source": data["source"]["key"] if data and data.get("source") else "",
        "csv_url": reverse("reports:run-leaderboard-csv", args=[run.pk, "TABLE"]),
        "query": f"source={data['source']['key']}" if data and data.get("source") else "",
    }
    return _render(request, context, data, error)


def _csv(data: dict[str, Any] | None, error: str, table: str, filename: str) -> HttpResponse:
    if table not in TABLES:
        raise Http404("no such table")
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    header, rows = TABLES[table]
    response = HttpResponse("".join(stream_csv(header, rows(data or {}))), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}-leaderboard-{table}.csv"'
    return response


@roles_required(*REPORT_ROLES)
def study_leaderboard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    study, run, data, error = _study_data(request, pk, wait=True)
    name = f"study-{study.pk}" + (f"-run-{run.pk}" if run else "")
    return _csv(data, error, table, name)


@roles_required(*REPORT_ROLES)
def run_leaderboard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    run, data, error = _run_data(request, pk, wait=True)
    return _csv(data, error, table, f"run-{run.pk}")

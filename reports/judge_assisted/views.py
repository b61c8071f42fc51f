"""The judge-assisted scorecard page and its CSV (researchers, coordinators, admins of the study)."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from core.csvstream import stream_csv
from core.permissions import roles_required
from core.roles import Role
from judging.errors import JudgingError
from judging.sources import run_label_sources
from reports import selectors as report_reads
from reports.judge_assisted import selectors, services
from reports.templatetags.score_format import BOUNDS

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
PLOT_ORDER = ("judge_only", "human_only", "ppi", "ppi_tuned")
PLOT_COLOURS = {"judge_only": "#8a8f98", "human_only": "#c26a00", "ppi": "#1f5fa8", "ppi_tuned": "#2a8a4a"}


def _run_id(request: HttpRequest) -> int | None:
    value = request.GET.get("run", "")
    return int(value) if value.isdigit() else None


def _load(request: HttpRequest, pk: int) -> tuple[Any, Any, dict[str, Any] | None, str]:
    study = report_reads.study_get_for_reports(request.user, pk=pk)
    run = selectors.judge_run_for_study(study, _run_id(request))
    if run is None:
        return study, None, None, ""
    try:
        data = services.judge_assisted_scorecard(study=study, run=run, source_key=request.GET.get("source") or None)
    except JudgingError as exc:
        return study, run, None, str(exc)
    return study, run, data, ""


def plot_data(data: dict[str, Any], score: str) -> dict[str, Any] | None:
    """Return plotly traces: per chatbot, each method's estimate with its interval, side by side."""
    rows = [r for r in data.get("rows", []) if r["score"] == score]
    if not rows:
        return None
    chatbots = [r["chatbot"] for r in rows]
    traces = []
    not_drawn = []
    for n, method in enumerate(PLOT_ORDER):
        xs, ys, minus, plus, text = [], [], [], [], []
        for i, row in enumerate(rows):
            est = row.get(method)
            if not est or est.get("estimate") is None or est.get("low") is None:
                # An interval that cannot be estimated is said in words, never drawn as a point.
                why = (est or {}).get("cannot_estimate") or row.get("error")
                if why:
                    not_drawn.append((row["chatbot"], why, data["method_labels"][method]))
                continue
            lowest, highest = BOUNDS[row["scale"]]  # the plot, like the table, stops at the score's bounds
            xs.append(est["estimate"])
            ys.append(i + (n - 1.5) * 0.18)
            minus.append(est["estimate"] - max(lowest, est["low"]))
            plus.append(min(highest, est["high"]) - est["estimate"])
            text.append(f"{data['method_labels'][method]}: {est['estimate']:.3f} [{est['low']:.3f}, {est['high']:.3f}]")
        traces.append({
            "type": "scatter", "mode": "markers", "name": data["method_labels"][method], "x": xs, "y": ys,
            "marker": {"color": PLOT_COLOURS[method], "size": 9, "symbol": ["circle", "square", "diamond", "triangle-up"][n]},
            "error_x": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "color": PLOT_COLOURS[method], "thickness": 2},
            "text": text, "hoverinfo": "text",
        })
    scale = rows[0]["scale"]
    grouped: dict[tuple[str, str], list[str]] = {}
    for chatbot, why, label in not_drawn:
        grouped.setdefault((chatbot, why), []).append(label)
    lines = [f"{chatbot}: {', '.join(labels)}. {why[0].upper()}{why[1:]}." for (chatbot, why), labels in grouped.items()]
    return {"traces": traces, "chatbots": chatbots, "scale": scale, "not_drawn": lines}


def chart_height(n_chatbots: int) -> int:
    """Return the plot's height in pixels: room for each chatbot's four estimates (the page's and the bundle's image)."""
    return 120 + 90 * n_chatbots


def cannot_lines(row: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Return, once per reason, which of a row's estimates cannot be estimated and why (the cells say it short)."""
    if row.get("warning") and not row.get("n_labeled"):
        return []  # the row's warning already says nobody rated these conversations
    grouped: dict[str, list[str]] = {}
    for method in PLOT_ORDER:
        why = (row.get(method) or {}).get("cannot_estimate")
        if why and not (method == "judge_only" and row.get("warning")):
            grouped.setdefault(why, []).append(labels.get(method, method))
    return [f"{', '.join(names)}: {why}." for why, names in grouped.items()]


@roles_required(*REPORT_ROLES)
def judge_assisted(request: HttpRequest, pk: int) -> HttpResponse:
    study, run, data, error = _load(request, pk)
    runs = list(report_reads.judge_runs_for_study(study)[:50])
    scores = (data or {}).get("scores") or []
    score = request.GET.get("score") or (scores[0]["key"] if scores else "")
    if scores and score not in {s["key"] for s in scores}:
        score = scores[0]["key"]
    rows = [
        {**r, "lam_label": f"(λ {r['lam_tuned']:.2f})" if r.get("lam_tuned") is not None else "",
         "cannot_lines": cannot_lines(r, (data or {}).get("method_labels", {}))}
        for r in (data or {}).get("rows", []) if r["score"] == score
    ]
    plot = plot_data(data, score) if data and rows else None
    context = {
        "study": study,
        "run": run,
        "runs": runs,
        "sources": run_label_sources(run) if run else [],
        "source": (data or {}).get("source", {}).get("key", request.GET.get("source", "")),
        "data": data,
        "error": error,
        "score": score,
        "score_label": next((s["label"] for s in scores if s["key"] == score), ""),
        "rows": rows,
        "plot": json.dumps(plot) if plot else None,
        "plot_missing": (plot or {}).get("not_drawn", []),
        "chart_height": chart_height(len(rows)),
    }
    return render(request, "reports/judge_assisted.html", context, status=400 if error else 200)


@roles_required(*REPORT_ROLES)
def judge_assisted_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study, run, data, error = _load(request, pk)
    if run is None:
        raise Http404("no judge run labelled this study's conversations")
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse("".join(stream_csv(services.CSV_HEADER, services.csv_rows(data or {}))), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-run-{run.pk}-judge-assisted.csv"'
    return response

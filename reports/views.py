"""Researchers' report pages. Every figure comes from reports.services (cached)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from annotation.consensus.selectors import consensus_summary
from annotation.models import Study
from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role
from reports import jobs, selectors, services
from reports.charts import scorecard_chart, scorecard_no_interval
from reports.reliability import reliability_csv as reliability_csv_rows
from reports.review.links import judges_links
from reports.verdict_views import verdict_context

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)


@roles_required(*REPORT_ROLES)
def report_index(request: HttpRequest) -> HttpResponse:
    context = {"studies": selectors.study_list_for_reports(request.user), "version_pairs": _version_pairs(request.user)}
    return render(request, "reports/index.html", context)


def _version_pairs(user: object, limit: int = 5) -> list[tuple[object, object]]:
    """Return (judge, runs of it and of its previous version) for the newest judges that have one to compare."""
    from judging.models import Judge
    from judging.sources import judge_previous_version_runs

    pairs = []
    for judge in Judge.objects.filter(cloned_from__isnull=False).order_by("-created_at")[:limit]:
        pair = judge_previous_version_runs(judge, user=user)  # only runs the reader may open
        if pair is not None and pair.run_previous is not None and pair.run_current is not None:
            pairs.append((judge, pair))
    return pairs


def _na(request: HttpRequest, study: Study) -> str:
    return selectors.reliability_na(study, request.GET.get("na"))


def _fitted_range(values: list[float]) -> tuple[float, float]:
    """Return a colour range fitted to the data (never flat), inside 0..1."""
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    pad = max(0.02, (high - low) * 0.1)
    return max(0.0, low - pad), min(1.0, high + pad)


def _pair_heatmap(data: dict) -> str | None:
    raters = data.get("raters") or {}
    names = raters.get("names") or []
    if len(names) < 2:
        return None
    matrix, shared = raters["pair_agreement"], raters.get("pair_shared") or {}
    z = [[matrix[a][b] if a != b else None for b in names] for a in names]
    present = [v for row in z for v in row if v is not None]
    if not present:
        return None
    zmin, zmax = _fitted_range(present)
    text = [[("" if v is None else f"{100 * v:.1f}%<br>n={shared.get(a, {}).get(b, 0)}") for v, b in zip(row, names, strict=True)]
            for row, a in zip(z, names, strict=True)]
    return json.dumps({"z": z, "x": names, "y": names, "zmin": zmin, "zmax": zmax, "text": text})


def _pending(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """Render the page's progress state while a worker computes the report."""
    return render(request, template, {**context, "pending": context["data"]}, status=202)


@roles_required(*REPORT_ROLES)
def reliability(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request, study), wait=False)
    context = {"study": study, "data": data, "na": _na(request, study), "completion": selectors.study_completion(study),
               "consensus": consensus_summary(study)}
    if data.get("pending"):
        return _pending(request, "reports/reliability.html", context)
    context["section_measured"] = any(item.get("n_units_pairable") for item in (data.get("section") or {}).values())
    rows = []
    info = data.get("items_info") or {}
    main = data.get("main") or {}
    for index, group in enumerate(main.get("groups", [])):
        rows.append({"pooled": True, "key": "Pooled", "text": f"{len(group['items'])} items with labels {' / '.join(group['labels'])}", "item": group["pooled"], "group": index})
        rows += [
            {"pooled": False, "key": key, "text": (info.get(key) or {}).get("text", ""), "number": (info.get(key) or {}).get("number", ""), "item": item}
            for key, item in main.get("items", {}).items() if item.get("group") == index
        ]
    na_declared = list(dict.fromkeys(x for v in info.values() for x in v.get("na_labels", [])))
    context.update({"rows": rows, "heatmap": _pair_heatmap(data), "na_declared": na_declared})
    return render(request, "reports/reliability.html", context)


@roles_required(*REPORT_ROLES)
def reliability_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request, study))
    header, rows = reliability_csv_rows(data)
    return _csv_response(f"study-{study.pk}-reliability-{_na(request, study)}.csv", header, rows)


@roles_required(*REPORT_ROLES)
def report_job(request: HttpRequest, job: int) -> JsonResponse:
    """Return the progress of a report being computed (the page polls it), for its readers only."""
    owner = jobs.job_owner(job)
    if owner is None:
        raise Http404("no such report job")
    if "study" in owner:
        selectors.study_get_for_reports(request.user, pk=int(owner["study"]))
    elif "run" in owner:
        selectors.run_get_for_reports(request.user, pk=int(owner["run"]))
    else:
        raise Http404("no such report job")
    return JsonResponse(jobs.job_state(job) or {})


@roles_required(*REPORT_ROLES)
def realism(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_realism(study=study, wait=False)
    if data.get("pending"):
        return _pending(request, "reports/realism.html", {"study": study, "data": data})
    heatmaps = {
        name: json.dumps({"z": block["counts"], "x": block["labels"], "y": block["labels"]})
        for name, block in data["design_vs_perceived"].items()
    }
    return render(request, "reports/realism.html", {"study": study, "data": data, "heatmaps": heatmaps})


@roles_required(*REPORT_ROLES)
def realism_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_realism(study=study)
    columns = sorted({k for row in data["realism"] for k in row} - {"user_model"})
    rows: list[list] = [[row["user_model"], *[row.get(c) for c in columns]] for row in data["realism"]]
    for name, block in data["design_vs_perceived"].items():
        rows.append([])
        rows.append([f"{name}: designed (rows) vs perceived (columns)", *block["labels"]])
        rows += [[label, *counts] for label, counts in zip(block["labels"], block["counts"], strict=True)]
    for name, block in (data.get("perceived") or {}).items():
        rows.append([])
        rows.append([f"perceived {name}: ratings (rows), count per level (columns)", "n", *block["labels"]])
        rows += [[row["group"], row["n"], *row["counts"]] for row in block["rows"]]
    return _csv_response(f"study-{study.pk}-realism.csv", ["user_model", *columns], rows)


@roles_required(*REPORT_ROLES)
def scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_scorecard(study=study, wait=False)
    csv_base = reverse("reports:scorecard", args=[study.pk])
    context = {"study": study, "data": data, "csv_base": csv_base, "completion": selectors.study_completion(study),
               "consensus": consensus_summary(study)}
    if data.get("pending"):
        return _pending(request, "reports/scorecard.html", context)
    return render(request, "reports/scorecard.html", {**context, "chart": _score_chart(data), "no_interval": scorecard_no_interval(data), "sections": _score_sections(data)})


@roles_required(*REPORT_ROLES)
def scorecard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    return _rows_csv(services.study_scorecard(study=study).get(table), f"study-{study.pk}-{table}.csv")


@roles_required(*REPORT_ROLES)
def judges(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    runs = list(selectors.judge_runs_for_study(study)[:50])
    run_id, na = _run_and_na(request)
    run_id = run_id or (runs[0].pk if runs else None)
    if run_id and run_id not in {r.pk for r in runs} and not selectors.judge_runs_for_study(study).filter(pk=run_id).exists():
        raise Http404("no such judge run for this study")
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na, wait=False) if run_id else None
    context = {"study": study, "runs": runs, "run_id": run_id, "na": na, "data": data, "completion": selectors.study_completion(study),
               "consensus": consensus_summary(study)}
    if data and data.get("pending"):
        return _pending(request, "reports/judges.html", context)
    data = judges_links(data, study_pk=study.pk, run_id=run_id, na=na) if run_id else data
    context["data"] = data
    matrices = {}
    for index, group in enumerate((data or {}).get("groups", [])):
        for comparison in group.get("vs_consensus", []):
            matrices[f"{index}:{comparison['rater']}"] = {"rater": comparison["rater"], **comparison["matrix"]}
    context["matrices"] = json.dumps(matrices)
    context.update(verdict_context(data, study))
    return render(request, "reports/judges.html", context)


@roles_required(*REPORT_ROLES)
def judges_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    run_id, na = _run_and_na(request)
    if not run_id or not selectors.judge_runs_for_study(study).filter(pk=run_id).exists():
        raise Http404("choose a judge run of this study")
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na)
    header = ["comparison", "label_set", "item", "item_text", "rater", "reference", "n", "percent_agreement", "cohen_kappa",
              "n_judge_missing", "n_no_consensus", "n_conversations", "agreement_ci_low", "agreement_ci_high", "kappa_ci_low",
              "kappa_ci_high", "in_human_range"]
    info = data.get("items_info") or {}
    rows = []
    for group in data.get("groups", []):
        labels = " / ".join(group["labels"])
        parts = [("vs_consensus", "pooled", group.get("vs_consensus", []))]
        parts += [("vs_consensus", item, comps) for item, comps in group.get("per_item", {}).items()]
        parts += [("judge_vs_rater", "pooled", group.get("vs_raters", [])), ("rater_vs_rater", "pooled", group.get("human_pairs", []))]
        for kind, item, comps in parts:
            for c in comps:
                agreement_ci, kappa_ci = c.get("agreement_ci") or {}, c.get("kappa_ci") or {}
                rows.append([kind, labels, item, (info.get(item) or {}).get("text", ""), c["rater"], c["reference"], c["n"],
                             c["percent_agreement"], c["cohen_kappa"], c.get("n_rater_missing"), c.get("n_reference_missing"),
                             c.get("n_conversations"), agreement_ci.get("low"), agreement_ci.get("high"), kappa_ci.get("low"),
                             kappa_ci.get("high"), c.get("in_human_range")])
    return _csv_response(f"study-{study.pk}-run-{run_id}-judges.csv", header, rows)


def _run_and_na(request: HttpRequest) -> tuple[int | None, str]:
    """Return the judge run asked for (None if absent or not a number) and the N/A policy."""
    value = request.GET.get("run")
    run_id = int(value) if value and value.isdigit() else None
    return run_id, "exclude" if request.GET.get("na") == "exclude" else "category"


@roles_required(*REPORT_ROLES)
def study_export(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    response = HttpResponse(services.study_export_zip(study=study), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-export.zip"'
    return response


@roles_required(*REPORT_ROLES)
def run_scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get_for_reports(request.user, pk=pk)
    data = services.run_scorecard(run=run, wait=False)
    context = {"study": None, "run": run, "data": data, "csv_base": reverse("reports:run-scorecard", args=[run.pk])}
    if data.get("pending"):
        return _pending(request, "reports/scorecard.html", context)
    references, method = _regression_choice(request)
    regression = None
    if data.get("kind") == "checklist" and data.get("scored_items"):
        regression = services.run_regression(run=run, references=references, method=method, wait=False)
    query = {**{f"ref_{k}": v for k, v in references.items()}}
    other = {key: urlencode({**query, "regression": key}) for key in services.REGRESSION_METHODS if key != method}
    return render(
        request,
        "reports/scorecard.html",
        {**context, "chart": _score_chart(data), "no_interval": scorecard_no_interval(data), "sections": _score_sections(data), "regression": regression,
         "regression_method": method, "regression_query": urlencode({**query, "regression": method}), "regression_other": other},
    )


def _regression_choice(request: HttpRequest) -> tuple[dict[str, str], str]:
    """Return the reference levels asked for (?ref_chatbot=...) and the regression method (?regression=...)."""
    references = {k: v for k in ("chatbot", "diagnosis", "severity", "sex") if (v := request.GET.get(f"ref_{k}"))}
    method = request.GET.get("regression", "mixed")
    return references, method if method in services.REGRESSION_METHODS else "mixed"


@roles_required(*REPORT_ROLES)
def run_scorecard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    run = selectors.run_get_for_reports(request.user, pk=pk)
    if table == "regression":
        references, method = _regression_choice(request)
        rows = services.run_regression(run=run, references=references, method=method).get("terms", [])
    else:
        rows = services.run_scorecard(run=run).get(table)
    return _rows_csv(rows, f"run-{run.pk}-{table}.csv")


def _rows_csv(rows: object, filename: str) -> HttpResponse:
    """Return a list of dicts as a CSV download (404 when the table does not exist)."""
    if not isinstance(rows, list):
        raise Http404("no such table")
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return _csv_response(filename, columns, [[row.get(c) for c in columns] for row in rows])


def _csv_response(filename: str, header: list, rows: list[list]) -> HttpResponse:
    return csv_response(filename, header, rows)  # type: ignore[return-value]


def _score_chart(data: dict) -> str | None:
    return scorecard_chart(data)


def _score_sections(data: dict) -> dict:
    """Return the distribution tables grouped per item for the page (category and 1-5 items)."""
    info = data.get("items_info") or {}
    items: dict[str, dict] = {}
    for row in data.get("by_chatbot_item") or []:
        entry = items.setdefault(row["item"], {"key": row["item"], "text": (info.get(row["item"]) or {}).get("text", ""), "labels": [], "rows": {}})
        entry["rows"][row["chatbot"]] = {**row, "shares": {}}
    for row in data.get("distribution") or []:
        entry = items.get(row["item"])
        if entry is None:
            continue
        if row["label"] not in entry["labels"]:
            entry["labels"].append(row["label"])
        entry["rows"][row["chatbot"]]["shares"][row["label"]] = (row["n"], row["share"])
    for entry in items.values():
        entry["rows"] = [
            {**r, "cells": [r["shares"].get(label, (0, None)) for label in entry["labels"]]} for r in entry["rows"].values()
        ]
    return {"distributions": list(items.values())}

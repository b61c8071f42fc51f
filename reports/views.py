"""Researchers' report pages. Every figure comes from reports.services (cached)."""

from __future__ import annotations

import json

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role
from reports import selectors, services

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
STAT_COLUMNS = [
    ("n_units", "Units"),
    ("n_raters", "Raters"),
    ("n_ratings", "Ratings"),
    ("percent_agreement", "Agreement"),
    ("fleiss_kappa", "Fleiss κ"),
    ("fleiss_p0", "P0"),
    ("fleiss_pe", "Pe"),
    ("cohen_kappa_mean", "Mean Cohen κ"),
    ("krippendorff_alpha", "Krippendorff α"),
    ("gwet_ac1", "Gwet AC1"),
]


@roles_required(*REPORT_ROLES)
def report_index(request: HttpRequest) -> HttpResponse:
    return render(request, "reports/index.html", {"studies": selectors.study_list_for_reports(request.user)})


def _na(request: HttpRequest) -> str:
    return "category" if request.GET.get("na") == "category" else "exclude"


@roles_required(*REPORT_ROLES)
def reliability(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request))
    heatmap = None
    if data.get("raters"):
        names = data["raters"]["names"]
        matrix = data["raters"]["pair_agreement"]
        heatmap = json.dumps(
            {
                "z": [[matrix[a][b] if a != b else None for b in names] for a in names],
                "x": names,
                "y": names,
            }
        )
    return render(
        request,
        "reports/reliability.html",
        {"study": study, "data": data, "columns": STAT_COLUMNS, "na": _na(request), "heatmap": heatmap},
    )


@roles_required(*REPORT_ROLES)
def reliability_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request))
    ci_names = ["percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1"]
    header = ["item", *[c for c, _ in STAT_COLUMNS], *[f"{c}_ci_low" for c in ci_names], *[f"{c}_ci_high" for c in ci_names], "base_rates", "flags", "notes"]
    main = data.get("main") or {}
    named = [("pooled", main.get("pooled"))] + list((main.get("items") or {}).items())
    rows = []
    for name, item in named:
        if not item:
            continue
        cis = [item.get(f"{c}_ci") or [None, None] for c in ci_names]
        rows.append(
            [name, *[item.get(c) for c, _ in STAT_COLUMNS], *[ci[0] for ci in cis], *[ci[1] for ci in cis],
             json.dumps(item.get("base_rates", {})), "; ".join(item.get("flags", [])), "; ".join(item.get("notes", []))]
        )
    return _csv_response(f"study-{study.pk}-reliability-{_na(request)}.csv", header, rows)


@roles_required(*REPORT_ROLES)
def realism(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_realism(study=study)
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
    return _csv_response(f"study-{study.pk}-realism.csv", ["user_model", *columns], rows)


@roles_required(*REPORT_ROLES)
def scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_scorecard(study=study)
    csv_base = reverse("reports:scorecard", args=[study.pk])
    return render(request, "reports/scorecard.html", {"study": study, "data": data, "chart": _score_chart(data), "csv_base": csv_base})


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
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na) if run_id else None
    matrices = {}
    if data and data.get("vs_consensus"):
        for comparison in data["vs_consensus"]["pooled"]:
            confusion = comparison["confusion"]
            matrices[comparison["rater"]] = {"z": confusion["counts"], "labels": confusion["labels"]}
    return render(
        request,
        "reports/judges.html",
        {"study": study, "runs": runs, "run_id": run_id, "na": na, "data": data, "matrices": json.dumps(matrices)},
    )


@roles_required(*REPORT_ROLES)
def judges_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    run_id, na = _run_and_na(request)
    if not run_id:
        raise Http404("choose a run")
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na)
    header = ["comparison", "item", "rater", "reference", "n", "percent_agreement", "cohen_kappa"]
    consensus = data.get("vs_consensus") or {}
    groups = [("vs_consensus", "pooled", consensus.get("pooled", []))]
    groups += [("vs_consensus", item, comps) for item, comps in consensus.get("items", {}).items()]
    groups += [("judge_vs_rater", "pooled", data.get("vs_raters", [])), ("rater_vs_rater", "pooled", data.get("human_pairs", []))]
    rows = [
        [kind, item, c["rater"], c["reference"], c["n"], c["percent_agreement"], c["cohen_kappa"]]
        for kind, item, comps in groups
        for c in comps
    ]
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
    data = services.run_scorecard(run=run)
    references = {k: v for k in ("chatbot", "diagnosis", "severity", "sex") if (v := request.GET.get(f"ref_{k}"))}
    regression = services.run_regression(run=run, references=references) if data.get("kind") == "checklist" else None
    return render(
        request,
        "reports/scorecard.html",
        {"study": None, "run": run, "data": data, "chart": _score_chart(data), "regression": regression,
         "csv_base": reverse("reports:run-scorecard", args=[run.pk])},
    )


@roles_required(*REPORT_ROLES)
def run_scorecard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    run = selectors.run_get_for_reports(request.user, pk=pk)
    if table == "regression":
        rows = services.run_regression(run=run).get("terms", [])
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
    if data.get("empty"):
        return None
    if data.get("kind") == "checklist":
        rows, x = data["by_chatbot_persona"], "persona"
        y = "mean_score"
    else:
        rows, x = data["by_chatbot_dimension"], "dimension"
        y = "score"
    chatbots = sorted({r["chatbot"] for r in rows})
    return json.dumps([
        {"type": "bar", "name": cb, "x": [r[x] for r in rows if r["chatbot"] == cb], "y": [r[y] for r in rows if r["chatbot"] == cb]}
        for cb in chatbots
    ])
